package probes

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/elfsym"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// debugFunc is the function a probe that may read DWARF is on (a
// process.function or .statement probe, a kernel.statement probe), for
// its DWARF, which is read only when a $var asks for it (loadDebug): a
// script that names none reads no debuginfo and starts as fast as before.
type debugFunc struct {
	// open gives the DWARF that describes the function.
	open func() (*debuginfo.File, error)
	// object names what holds the function, in messages: the program's
	// path, or "the kernel".
	object string
	obj    *elfsym.Object // the program (nil: the kernel)
	fn     elfsym.Func
	regs   *arch.Regs
	// at is a statement probe's link-time address, 0 for the function's
	// entry: its $vars are the parameters and locals in scope there.
	at uint64
	// inline is the inlined copy an .inline probe is on, whose $vars are
	// its own.
	inline *debuginfo.Function
}

// programFunc is the debugFunc of fn, a function of the program obj,
// whose DWARF files holds.
func programFunc(files *debugCache, obj *elfsym.Object, fn elfsym.Func, regs *arch.Regs, at uint64) *debugFunc {
	return &debugFunc{open: func() (*debuginfo.File, error) { return files.open(obj.Path) },
		object: obj.Path, obj: obj, fn: fn, regs: regs, at: at}
}

// kernel tells whether the function is the kernel's: its variables are
// in the kernel's memory.
func (u *debugFunc) kernel() bool { return u.obj == nil }

// debugCache holds the DWARF read so far, by path.
type debugCache struct {
	mu    sync.Mutex
	files map[string]*debugFile
}

type debugFile struct {
	once sync.Once
	f    *debuginfo.File
	err  error
}

func (c *debugCache) open(path string) (*debuginfo.File, error) {
	c.mu.Lock()
	if c.files == nil {
		c.files = map[string]*debugFile{}
	}
	d, ok := c.files[path]
	if !ok {
		d = &debugFile{}
		c.files[path] = d
	}
	c.mu.Unlock()
	d.once.Do(func() { d.f, d.err = debuginfo.Open(path) })
	return d.f, d.err
}

// debugState is what loadDebug read of a user function's DWARF: the
// program's types the function's parameters and return value have, the
// function and the address the probe reads it at, and the canonical frame
// address's rule where the probe moved after the prologue.
type debugState struct {
	done       bool
	unwanted   bool // ReadsNoVars: no $var or @var reaches the context
	err        *ContextError
	types      *kernel.BTF
	file       *debuginfo.File
	pc         uint64
	movedFrame *debuginfo.Location
	// byConvention: unoptimized code's parameters read at its entry from
	// the calling convention's registers (placeProbe).
	byConvention bool
	// undescribed: the program has DWARF, but none for this function (a
	// C runtime's _start, an assembly routine): its $$parms and $$vars
	// are "", as a function without parameters's.
	undescribed bool
	// locals names the point's arguments that are locals, not parameters
	// ($$locals; $$parms leaves them out).
	locals map[string]bool
}

// loadDebug gives a user function probe, on first use, what the
// function's DWARF says: its parameters as the point's arguments (at its
// entry, or after its prologue for unoptimized code, where the probe then
// moves, as stap places it), $return typed, and the program's types for
// member chains. A parameter the DWARF places nowhere readable is refused
// with the reason; an error means no DWARF serves the function.
func (c *Context) loadDebug() *ContextError {
	if c.user == nil || c.debug.done {
		return c.debug.err
	}
	c.debug.done = true
	c.debug.err = c.readDebug()
	return c.debug.err
}

