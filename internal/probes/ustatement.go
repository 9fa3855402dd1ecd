package probes

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/elfsym"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// process("PATH").statement("FUNC@FILE:LINE"): a uprobe at the first
// instruction of each source line LINE (each line of LINE-LAST, every
// line for *) of the files FILE matches (a debuginfo.FilePattern), in
// the functions FUNC matches (a
// wildcard), as the program's DWARF line table places them; $vars are the
// parameters and the locals in scope there (Context.loadDebug). The
// concrete point names the function, the file as the DWARF names it and
// the line: process("/abs/app").statement("handle@/src/app.c:42").
// .nearest takes, for a line without code, the next line that has some;
// FUNC@FILE+N is the line N after the one FUNC is declared at;
// statement(0xADDR) an address as the file is linked. The same file holds
// the DWARF's other user points: .label and .inline.
func processStatementFamily(k KernelInfo, cfg Config, objects *objectCache) *Family {
	var paths []string
	for _, process := range []string{"process(string)", "process", "process(string).library(string)", "process.library(string)"} {
		paths = append(paths, process+".statement(string)", process+".statement(string).nearest", process+".statement(number)")
	}
	return &Family{Name: "process.statement", Paths: paths, Kernel: true,
		Expand: func(p *Point) ([]*Point, error) {
			return eachFile(p, cfg, objects, func(path string, prologue *syntax.Block) ([]*Point, error) {
				if addr, ok := p.Arg("statement").(*syntax.NumberLit); ok {
					return addressStatement(k, objects, p, path, prologue, uint64(addr.Value))
				}
				return statementsOnFile(k, objects, p, path, prologue)
			})
		}}
}

// statementSpec is FUNC@FILE:LINE[-LAST], FUNC@FILE:* (every line), or
// FUNC@FILE+N (N lines after the line the function is declared at).
var statementSpec = regexp.MustCompile(`^([^@]+)@([^:+]+)(?::(\d+|\*)(?:-(\d+))?|\+(\d+))$`)

// statementAt is a statement probe's FUNC@FILE:FIRST[-LAST] or
// FUNC@FILE+N (relative: N; 0 for the others).
type statementAt struct {
	spec, pattern, file   string
	first, last, relative int
}

func parseStatement(spec string) (statementAt, error) {
	m := statementSpec.FindStringSubmatch(spec)
	if m == nil {
		return statementAt{}, errorf("cannot read statement %q: bpftap takes FUNCTION@FILE:LINE, FUNCTION@FILE:FIRST-LAST, FUNCTION@FILE:* or FUNCTION@FILE+N", spec)
	}
	st := statementAt{spec: spec, pattern: m[1], file: m[2]}
	st.relative, _ = strconv.Atoi(m[5])
	st.first, _ = strconv.Atoi(m[3])
	st.last = st.first
	switch {
	case m[3] == "*" && m[4] != "":
		return statementAt{}, errorf("cannot read statement %q: a range of lines is FIRST-LAST, every line *", spec)
	case m[3] == "*":
		st.first, st.last = 1, math.MaxInt32
	case m[4] != "":
		st.last, _ = strconv.Atoi(m[4])
	}
	return st, nil
}

// where names the lines in messages.
func (st statementAt) where() string {
	switch {
	case st.relative > 0:
		return fmt.Sprintf("line +%d (from the declaration)", st.relative)
	case st.last == math.MaxInt32:
		return "line"
	}
	return "line " + lineRange(st.first, st.last)
}

// lines are the line table's addresses of the statement's lines (not a
// relative one's), as read reads them (debuginfo.File.Lines, or one
// unit's); with nearest, those of the first line after them that has
// code when none has.
func (st statementAt) lines(read func(file string, first, last int) ([]debuginfo.Line, error), nearest bool) ([]debuginfo.Line, error) {
	lines, err := read(st.file, st.first, st.last)
	if err == nil && len(lines) == 0 && nearest {
		lines, err = read(st.file, st.last+1, st.last+nearestSpan)
		lines = nearestOf(lines)
	}
	return lines, err
}

// noLine is the "no match" of a statement whose lines have no code in a
// function its pattern matches.
func (st statementAt) noLine(dbg *debuginfo.File) error {
	return &Error{Msg: "no match", detail: func() string {
		return fmt.Sprintf(" (the line table of %s has no %s of a file matching %s in a function matching %s)", dbg.DebugPath, st.where(), st.file, st.pattern)
	}}
}

