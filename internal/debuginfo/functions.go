package debuginfo

import (
	"cmp"
	"debug/dwarf"
	"errors"
	"fmt"
	"iter"
	"slices"
)

// Function is a subprogram the DWARF describes, by its entry address.
type Function struct {
	Name  string
	Entry uint64
	// Params are its formal parameters, in order; Locals its variables,
	// each with the address ranges of the block that declares it.
	Params []Var
	Locals []Var
	// Labels are the addresses of its labels, by name.
	Labels map[string]uint64
	// Return is the type of its return value, 0 for void.
	Return dwarf.Offset
	// frame is the location of its frame base (DW_AT_frame_base), unit
	// the compilation unit it is in; ranges an inlined copy's code,
	// inlinedInto the Entry of the function it was inlined into (0 for a
	// function).
	frame       location
	ranges      [][2]uint64
	inlinedInto uint64
	unit        *unit
	file        *File
}

// codeStart is where the code that runs fn starts: its Entry, or for an
// inlined copy the entry of the function it was inlined into. There, and
// only there, a register still holds the value the caller passed, which
// DW_OP_entry_value names: at a copy's own entry the host has run for a
// while (when 6.1's __x64_sys_openat starts its copy of do_sys_open, the
// register that held its pt_regs pointer, which the copy's dfd and mode
// are found through, holds dfd).
func (fn *Function) codeStart() uint64 { return cmp.Or(fn.inlinedInto, fn.Entry) }

// Var is a parameter or variable of a function.
type Var struct {
	Name string
	Type dwarf.Offset
	// Param: a formal parameter, not a local.
	Param bool
	loc   location
	// scope are the address ranges of the lexical block that declares a
	// local, nil for the function's outermost block; depth its nesting.
	scope [][2]uint64
	depth int
}

// VarsAt are the parameters and the locals in scope at pc, an inner
// block's hiding an outer's of the same name, parameters first.
func (fn *Function) VarsAt(pc uint64) []Var {
	vars := append([]Var{}, fn.Params...)
	seen := map[string]int{}
	for i, v := range vars {
		seen[v.Name] = i
	}
	for _, v := range fn.Locals {
		if !v.inScope(pc) {
			continue
		}
		if i, ok := seen[v.Name]; ok {
			if vars[i].depth < v.depth {
				vars[i] = v
			}
			continue
		}
		seen[v.Name] = len(vars)
		vars = append(vars, v)
	}
	return vars
}

func (v Var) inScope(pc uint64) bool {
	if v.scope == nil {
		return true
	}
	for _, r := range v.scope {
		if r[0] <= pc && pc < r[1] {
			return true
		}
	}
	return false
}

// location is a DW_AT_location or DW_AT_frame_base: an expression, or
// the offset of a location list; neither when the compiler left the
// value nowhere.
type location struct {
	expr   []byte
	list   int64
	isList bool
}

func (l location) present() bool { return l.expr != nil || l.isList }

// unit is what a compilation unit's entries need to be read: its base
// address for location lists, its DWARF version (where its lists are:
// .debug_loc before 5, .debug_loclists from 5), the base of its entries
// in .debug_addr, and its line table's entry.
type unit struct {
	entry    *dwarf.Entry
	base     uint64
	version  int
	addrBase uint64
}

// index reads every subprogram that has code, once (Inlined walks them
// all; FunctionAt reads only the unit of the one it wants).
func (f *File) index() error {
	f.indexOnce.Do(func() {
		f.funcs, f.units = map[uint64]dwarf.Offset{}, map[dwarf.Offset]*unit{}
		r := f.data.Reader()
		var u *unit
		for {
			e, err := r.Next()
			if err != nil {
				f.indexErr = fmt.Errorf("%s: %w", f.DebugPath, err)
				return
			}
			if e == nil {
				return
			}
			switch e.Tag {
			case dwarf.TagCompileUnit, dwarf.TagPartialUnit:
				u = f.newUnit(e)
			case dwarf.TagSubprogram:
				if low, ok := f.subprogramEntry(e); ok {
					if _, dup := f.funcs[low]; !dup {
						f.funcs[low] = e.Offset
						f.units[e.Offset] = u
					}
				}
			}
			if e.Children && e.Tag != dwarf.TagCompileUnit && e.Tag != dwarf.TagPartialUnit && e.Tag != dwarf.TagNamespace {
				r.SkipChildren()
			}
		}
	})
	return f.indexErr
}