func (c *Context) readDebug() *ContextError {
	u, a := c.user, c.Attach
	if a.I386 {
		return ctxErr(-1, "cannot read the parameters of %s: bpftap reads the DWARF of 64-bit programs only", u.fn.Name)
	}
	f, err := u.open()
	var missing *debuginfo.KernelMissingError
	if errors.As(err, &missing) && u.at == 0 {
		c.debug.undescribed = true // a kernel function without BTF, as before its DWARF was read
	}
	if err != nil {
		return ctxErr(-1, "cannot read the parameters of %s: %v", u.fn.Name, err)
	}
	if u.fn.Addr == 0 { // a kernel function named by its symbol (kernelFunctionDebug)
		addrs := f.FunctionSymbols(u.fn.Name)
		if len(addrs) != 1 {
			c.debug.undescribed = true
			return ctxErr(-1, "cannot read the parameters of %s: the symbol table of %s names %d functions so", u.fn.Name, f.DebugPath, len(addrs))
		}
		u.fn.Addr = addrs[0]
	}
	fn, err := u.inline, error(nil)
	if fn == nil {
		fn, err = f.FunctionAt(u.fn.Addr)
	}
	if errors.Is(err, debuginfo.ErrNoFunction) {
		c.debug.undescribed = true
		return ctxErr(-1, "cannot read the parameters of %s: the debuginfo of %s (%s) does not describe it", u.fn.Name, u.object, f.DebugPath)
	}
	if err != nil {
		return ctxErr(-1, "cannot read the parameters of %s: %v", u.fn.Name, err)
	}
	vars := fn.Params
	if u.at != 0 {
		vars = fn.VarsAt(u.at)
	}
	ids, cerr := c.readTypes(f, fn, vars)
	if cerr != nil {
		return cerr
	}
	c.debug.file, c.debug.pc = f, fn.Entry
	if a.Func.Return != nil {
		c.typeReturn(ids[0])
		return nil
	}
	if cerr := c.placeProbe(fn, ids); cerr != nil {
		return cerr
	}
	c.addVars(fn, vars, ids[1:])
	return nil
}

// readTypes describes fn's return type and the types of vars as the
// program's BTF (Context.debug.types): their IDs, in that order.
func (c *Context) readTypes(f *debuginfo.File, fn *debuginfo.Function, vars []debuginfo.Var) ([]kernel.TypeID, *ContextError) {
	offsets := []dwarf.Offset{fn.Return}
	for _, v := range vars {
		offsets = append(offsets, v.Type)
	}
	types, ids, err := dwarfBTF(f, !c.user.kernel(), offsets...)
	if err != nil {
		return nil, ctxErr(-1, "cannot read the types of %s: %v", c.user.fn.Name, err)
	}
	c.debug.types = types
	return ids, nil
}

// dwarfBTF describes the DWARF types of f at offsets as BTF of
// their own, the kernel's reader's, of a user program's memory (user) or
// the kernel's: the types and their IDs, in order.
func dwarfBTF(f *debuginfo.File, user bool, offsets ...dwarf.Offset) (*kernel.BTF, []kernel.TypeID, error) {
	raw, ids, err := f.BTF(offsets...)
	if err != nil {
		return nil, nil, err
	}
	parse := kernel.ParseKernelDWARF
	if user {
		parse = kernel.ParseUser
	}
	types, err := parse(raw, "the types of "+f.DebugPath)
	out := make([]kernel.TypeID, len(ids))
	for i, id := range ids {
		out[i] = kernel.TypeID(id)
	}
	return types, out, err
}

// placeProbe decides the address the probe reads fn's variables at
// (Context.debug.pc): a statement's, or fn's entry. Unoptimized code's
// DWARF places its parameters in the frame, where its prologue stores
// them: where each is an integer or a pointer that the calling convention
// passes in a register (ids: the return type's and theirs), they are read
// from those registers at the entry; else the probe moves after the
// prologue, as stap places it. (A uprobe on a function's first
// instruction, which the kernel emulates, cost 2.6 us a hit here against
// 11 us on one it single-steps: bench/dwarf.sh.)
func (c *Context) placeProbe(fn *debuginfo.Function, ids []kernel.TypeID) *ContextError {
	u, a := c.user, c.Attach
	switch {
	case u.at != 0:
		c.debug.pc = u.at
		return nil
	case !fn.FrameBased() || u.kernel(): // the kernel's frame-based are arguments passed on the stack
		return nil
	case c.passedInRegisters(fn, ids):
		c.debug.byConvention = true
		return nil
	}
	pc, err := fn.AfterPrologue()
	if err != nil {
		return ctxErr(-1, "cannot find the end of the prologue of %s: %v", u.fn.Name, err)
	}
	cfa, err := fn.FrameAddress(pc)
	if err != nil {
		return ctxErr(-1, "cannot read the parameters of %s after its prologue: %v", u.fn.Name, err)
	}
	a.Offset += pc - fn.Entry
	a.PC = u.obj.PC(elfsym.Func{Addr: pc})
	c.debug.pc, c.debug.movedFrame = pc, &cfa
	return nil
}

