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
// .nearest: a kprobe at the first instruction of each source line the
// kernel's DWARF line table places in a function FUNC matches (a
// wildcard), from the kernel's debug package (KernelInfo.Debuginfo),
// attached by the function's name and the line's offset in it, as stap
// places them. Its $vars are the parameters and locals in scope there,
// read from the kprobe's registers and the kernel's memory where the
// DWARF's locations say (debugFunc, as a user statement's). The concrete
// point names the function, the file as the DWARF names it and the line:
// kernel.statement("vfs_read@fs/read_write.c:455").
func kernelStatementFamily(k KernelInfo) *Family {
	return &Family{Name: "kernel.statement", Paths: []string{"kernel.statement(string)", "kernel.statement(string).nearest"},
		Kernel: true, Expand: func(p *Point) ([]*Point, error) { return kernelStatements(k, p) }}
}

func kernelStatements(k KernelInfo, p *Point) ([]*Point, error) {
	st, err := parseStatement(p.Arg("statement").(*syntax.StringLit).Value)
	if err != nil {
		return nil, err
	}
	if st.relative > 0 {
		return nil, errorf("cannot probe statement %q: bpftap takes FUNCTION@FILE+N in user programs only; name the line (FUNCTION@FILE:LINE)", st.spec)
	}
	regs := arch.Host()
	if regs == nil {
		return nil, errorf("bpftap has no register table for %s", runtime.GOARCH)
	}
	dbg, err := k.Debuginfo()
	if err == nil {
		var lines []debuginfo.Line
		if lines, err = kernelLines(dbg, st, hasComponent(p, "nearest")); err == nil {
			return kernelLineProbes(k, p, st, dbg, regs, lines)
		}
	}
	return nil, errorf("cannot probe statement %q: %v", st.spec, err)
}

// kernelLines are the addresses of the statement's lines: for a function
// named without a wildcard, in the units that hold its code only (the
// symbol table says where), not the kernel's thousands.
func kernelLines(dbg *debuginfo.File, st statementAt, nearest bool) ([]debuginfo.Line, error) {
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

// kernelLineProbes are the probes of point p on lines.
func kernelLineProbes(k KernelInfo, p *Point, st statementAt, dbg *debuginfo.File, regs *arch.Regs, lines []debuginfo.Line) ([]*Point, error) {
	copies := inlinedCopies{dbg: dbg, pattern: st.pattern}
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
		return nil, cmp.Or(unreached, st.noLine(dbg))
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

// probe makes q the probe at the site: a kprobe on the symbol whose code
// holds the address, at its offset there (the function, or a part the
// compiler split off, foo.part.0 or foo.cold, as the kernel's symbols
// name them), its $vars those in scope there. Where no kprobe reaches the
// address by a symbol's name, why says so. The first probe of a point
// asks whether the kernel attaches kprobes at all.
func (s kernelSite) probe(k KernelInfo, q *Point, dbg *debuginfo.File, regs *arch.Regs, first bool) (_ *Point, why string, _ error) {
	symbol, start, shared, ok := dbg.FunctionSymbolAt(s.addr)
	if !ok || shared {
		return nil, unreachable(symbol, ok), nil
	}
	a := &attach.Point{Kind: attach.Kprobe, Event: symbol, Offset: s.addr - start, Regs: true, Func: &attach.Func{Name: symbol}}
	if first {
		if err := k.Attachable(a); err != nil {
			return nil, "", &Error{Msg: err.Error()}
		}
	}
	q.Context = &Context{kernel: k, Attach: a, user: &debugFunc{open: k.Debuginfo, object: "the kernel",
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