func (f *File) newUnit(e *dwarf.Entry) *unit {
	u := &unit{entry: e, version: f.unitVersion(e.Offset)}
	if low, ok := e.Val(dwarf.AttrLowpc).(uint64); ok {
		u.base = low
	}
	if base, ok := e.Val(dwarf.AttrAddrBase).(int64); ok {
		u.addrBase = uint64(base)
	}
	return u
}

// unitVersion reads the DWARF version from the header of the unit whose
// first entry is at off (32-bit DWARF: 11 header bytes before 5, 12
// from 5, the version 2 bytes after the 4-byte length).
func (f *File) unitVersion(off dwarf.Offset) int {
	info := f.sections[".debug_info"]
	if o := int(off) - 8; o >= 0 && int(off) <= len(info) && f.order.Uint16(info[o:]) == 5 {
		return 5
	}
	if o := int(off) - 7; o >= 0 && int(off) <= len(info) {
		return int(f.order.Uint16(info[o:]))
	}
	return 4
}

// EntryContaining is the entry address and the name of the function
// whose code holds the link-time address pc (a statement's): the
// function a probe there is on. Each unit's functions are read once.
func (f *File) EntryContaining(pc uint64) (uint64, string, error) {
	if p, ok := f.pieceAt(pc); ok { // in a unit read already
		return p.entry, p.name, nil
	}
	r := f.data.Reader()
	cu, err := r.SeekPC(pc)
	switch {
	case errors.Is(err, dwarf.ErrUnknownPC):
		return 0, "", ErrNoFunction
	case err != nil:
		return 0, "", fmt.Errorf("%s: %w", f.DebugPath, err)
	}
	if err := f.unitFunctions(r, cu); err != nil {
		return 0, "", err
	}
	if p, ok := f.pieceAt(pc); ok {
		return p.entry, p.name, nil
	}
	return 0, "", ErrNoFunction
}

// pieceAt is the piece of the units read so far that holds pc.
func (f *File) pieceAt(pc uint64) (functionPiece, bool) {
	f.piecesMu.Lock()
	defer f.piecesMu.Unlock()
	for _, pieces := range f.pieces {
		for _, p := range pieces {
			if p.low <= pc && pc < p.high {
				return p, true
			}
		}
	}
	return functionPiece{}, false
}

// functionPiece is a range of a function's code.
type functionPiece struct {
	low, high, entry uint64
	name             string
}