// passedInRegisters tells whether fn's parameters, typed ids[1:], are all
// integers or pointers of at most 8 bytes that the calling convention
// passes in its first registers, and its return value (ids[0]) no
// aggregate (whose hidden pointer would come first).
func (c *Context) passedInRegisters(fn *debuginfo.Function, ids []kernel.TypeID) bool {
	if len(fn.Params) > len(c.user.regs.FuncArgs) || ids[0] != 0 && !c.integerClass(ids[0]) {
		return false
	}
	for i := range fn.Params {
		if !c.integerClass(ids[i+1]) {
			return false
		}
	}
	return true
}

// integerClass tells whether t is an integer, an enum or a pointer of at
// most 8 bytes.
func (c *Context) integerClass(t kernel.TypeID) bool {
	u, err := c.debug.types.Underlying(t)
	if err != nil {
		return false
	}
	switch u.Kind {
	case kernel.KindInt, kernel.KindEnum, kernel.KindEnum64, kernel.KindPtr:
		_, _, ok := c.scalar(t)
		return ok
	}
	return false
}

// addVars makes vars, typed ids, the point's arguments where they can be
// read at the probe's address; each other is refused with the reason.
func (c *Context) addVars(fn *debuginfo.Function, vars []debuginfo.Var, ids []kernel.TypeID) {
	pc := c.debug.pc
	for i, v := range vars {
		arg := attach.Arg{Name: v.Name, Type: ids[i], Local: v.Name, Pointer: c.isPointer(ids[i])}
		var err error
		if c.debug.byConvention { // parameter i, at the entry (vars are fn.Params)
			size, signed, _ := c.scalar(arg.Type)
			arg.Loc = attach.Loc{Offset: c.user.regs.FuncArgs[i], Size: size, Signed: signed}
		} else {
			var loc debuginfo.Location
			if loc, err = fn.Locate(v, pc); err == nil {
				arg.Loc, err = c.argLoc(loc, arg.Type)
			}
		}
		if err != nil {
			c.refusedVar("$"+v.Name, fmt.Sprintf("cannot read '$%s' of %s at %#x: %v", v.Name, c.user.fn.Name, pc, err))
			arg = attach.Arg{Name: v.Name, Unavailable: true}
		}
		c.Attach.Args = append(c.Attach.Args, arg)
		if !v.Param {
			if c.debug.locals == nil {
				c.debug.locals = map[string]bool{}
			}
			c.debug.locals[v.Name] = true
		}
	}
}

func (c *Context) refusedVar(name, why string) {
	if c.refused == nil {
		c.refused = map[string]string{}
	}
	c.refused[name] = why
}

func (c *Context) isPointer(t kernel.TypeID) bool {
	u, err := c.debug.types.Underlying(t)
	return err == nil && u.Kind == kernel.KindPtr
}

// typeReturn types a return probe's $return where the return register
// holds it (an integer or a pointer): a value of its type's size,
// sign-extended when signed, its type followed by member chains.
func (c *Context) typeReturn(t kernel.TypeID) {
	if t == 0 { // void
		c.Attach.Func.Void = true
		c.Attach.Args = slices.DeleteFunc(c.Attach.Args, func(a attach.Arg) bool { return a.Name == "return" })
		return
	}
	if !c.integerClass(t) { // a structure, a double: not in the return register
		return
	}
	for i := range c.Attach.Args {
		arg := &c.Attach.Args[i]
		if arg.Name != "return" {
			continue
		}
		arg.Type, arg.Pointer = t, c.isPointer(t)
		size, signed, _ := c.scalar(t)
		arg.Loc.Size, arg.Loc.Signed = size, signed
		*c.Attach.Func.Return = arg.Loc
	}
}

