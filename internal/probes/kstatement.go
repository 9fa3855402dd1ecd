package probes

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/elfsym"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// kernel.statement("FUNC@FILE:LINE") and FUNC@FILE:FIRST-LAST, with
// .nearest, and module("M").statement(...) likewise: a kprobe at the
// first instruction of each source line the DWARF line table of the
// kernel, or of its module M, places in a function FUNC matches (a
// wildcard), from the kernel's debug package (KernelInfo.Debuginfo),
// attached by the function's name and the line's offset in it, as stap
// places them. Its $vars are the parameters and locals in scope there,
// read from the kprobe's registers and the kernel's memory where the
// DWARF's locations say (debugFunc, as a user statement's). The concrete
// point names the function, the file as the DWARF names it and the line:
// kernel.statement("vfs_read@fs/read_write.c:455").
//
// kernel.statement(ADDRESS) is a kprobe at the link-time address (as the
// debug file's vmlinux and System.map place it) in the function that
// holds it, its $vars those in scope there; with .absolute (guru mode
// only, as in stap) the address is the running kernel's, in
// /proc/kallsyms's terms, and the probe reads no DWARF; so is stap's
// dwarfless kprobe.statement(ADDRESS).absolute.
func kernelStatementFamily(k KernelInfo, cfg Config) *Family {
	paths := []string{"kernel.statement(number)", "kernel.statement(number).absolute", "kprobe.statement(number).absolute"}
	for _, base := range []string{"kernel.statement(string)", "module(string).statement(string)"} {
		paths = append(paths, base, base+".nearest")
	}
	return &Family{Name: "kernel.statement", Paths: paths, Kernel: true,
		Expand: func(p *Point) ([]*Point, error) {
			addr, ok := p.Arg("statement").(*syntax.NumberLit)
			switch {
			case ok && hasComponent(p, "absolute"):
				return absoluteStatement(k, cfg, p, uint64(addr.Value))
			case ok:
				return kernelAddressStatement(k, p, uint64(addr.Value))
			}
			return kernelStatements(k, p)
		}}
}

// kernelAddressStatement is the probe of kernel.statement(ADDRESS).
func kernelAddressStatement(k KernelInfo, p *Point, addr uint64) ([]*Point, error) {
	regs := arch.Host()
	if regs == nil {
		return nil, errorf("bpftap has no register table for %s", runtime.GOARCH)
	}
	dbg, err := k.Debuginfo("")
	if err != nil {
		return nil, errorf("cannot probe statement %#x: %v", addr, err)
	}
	entry, host, err := dbg.EntryContaining(addr)
	if err != nil {
		return nil, errorf("cannot probe statement %#x: %v", addr, err)
	}
	site := kernelSite{addr: addr, fn: elfsym.Func{Name: host, Addr: entry}}
	q, why, err := site.probe(k, concretePoint(p, "", ""), kernelDwarf{dbg, ""}, regs, true)
	if why != "" {
		err = errorf("cannot probe statement %#x: %s", addr, why)
	}
	if err != nil {
		return nil, err
	}
	return []*Point{q}, nil
}

// absoluteStatement is the probe of kernel.statement(ADDRESS).absolute: a
// kprobe at the running kernel's address, on the symbol that holds it.
func absoluteStatement(k KernelInfo, cfg Config, p *Point, addr uint64) ([]*Point, error) {
	if !cfg.Guru {
		return nil, errorf("absolute statement probe in unprivileged script; need stap -g (bpftap -g)")
	}
	event, offset, fn, err := k.KprobeAt(addr)
	if err != nil {
		return nil, errorf("cannot probe statement %#x: %v", addr, err)
	}
	a := &attach.Point{Kind: attach.Kprobe, Event: event, Offset: offset, Regs: true,
		Func: &attach.Func{Name: fn, FromEvent: event != fn}}
	if err := k.Attachable(a); err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	q := concretePoint(p, "", "")
	q.Context = &Context{kernel: k, Attach: a}
	return []*Point{q}, nil
}

func kernelStatements(k KernelInfo, p *Point) ([]*Point, error) {
	st, err := parseStatement(p.Arg("statement").(*syntax.StringLit).Value)
	if err != nil {
		return nil, err
	}
	regs := arch.Host()
	if regs == nil {
		return nil, errorf("bpftap has no register table for %s", runtime.GOARCH)
	}
	module, err := dwarfModule(p)
	if err != nil {
		return nil, err
	}
	dbg, err := k.Debuginfo(module)
	if err == nil {
		var lines []debuginfo.Line
		if lines, err = kernelLines(dbg, st, hasComponent(p, "nearest")); err == nil {
			return kernelLineProbes(k, p, st, kernelDwarf{dbg, module}, regs, lines)
		}
	}
	return nil, errorf("cannot probe statement %q: %v", st.spec, err)
}

// kernelLines are the addresses of the statement's lines: for a function
// named without a wildcard, in the units that hold its code only (the
// symbol table says where), not the kernel's thousands; for
// FUNC@FILE+N, the line N after each function's declaration, in it.
func kernelLines(dbg *debuginfo.File, st statementAt, nearest bool) ([]debuginfo.Line, error) {
	if st.relative > 0 {
		return relativeLines(dbg, st.pattern, st.file, st.relative, func(entry, addr uint64) bool {
			at, _, err := dbg.EntryContaining(addr)
			return err == nil && at == entry
		})
	}
	entries := dbg.FunctionSymbols(st.pattern)
	if strings.ContainsAny(st.pattern, "*?[") || len(entries) == 0 {
		return st.lines(dbg.Lines, nearest)
	}
	var out []debuginfo.Line
	for _, entry := range entries {
		lines, err := st.lines(func(file string, first, last int) ([]debuginfo.Line, error) {
			return dbg.LinesNear(entry, file, first, last)
		}, nearest)
		if err != nil {
			return nil, err
		}
		out = append(out, lines...)
	}
	return out, nil
}