// unitFunctions reads the pieces of the functions of the unit cu, r at
// its first child, once.
func (f *File) unitFunctions(r *dwarf.Reader, cu *dwarf.Entry) error {
	f.piecesMu.Lock()
	defer f.piecesMu.Unlock()
	if _, ok := f.pieces[cu.Offset]; ok {
		return nil
	}
	var pieces []functionPiece
	_, err := f.findSubprogram(r, func(e *dwarf.Entry) bool {
		entry, ok := f.subprogramEntry(e)
		ranges, err := f.data.Ranges(e)
		if !ok || err != nil {
			return false
		}
		name, _ := f.origin(e).Val(dwarf.AttrName).(string)
		for _, rg := range ranges {
			pieces = append(pieces, functionPiece{low: rg[0], high: rg[1], entry: entry, name: name})
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("%s: %w", f.DebugPath, err)
	}
	if f.pieces == nil {
		f.pieces = map[dwarf.Offset][]functionPiece{}
	}
	f.pieces[cu.Offset] = pieces
	return nil
}

// FunctionAt is the function whose code starts at the link-time address
// entry.
func (f *File) FunctionAt(entry uint64) (*Function, error) {
	r, e, u, err := f.subprogramAt(entry)
	if err != nil {
		return nil, err
	}
	fn := &Function{Entry: entry, unit: u, file: f, frame: f.locationOf(e, dwarf.AttrFrameBase)}
	origin := f.origin(e)
	fn.Name, _ = origin.Val(dwarf.AttrName).(string)
	fn.Return, _ = origin.Val(dwarf.AttrType).(dwarf.Offset)
	if e.Children {
		if err := f.readBlock(r, fn, nil, 0); err != nil {
			return nil, err
		}
	}
	return fn, nil
}

// readBlock reads the parameters and variables of a function's block up
// to its end, and those of the lexical blocks in it, whose ranges scope
// theirs (an inlined function's are its own).
func (f *File) readBlock(r *dwarf.Reader, fn *Function, scope [][2]uint64, depth int) error {
	for c, err := range children(r) {
		if err != nil {
			return err
		}
		switch c.Tag {
		case dwarf.TagFormalParameter, dwarf.TagVariable:
			o := f.origin(c)
			v := Var{loc: f.locationOf(c, dwarf.AttrLocation), scope: scope, depth: depth}
			v.Name, _ = o.Val(dwarf.AttrName).(string)
			v.Type, _ = o.Val(dwarf.AttrType).(dwarf.Offset)
			if c.Tag == dwarf.TagFormalParameter && depth == 0 {
				v.Param = true
				fn.Params = append(fn.Params, v)
			} else if v.Name != "" && v.loc.present() {
				fn.Locals = append(fn.Locals, v)
			}
		case dwarf.TagLabel:
			name, _ := c.Val(dwarf.AttrName).(string)
			if low, ok := c.Val(dwarf.AttrLowpc).(uint64); ok && name != "" {
				if fn.Labels == nil {
					fn.Labels = map[string]uint64{}
				}
				fn.Labels[name] = low
			}
		case dwarf.TagLexDwarfBlock:
			ranges, err := f.data.Ranges(c)
			if err != nil {
				return err
			}
			if c.Children {
				if err := f.readBlock(r, fn, ranges, depth+1); err != nil {
					return err
				}
			}
			continue
		}
		if c.Children {
			r.SkipChildren()
		}
	}
	return nil
}

// subprogramAt finds the entry of the function whose code starts at
// entry among those of the unit whose ranges hold it (not the whole
// file's: a large program's DWARF is read no further than that unit),
// the reader then at its first child.
func (f *File) subprogramAt(entry uint64) (*dwarf.Reader, *dwarf.Entry, *unit, error) {
	r := f.data.Reader()
	cu, err := r.SeekPC(entry)
	if errors.Is(err, dwarf.ErrUnknownPC) {
		return nil, nil, nil, ErrNoFunction
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", f.DebugPath, err)
	}
	e, err := f.findSubprogram(r, func(e *dwarf.Entry) bool {
		low, ok := f.subprogramEntry(e)
		return ok && low == entry
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", f.DebugPath, err)
	}
	if e == nil {
		return nil, nil, nil, ErrNoFunction
	}
	return r, e, f.newUnit(cu), nil
}

// findSubprogram reads r's block up to the function that match accepts,
// into namespaces (C++'s), nil if it has none.
func (f *File) findSubprogram(r *dwarf.Reader, match func(*dwarf.Entry) bool) (*dwarf.Entry, error) {
	for e, err := range children(r) {
		if err != nil {
			return nil, err
		}
		if e.Tag == dwarf.TagSubprogram && match(e) {
			return e, nil
		}
		switch {
		case e.Children && e.Tag == dwarf.TagNamespace:
			if found, err := f.findSubprogram(r, match); found != nil || err != nil {
				return found, err
			}
		case e.Children:
			r.SkipChildren()
		}
	}
	return nil, nil
}

// children yields the entries of r's block up to its end (each entry's
// own children are the loop's to read or skip), or the error that ends
// them.
func children(r *dwarf.Reader) iter.Seq2[*dwarf.Entry, error] {
	return func(yield func(*dwarf.Entry, error) bool) {
		for {
			e, err := r.Next()
			if err != nil {
				yield(nil, err)
				return
			}
			if e == nil || e.Tag == 0 || !yield(e, nil) {
				return
			}
		}
	}
}

// origin is the entry that names and types e: its abstract origin (an
// inlined or out-of-line copy's), its specification (a definition's
// declaration), or e itself.
func (f *File) origin(e *dwarf.Entry) *dwarf.Entry {
	for range 4 {
		if e.Val(dwarf.AttrName) != nil {
			return e
		}
		ref, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			if ref, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset); !ok {
				return e
			}
		}
		r := f.data.Reader()
		r.Seek(ref)
		next, err := r.Next()
		if err != nil || next == nil {
			return e
		}
		e = next
	}
	return e
}

func (f *File) locationOf(e *dwarf.Entry, attr dwarf.Attr) location {
	fld := e.AttrField(attr)
	if fld == nil {
		return location{}
	}
	switch v := fld.Val.(type) {
	case []byte:
		return location{expr: v}
	case int64:
		if fld.Class == dwarf.ClassLocListPtr {
			return location{list: v, isList: true}
		}
	}
	return location{}
}

// Global is a variable of static storage: where the DWARF (or, for one
// it only declares, the symbol table) places it, its link-time address.
type Global struct {
	Name string
	// Unit is the name of the compilation unit that defines or declares it.
	Unit string
	Addr uint64
	Type dwarf.Offset
	// PerCPU: the address is the kernel's per-CPU offset, not the
	// variable's (DEFINE_PER_CPU).
	PerCPU bool
}

// Global finds the variable name at file scope, in a compilation unit
// whose name file matches (a FilePattern) where file is not "" (stap's
// @var("name@file.c")).
func (f *File) Global(name, file string) (*Global, error) {
	pattern := NewFilePattern(file)
	r := f.data.Reader()
	for {
		cu, err := f.nextUnit(r)
		if err != nil || cu == nil {
			return nil, cmp.Or(err, ErrNoVariable)
		}
		unitName, _ := cu.Val(dwarf.AttrName).(string)
		if cu.Tag != dwarf.TagCompileUnit || !cu.Children || file != "" && !pattern.Matches(unitName) {
			r.SkipChildren()
			continue
		}
		if g, err := f.globalIn(r, name, unitName); g != nil || err != nil {
			return g, err
		}
	}
}

// GlobalAt finds the variable name at file scope in the compilation unit
// whose code holds the link-time address pc (a probe's: stap's $name
// reads a global of the probed function's file).
func (f *File) GlobalAt(name string, pc uint64) (*Global, error) {
	r := f.data.Reader()
	cu, err := r.SeekPC(pc)
	switch {
	case errors.Is(err, dwarf.ErrUnknownPC):
		return nil, ErrNoVariable
	case err != nil:
		return nil, fmt.Errorf("%s: %w", f.DebugPath, err)
	}
	unitName, _ := cu.Val(dwarf.AttrName).(string)
	g, err := f.globalIn(r, name, unitName)
	if g == nil && err == nil {
		err = ErrNoVariable
	}
	return g, err
}

// nextUnit is r's next entry, a unit's (nil after the last), where r has
// read or skipped the children of the one before.
func (f *File) nextUnit(r *dwarf.Reader) (*dwarf.Entry, error) {
	cu, err := r.Next()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.DebugPath, err)
	}
	return cu, nil
}