// scalar is the size and signedness of an integer, enum or pointer type.
func (c *Context) scalar(t kernel.TypeID) (size int, signed, ok bool) {
	p, err := c.debug.types.Resolve(t, nil)
	if err != nil || p.Kind != kernel.ValueInt || p.Size == 0 || p.Size > 8 {
		return 0, false, false
	}
	return int(p.Size), p.Signed, true
}

// argLoc is where a BPF program reads a value of type t at loc, from the
// registers of the uprobe's context.
func (c *Context) argLoc(loc debuginfo.Location, t kernel.TypeID) (attach.Loc, error) {
	size, signed, ok := c.scalar(t)
	if !ok {
		return attach.Loc{}, fmt.Errorf("a value of type %s, which bpftap reads only through a pointer", c.debug.types.TypeName(t))
	}
	out := attach.Loc{Size: size, Signed: signed}
	reg := -1
	if loc.Reg >= 0 {
		if loc.Reg >= len(c.user.regs.DWARF) {
			return attach.Loc{}, fmt.Errorf("it is in DWARF register %d, which bpftap does not read on %s", loc.Reg, c.user.regs.Name)
		}
		reg = c.user.regs.Registers[c.user.regs.DWARF[loc.Reg]].Offset
	}
	switch {
	case loc.Static:
		return attach.Loc{}, errors.New("it is a static variable, which bpftap does not read yet")
	case loc.Kind == debuginfo.Value && reg < 0:
		out.Const, out.Value = true, loc.Offset
	case loc.Kind == debuginfo.Value && loc.Offset == 0:
		out.Offset = reg
	default:
		out.User = &attach.UserAddr{Disp: loc.Offset, Kernel: c.user.kernel()}
		if reg >= 0 {
			out.User.Terms = []attach.RegTerm{{Offset: reg, Scale: 1}}
		}
		out.Address = loc.Kind == debuginfo.Value
	}
	return out, nil
}

// entryFrame is the Entry.Frame of the entries a user function's return
// probe pairs with, entry their context: the stack pointer at the call's
// entry, push bytes below its value at the return (stackFrame). An entry
// that loadDebug moves after the prologue, where the stack pointer has
// moved too, computes it from the canonical frame address instead, which
// the call frame information gives there: the stack pointer before the
// call, push bytes above its value at the entry.
func entryFrame(entry *Context, regs *arch.Regs, push int) func(bool, syntax.Pos) syntax.Expr {
	atSP := stackFrame(regs.SPName, push)
	return func(ret bool, at syntax.Pos) syntax.Expr {
		if ret || entry.debug.unwanted || entry.loadDebug() != nil || entry.debug.movedFrame == nil {
			return atSP(ret, at)
		}
		cfa := entry.debug.movedFrame
		reg := &syntax.Call{Typed: syntax.Typed{Pos: at}, Name: "u_register",
			Args: []syntax.Expr{&syntax.StringLit{Typed: syntax.Typed{Pos: at}, Value: regs.DWARF[cfa.Reg]}}}
		off := cfa.Offset - int64(push)
		return &syntax.Binary{Typed: syntax.Typed{Pos: at}, Op: "+", X: reg,
			Y: &syntax.NumberLit{Typed: syntax.Typed{Pos: at}, Value: off, Text: fmt.Sprint(off)}}
	}
}

// ReadsNoVars tells an entry's context that the values it takes read no
// $var or @var: it stays at the function's first instruction, and no
// DWARF is read to find where its frame is (entryFrame).
func (c *Context) ReadsNoVars() { c.debug.unwanted = true }