func statementsOnFile(k KernelInfo, objects *objectCache, p *Point, path string, prologue *syntax.Block) ([]*Point, error) {
	st, err := parseStatement(p.Arg("statement").(*syntax.StringLit).Value)
	if err != nil {
		return nil, err
	}
	obj, regs, err := debugObject(objects, path)
	if err != nil {
		return nil, err
	}
	dbg, err := objects.debug.open(path)
	if err != nil {
		return nil, errorf("cannot probe statement %q: %v", st.spec, err)
	}
	var lines []debuginfo.Line
	if st.relative > 0 {
		lines, err = relativeLines(dbg, st.pattern, st.file, st.relative, func(entry, addr uint64) bool {
			in, ok := containing(obj.Funcs, addr)
			return ok && in.Addr == entry
		})
	} else {
		lines, err = st.lines(dbg.Lines, hasComponent(p, "nearest"))
	}
	if err != nil {
		return nil, errorf("cannot probe statement %q: %v", st.spec, err)
	}
	var out []*Point
	seen := map[lineIn]bool{}
	for _, line := range lines {
		fn, ok := containing(obj.Funcs, line.Addr)
		if matched, _ := filepath.Match(st.pattern, fn.Name); !ok || !matched || seen[lineIn{line.File, line.Line, fn.Addr, nil}] {
			continue
		}
		seen[lineIn{line.File, line.Line, fn.Addr, nil}] = true
		site := userSite{objects: objects, obj: obj, regs: regs, fn: fn, addr: line.Addr, event: fn.Name}
		q, err := site.probe(k, p, prologue, "statement", fmt.Sprintf("%s@%s:%d", fn.Name, line.File, line.Line), len(out) == 0)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, st.noLine(dbg)
	}
	return out, nil
}

// lineIn is a source line in a function (by its entry) or in an inlined
// copy of one: a statement probe is on its lowest address there (the
// lines come in address order).
type lineIn struct {
	file  string
	line  int
	entry uint64
	copy  *debuginfo.Function
}

// relativeLines are, for FUNC@FILE+N, the first addresses of the line N
// lines after the one each function matching pattern is declared at in
// the files file matches, within that function (within(entry, addr): the
// function at entry holds addr).
func relativeLines(dbg *debuginfo.File, pattern, file string, n int, within func(entry, addr uint64) bool) ([]debuginfo.Line, error) {
	declared, err := dbg.Declared(file, 0)
	if err != nil {
		return nil, err
	}
	var out []debuginfo.Line
	for _, entry := range slices.Sorted(maps.Keys(declared)) {
		decl := declared[entry]
		if matched, _ := filepath.Match(pattern, decl.Name); !matched {
			continue
		}
		lines, err := dbg.LinesNear(entry, file, decl.Line+n, decl.Line+n)
		if err != nil {
			return nil, err
		}
		for _, l := range lines {
			if within(entry, l.Addr) {
				out = append(out, l)
			}
		}
	}
	return out, nil
}

// addressStatement is the probe of process("PATH").statement(ADDRESS): a
// uprobe at the address (as the file is linked) in the function holding
// it, its $vars those in scope there where the DWARF says.
func addressStatement(k KernelInfo, objects *objectCache, p *Point, path string, prologue *syntax.Block, addr uint64) ([]*Point, error) {
	obj, regs, err := debugObject(objects, path)
	if err != nil {
		return nil, err
	}
	fn, ok := containing(obj.Funcs, addr)
	if !ok {
		return nil, errorf("cannot probe statement %#x: no function of %s holds it", addr, obj.Path)
	}
	site := userSite{objects: objects, obj: obj, regs: regs, fn: fn, addr: addr, event: fn.Name}
	q, err := site.probe(k, p, prologue, "statement", "", true)
	if err != nil {
		return nil, err
	}
	for _, c := range q.Components {
		if c.Name == "statement" {
			c.Arg = &syntax.NumberLit{Typed: syntax.Typed{Pos: c.Pos}, Value: int64(addr), Text: fmt.Sprintf("%#x", addr)}
		}
	}
	return []*Point{q}, nil
}

// nearestSpan is how many lines past the one asked .nearest looks.
const nearestSpan = 100

// nearestOf keeps of lines those of the lowest line number.
func nearestOf(lines []debuginfo.Line) []debuginfo.Line {
	if len(lines) == 0 {
		return nil
	}
	next := slices.MinFunc(lines, func(a, b debuginfo.Line) int { return cmp.Compare(a.Line, b.Line) }).Line
	return slices.DeleteFunc(lines, func(l debuginfo.Line) bool { return l.Line != next })
}