// globalIn reads the entries of the unit named unit up to its end for the
// variable name with a static address: one it defines, or else one it
// declares extern, which the symbol table places, where the declaration's
// type is complete (`extern struct s obj;` of a unit that never defines
// struct s is left for the unit that defines obj).
func (f *File) globalIn(r *dwarf.Reader, name, unit string) (*Global, error) {
	var defined, declared *Global
	for e, err := range children(r) {
		if err != nil {
			return nil, err
		}
		if e.Children {
			r.SkipChildren()
		}
		if defined != nil || e.Tag != dwarf.TagVariable {
			continue
		}
		o := f.origin(e)
		if n, _ := o.Val(dwarf.AttrName).(string); n != name {
			continue
		}
		g := &Global{Name: name, Unit: unit}
		g.Type, _ = o.Val(dwarf.AttrType).(dwarf.Offset)
		expr, ok := e.Val(dwarf.AttrLocation).([]byte)
		switch {
		case ok && len(expr) == 1+f.ptrSize && expr[0] == opAddr:
			g.Addr = (&buf{data: expr[1:], order: f.order}).addr(f.ptrSize)
			defined = g
		case declared == nil && e.Val(dwarf.AttrDeclaration) == true && e.Val(dwarf.AttrExternal) == true && f.complete(g.Type):
			g.Addr, ok = f.DataSymbol(name)
			if ok {
				declared = g
			}
		}
	}
	g := cmp.Or(defined, declared)
	if g != nil {
		f.readSymbols()
		g.PerCPU = f.perCPU[0] <= g.Addr && g.Addr < f.perCPU[1]
	}
	return g, nil
}