// AtVar resolves @var("NAME@FILE", "MODULE") with its chain: in a kernel
// probe a kernel global (kernelGlobal); in a user function probe a
// variable of static storage of the probed program, found in its DWARF
// (in the compilation unit whose name FILE matches, when given), read
// where the program was loaded: its link-time address plus the distance
// from the probe's link-time address to the instruction pointer, which is
// the probe's address as loaded.
func (c *Context) AtVar(x *syntax.AtVar) (*Access, *ContextError) {
	switch {
	case x.Pretty > 0:
		return nil, ctxErr(-1, "pretty printing of @var is not supported by bpftap")
	case !c.Attach.User:
		return c.kernelGlobal(x.Name, x.Module, x.Components, x.AddrOf, x.Pos, false)
	case c.user == nil:
		return nil, ctxErr(-1, "unable to find global '%s': bpftap reads @var in process(...).function(...) probes, from the program's DWARF", x.Name)
	case x.Module != "" && !c.user.names(x.Module):
		return nil, ctxErr(-1, "unable to find global '%s' in %s: bpftap reads @var in the program a probe is on (%s)", x.Name, x.Module, c.user.obj.Path)
	}
	return c.userGlobal(x.Name, x.Components, x.AddrOf, x.Pos, false)
}

// userGlobal resolves a global of a user function probe's program with
// its chain: @var("NAME@FILE"), or $NAME where the function has no such
// parameter or local (own), which looks in the function's own unit only.
func (c *Context) userGlobal(ref string, comps []*syntax.TargetComponent, addrOf bool, pos syntax.Pos, own bool) (*Access, *ContextError) {
	if err := c.loadDebug(); err != nil {
		return nil, err
	}
	if c.Attach.Func.Return != nil {
		return nil, noGlobal("unable to find global '%s': bpftap reads @var at function entries, not in .return probes", ref)
	}
	name, file, _ := strings.Cut(ref, "@")
	var g *debuginfo.Global
	var err error
	if own {
		g, err = c.debug.file.GlobalAt(name, c.debug.pc)
	} else {
		g, err = c.debug.file.Global(name, file)
	}
	if errors.Is(err, debuginfo.ErrNoVariable) {
		return nil, noGlobal("unable to find global '%s' in %s", ref, c.user.obj.Path)
	}
	var types *kernel.BTF
	var ids []kernel.TypeID
	if err == nil {
		types, ids, err = dwarfBTF(c.debug.file, true, g.Type)
	}
	if err != nil {
		return nil, ctxErr(-1, "unable to read global '%s': %v", ref, err)
	}
	regs := c.user.regs
	at := attach.Loc{Size: 8, Address: true, User: &attach.UserAddr{Disp: int64(g.Addr - c.debug.pc),
		Terms: []attach.RegTerm{{Offset: regs.IP, Scale: 1}}}}
	return c.globalAccess("@var:"+ref, at, types, ids[0], comps, addrOf, pos)
}

// globalAccess reads a global of type t of types at the address loc
// computes, with its chain: the point's hidden argument named name.
func (c *Context) globalAccess(name string, loc attach.Loc, types *kernel.BTF, t kernel.TypeID, comps []*syntax.TargetComponent, addrOf bool, pos syntax.Pos) (*Access, *ContextError) {
	c.settleArgs()
	c.Attach.Args = append(c.Attach.Args, attach.Arg{Name: name, Hidden: true, Loc: loc})
	// the variable is element 0 of what its address points to
	zero := &syntax.NumberLit{Typed: syntax.Typed{Pos: pos}, Value: 0, Text: "0"}
	comps = append([]*syntax.TargetComponent{{Kind: syntax.ComponentIndex, Index: zero}}, comps...)
	a, cerr := ResolvePointee(types, t, comps, addrOf)
	if cerr != nil {
		cerr.Step-- // the index 0 is ours
		return nil, cerr
	}
	a.Param = len(c.Attach.Args) - 1
	return a, nil
}

// settleArgs lays out the point's own arguments, a trace event's fields
// and what the DWARF adds or removes (a void function's return), before a
// hidden argument is appended after them: the accesses resolved so far
// hold their indexes.
func (c *Context) settleArgs() {
	c.loadFields()
	c.loadDebug()
}

// names tells whether a @var's module names the probed object: its path,
// or its file name.
func (u *debugFunc) names(module string) bool {
	return module == u.obj.Path || module == filepath.Base(u.obj.Path)
}