func lineRange(first, last int) string {
	if first == last {
		return strconv.Itoa(first)
	}
	return fmt.Sprintf("%d-%d", first, last)
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// containing is the function of fns whose code holds addr.
func containing(fns []elfsym.Func, addr uint64) (elfsym.Func, bool) {
	for _, fn := range fns {
		if fn.Addr <= addr && addr < fn.Addr+max(fn.Size, 1) && !fn.Indirect {
			return fn, true
		}
	}
	return elfsym.Func{}, false
}

// userSite is an address in a user function that the DWARF places a
// probe at: a statement's line, a label, an inlined copy's entry.
type userSite struct {
	objects *objectCache
	obj     *elfsym.Object
	regs    *arch.Regs  // the table the DWARF's locations are read with
	fn      elfsym.Func // the function whose code holds addr
	addr    uint64      // as obj is linked
	event   string      // the name the probe is attached under
}

// probe is the uprobe of point p at the site, concretely named with
// component's argument name, its $vars those the DWARF has in scope at
// the address; first asks whether the kernel can attach it at all.
func (s userSite) probe(k KernelInfo, p *Point, prologue *syntax.Block, component, name string, first bool) (*Point, error) {
	a := &attach.Point{Kind: attach.Uprobe, Event: s.event, Path: s.obj.Path, Offset: s.fn.Offset + s.addr - s.fn.Addr,
		PC: s.obj.PC(elfsym.Func{Addr: s.addr}), Regs: true, User: true, Func: &attach.Func{Name: s.event}}
	q, err := fileProbe(k, p, prologue, s.obj.Path, component, name, a, first)
	if err != nil {
		return nil, err
	}
	q.Context.user = programFunc(&s.objects.debug, s.obj, s.fn, s.regs, s.addr)
	return q, nil
}

// labelProbes are the probes of point p, process("PATH").function("F").
// label("L"), on the labels L (a wildcard) of the functions fns of obj
// that their DWARF names: a uprobe at each label's address, its $vars the
// parameters and the locals in scope there, named
// process("PATH").function("F").label("L").
func labelProbes(k KernelInfo, objects *objectCache, p *Point, prologue *syntax.Block, obj *elfsym.Object, fns []elfsym.Func) ([]*Point, error) {
	pattern := p.Arg("label").(*syntax.StringLit).Value
	regs, err := debugRegisters(obj)
	if err != nil {
		return nil, err
	}
	dbg, err := objects.debug.open(obj.Path)
	if err != nil {
		return nil, errorf("cannot find the labels of %s: %v", obj.Path, err)
	}
	var out []*Point
	for _, fn := range fns {
		d, err := dbg.FunctionAt(fn.Addr)
		if err != nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(d.Labels)) {
			if matched, _ := filepath.Match(pattern, name); !matched {
				continue
			}
			site := userSite{objects: objects, obj: obj, regs: regs, fn: fn, addr: d.Labels[name], event: fn.Name}
			q, err := site.probe(k, p, prologue, "function", fn.Name, len(out) == 0)
			if err != nil {
				return nil, err
			}
			out = append(out, concretePoint(q, "label", name))
		}
	}
	if len(out) == 0 {
		return nil, &Error{Msg: "no match", detail: func() string {
			return fmt.Sprintf(" (the DWARF of %s names no label %s in the functions matched)", obj.Path, pattern)
		}}
	}
	return out, nil
}

// debugObject is the symbol table of the file at path and the register
// table its DWARF's locations are read with.
func debugObject(objects *objectCache, path string) (*elfsym.Object, *arch.Regs, error) {
	obj, err := objects.open(path)
	if err != nil {
		return nil, nil, err
	}
	regs, err := debugRegisters(obj)
	return obj, regs, err
}

// debugRegisters is the register table a probe on obj reads the
// locations of its DWARF with: the host's, for a 64-bit program of its
// processor.
func debugRegisters(obj *elfsym.Object) (*arch.Regs, error) {
	regs := arch.Host()
	if regs == nil {
		return nil, errorf("bpftap has no register table for %s", runtime.GOARCH)
	}
	if i386, err := callingConvention(obj, regs); err != nil || i386 {
		return nil, cmpErr(err, errorf("cannot probe %s: bpftap reads the DWARF of 64-bit programs only", obj.Path))
	}
	return regs, nil
}

// inlineProbes are the probes of point p, process("PATH").function("F").
// inline, on the copies of the functions F matches (a wildcard) that the
// compiler inlined into others, as obj's DWARF places them: a uprobe at
// each copy's entry, its $vars the copy's parameters and locals, named
// process("PATH").function("F").inline.
func inlineProbes(k KernelInfo, objects *objectCache, p *Point, prologue *syntax.Block, obj *elfsym.Object) ([]*Point, error) {
	pattern := p.Arg("function").(*syntax.StringLit).Value
	regs, err := debugRegisters(obj)
	if err != nil {
		return nil, err
	}
	dbg, err := objects.debug.open(obj.Path)
	if err != nil {
		return nil, errorf("cannot find the inlined copies of %s: %v", pattern, err)
	}
	copies, err := dbg.Inlined(func(name string) bool {
		matched, _ := filepath.Match(pattern, name)
		return matched
	})
	if err != nil {
		return nil, errorf("cannot find the inlined copies of %s: %v", pattern, err)
	}
	var out []*Point
	for _, inl := range copies {
		host, ok := containing(obj.Funcs, inl.Entry)
		if !ok {
			continue
		}
		site := userSite{objects: objects, obj: obj, regs: regs, fn: host, addr: inl.Entry, event: inl.Name}
		q, err := site.probe(k, p, prologue, "function", inl.Name, len(out) == 0)
		if err != nil {
			return nil, err
		}
		q.Context.user.inline = inl
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, &Error{Msg: "no match", detail: func() string {
			return fmt.Sprintf(" (the DWARF of %s has no inlined copy of a function matching %s)", obj.Path, pattern)
		}}
	}
	return out, nil
}