// complete tells whether the type at off is not a structure, union or
// class the unit only declares (through typedefs and qualifiers).
func (f *File) complete(off dwarf.Offset) bool {
	r := f.data.Reader()
	for range 8 {
		r.Seek(off)
		e, err := r.Next()
		if err != nil || e == nil {
			return false
		}
		switch e.Tag {
		case dwarf.TagTypedef, dwarf.TagConstType, dwarf.TagVolatileType, dwarf.TagRestrictType:
			next, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
			if !ok {
				return true
			}
			off = next
		case dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagClassType:
			return e.Val(dwarf.AttrDeclaration) != true
		default:
			return true
		}
	}
	return true
}

// Declaration is a function's name and the line it is declared at.
type Declaration struct {
	Name string
	Line int
}

// Declared are the functions with code declared in the source files
// file matches (a FilePattern; at line, where line is not 0), their names
// and lines by their entry addresses: stap's
// process("P").function("F@FILE[:LINE]"), kernel.function("F@FILE") and
// statement("F@FILE+N"). Only the units whose line tables name such a
// file are read.
func (f *File) Declared(file string, line int) (map[uint64]Declaration, error) {
	pattern := NewFilePattern(file)
	out := map[uint64]Declaration{}
	r := f.data.Reader()
	for {
		cu, err := f.nextUnit(r)
		if err != nil || cu == nil {
			return out, err
		}
		if cu.Tag != dwarf.TagCompileUnit || !cu.Children {
			r.SkipChildren()
			continue
		}
		lr, err := f.data.LineReader(cu)
		if err != nil || lr == nil {
			r.SkipChildren()
			continue
		}
		if !pattern.matchesAny(lr.Files()) {
			r.SkipChildren()
			continue
		}
		if err := f.declaredIn(r, lr.Files(), pattern, line, out); err != nil {
			return nil, err
		}
	}
}

// declaredIn reads a unit's entries up to its end for Declared.
func (f *File) declaredIn(r *dwarf.Reader, files []*dwarf.LineFile, pattern FilePattern, line int, out map[uint64]Declaration) error {
	for e, err := range children(r) {
		if err != nil {
			return err
		}
		if e.Children {
			r.SkipChildren()
		}
		if e.Tag != dwarf.TagSubprogram {
			continue
		}
		low, ok := f.subprogramEntry(e)
		if !ok {
			continue
		}
		o := f.origin(e)
		i, known := o.Val(dwarf.AttrDeclFile).(int64)
		l, _ := o.Val(dwarf.AttrDeclLine).(int64)
		if known && i >= 0 && int(i) < len(files) && files[i] != nil && pattern.Matches(files[i].Name) && (line == 0 || int(l) == line) {
			name, _ := o.Val(dwarf.AttrName).(string)
			out[low] = Declaration{Name: name, Line: int(l)}
		}
	}
	return nil
}

// Inlined are the inlined copies of the functions whose names match
// matches: each a Function whose Entry is the copy's entry address
// (DW_AT_entry_pc, else its first address), its parameters and locals
// the copy's, its frame base the function's it was inlined into.
func (f *File) Inlined(matches func(name string) bool) ([]*Function, error) {
	if err := f.index(); err != nil {
		return nil, err
	}
	var out []*Function
	for _, off := range f.funcs {
		r := f.data.Reader()
		r.Seek(off)
		outer, err := r.Next()
		if err != nil {
			return nil, err
		}
		if !outer.Children {
			continue
		}
		entry, _ := f.subprogramEntry(outer)
		if err := f.inlinedIn(r, f.hostOf(outer, f.units[off], entry), matches, &out); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b *Function) int { return cmp.Compare(a.Entry, b.Entry) })
	return out, nil
}