// dwarfModule is the module a point of the kernel's DWARF names
// (module("M"): one module's name), "" for the kernel itself.
func dwarfModule(p *Point) (string, error) {
	m, ok := p.Arg("module").(*syntax.StringLit)
	switch {
	case !ok:
		return "", nil
	case strings.ContainsAny(m.Value, "*?["):
		return "", errorf("cannot probe %s: bpftap reads one module's DWARF for it; name the module (module(\"nfsd\"))", p.Name())
	}
	return m.Value, nil
}

// kernelDwarf is the DWARF of the kernel (module "") or of its module.
type kernelDwarf struct {
	*debuginfo.File
	module string
}

// kernelLineProbes are the probes of point p on lines.
func kernelLineProbes(k KernelInfo, p *Point, st statementAt, dbg kernelDwarf, regs *arch.Regs, lines []debuginfo.Line) ([]*Point, error) {
	copies := inlinedCopies{dbg: dbg.File, pattern: st.pattern}
	var out []*Point
	var unreached error
	seen := map[lineIn]bool{}
	for _, line := range lines {
		entry, host, err := dbg.EntryContaining(line.Addr)
		if errors.Is(err, debuginfo.ErrNoFunction) {
			continue
		}
		if err != nil {
			return nil, errorf("cannot probe statement %q: %v", st.spec, err)
		}
		name, inline := host, (*debuginfo.Function)(nil)
		if matched, _ := filepath.Match(st.pattern, host); !matched {
			if inline, err = copies.holding(entry, line.Addr); inline == nil {
				if err != nil {
					return nil, errorf("cannot probe statement %q: %v", st.spec, err)
				}
				continue
			}
			name = inline.Name
		}
		if seen[lineIn{line.File, line.Line, entry, inline}] {
			continue
		}
		seen[lineIn{line.File, line.Line, entry, inline}] = true
		site := kernelSite{addr: line.Addr, fn: elfsym.Func{Name: host, Addr: entry}, inline: inline}
		q, why, err := site.probe(k, concretePoint(p, "statement", fmt.Sprintf("%s@%s:%d", name, line.File, line.Line)), dbg, regs, len(out) == 0)
		switch {
		case err != nil:
			return nil, err
		case why != "": // another line may be in a function a kprobe reaches
			unreached = cmp.Or(unreached, errorf("cannot probe statement %s@%s:%d: %s", name, line.File, line.Line, why))
			continue
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, cmp.Or(unreached, st.noLine(dbg.File))
	}
	return out, nil
}

// kernelSite is where in the kernel a probe that reads its DWARF is: the
// link-time address addr, in the function fn (its DWARF entry), in its
// inlined copy inline where not nil, at its label where not "".
type kernelSite struct {
	addr   uint64
	fn     elfsym.Func
	inline *debuginfo.Function
	label  string
}

// probe makes q the probe at the site, in the kernel or its module whose
// DWARF dbg is: a kprobe on the symbol whose code holds the address, at
// its offset there (the function, or a part the compiler split off,
// foo.part.0 or foo.cold, as the kernel's symbols name them), its $vars
// those in scope there. Where no kprobe reaches the address by a
// symbol's name, why says so. The first probe of a point asks whether
// the kernel attaches kprobes at all.
func (s kernelSite) probe(k KernelInfo, q *Point, dbg kernelDwarf, regs *arch.Regs, first bool) (_ *Point, why string, _ error) {
	symbol, start, shared, ok := dbg.FunctionSymbolAt(s.addr)
	if !ok || shared {
		return nil, unreachable(symbol, ok), nil
	}
	a := &attach.Point{Kind: attach.Kprobe, Event: symbol, Module: dbg.module, Offset: s.addr - start, Regs: true, Func: &attach.Func{Name: symbol}}
	if first {
		if err := k.Attachable(a); err != nil {
			return nil, "", &Error{Msg: err.Error()}
		}
	}
	q.Context = &Context{kernel: k, Attach: a, user: &debugFunc{open: dwarfOf(k, dbg.module), object: dbg.Path,
		fn: s.fn, regs: regs, at: s.addr, inline: s.inline}}
	return q, "", nil
}

// inlinedCopies finds the inlined copies of the functions a statement's
// pattern matches, by the function they are in, each function's read
// once: stap's statement probes take the lines of a function's inlined
// copies too (6.1's do_sys_open runs in open(2) and openat(2) as a copy).
type inlinedCopies struct {
	dbg     *debuginfo.File
	pattern string
	by      map[uint64][]*debuginfo.Function
}

// holding is the copy in the function at entry that holds pc, nil if none.
func (c *inlinedCopies) holding(entry, pc uint64) (*debuginfo.Function, error) {
	if c.by == nil {
		c.by = map[uint64][]*debuginfo.Function{}
	}
	copies, ok := c.by[entry]
	if !ok {
		var err error
		copies, err = c.dbg.InlinedIn(entry, func(name string) bool {
			matched, _ := filepath.Match(c.pattern, name)
			return matched
		})
		if err != nil {
			return nil, err
		}
		c.by[entry] = copies
	}
	// the innermost: copies come outer first
	for i := len(copies) - 1; i >= 0; i-- {
		if copies[i].Holds(pc) {
			return copies[i], nil
		}
	}
	return nil, nil
}

// unreachable says why a kprobe cannot reach a line by its symbol's name.
func unreachable(symbol string, found bool) string {
	if !found {
		return "the kernel's symbol table names no function there"
	}
	return fmt.Sprintf("several kernel functions are named %s, and a kprobe attaches by name", symbol)
}