// InlinedIn are the inlined copies of the functions whose names match
// accepts in the function whose code starts at entry, its block alone
// read (a kernel statement's line in a copy: the function it is in
// holds the copy).
func (f *File) InlinedIn(entry uint64, matches func(name string) bool) ([]*Function, error) {
	r, e, u, err := f.subprogramAt(entry)
	if err != nil || !e.Children {
		return nil, err
	}
	var out []*Function
	return out, f.inlinedIn(r, f.hostOf(e, u, entry), matches, &out)
}

// Holds tells whether an inlined copy's code holds pc: one of its
// ranges, or the empty range GCC gives a copy's entry (its location view:
// copies interleaved with their caller's code start at one instruction).
func (fn *Function) Holds(pc uint64) bool {
	return slices.ContainsFunc(fn.ranges, func(r [2]uint64) bool { return r[0] <= pc && pc < r[1] || r[0] == r[1] && pc == r[0] })
}

// inlinedIn reads the entries of a function's block up to its end for
// the inlined copies Inlined wants, host giving their frame base.
func (f *File) inlinedIn(r *dwarf.Reader, host *Function, matches func(string) bool, out *[]*Function) error {
	for e, err := range children(r) {
		if err != nil {
			return err
		}
		if e.Tag == dwarf.TagInlinedSubroutine {
			name, _ := f.origin(e).Val(dwarf.AttrName).(string)
			if entry, ok := f.entryOf(e); ok && matches(name) {
				inl, err := f.inlinedCopy(e, host, name, entry)
				if err != nil {
					return err
				}
				*out = append(*out, inl)
			}
		}
		if !e.Children {
			continue
		}
		switch e.Tag {
		case dwarf.TagInlinedSubroutine, dwarf.TagLexDwarfBlock:
			if err := f.inlinedIn(r, host, matches, out); err != nil {
				return err
			}
		default:
			r.SkipChildren()
		}
	}
	return nil
}

// hostOf is the function e describes, in unit u, whose code starts at
// entry, as the host of the copies inlined into it: their frame base and
// the start of their code.
func (f *File) hostOf(e *dwarf.Entry, u *unit, entry uint64) *Function {
	return &Function{Entry: entry, unit: u, file: f, frame: f.locationOf(e, dwarf.AttrFrameBase)}
}

// subprogramEntry is where the code of the function e describes starts:
// its low_pc, or, for a function in several pieces (a kernel's, its
// unlikely paths moved to .text.unlikely), its entry_pc or the start of
// its first range, the hot part's, as GCC lists them.
func (f *File) subprogramEntry(e *dwarf.Entry) (uint64, bool) {
	if low, ok := e.Val(dwarf.AttrLowpc).(uint64); ok {
		return low, true
	}
	if e.AttrField(dwarf.AttrRanges) == nil {
		return 0, false
	}
	return f.entryOf(e)
}

// entryOf is where an inlined copy starts.
func (f *File) entryOf(e *dwarf.Entry) (uint64, bool) {
	if pc, ok := e.Val(dwarf.AttrEntrypc).(uint64); ok {
		return pc, true
	}
	ranges, err := f.data.Ranges(e)
	if err != nil || len(ranges) == 0 {
		return 0, false
	}
	return ranges[0][0], true
}

// inlinedCopy reads the parameters and locals of the inlined copy e.
func (f *File) inlinedCopy(e *dwarf.Entry, host *Function, name string, entry uint64) (*Function, error) {
	fn := &Function{Name: name, Entry: entry, unit: host.unit, file: f, frame: host.frame, inlinedInto: host.Entry}
	fn.Return, _ = f.origin(e).Val(dwarf.AttrType).(dwarf.Offset)
	fn.ranges, _ = f.data.Ranges(e)
	if e.Children {
		r := f.data.Reader()
		r.Seek(e.Offset)
		if _, err := r.Next(); err != nil {
			return nil, err
		}
		if err := f.readBlock(r, fn, nil, 0); err != nil {
			return nil, err
		}
	}
	return fn, nil
}
