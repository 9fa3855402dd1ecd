package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
)

// perf.*.counter("NAME") points and @perf("NAME"). A counter point runs
// nothing (stap never calls its body): collectPerfCounters lists the
// program's counters, in the order of their points, as
// Program.PerfCounters, a name twice being stap's "duplicate counter
// name". @perf("NAME") in a probe becomes __perf_counter(n), the
// tapset's (perf_counter.stp), n the index of the counter of that name
// whose program is the probe's; a counter that names no program takes the
// first probe's that reads it, as stap's does.
//
// stap opens a counter on the task of each process of the program and
// reads that task's count. No BPF program can open a perf event, and
// bpf_perf_event_read_value reads only an event of the current CPU, so
// here a counter is an event counting on every CPU for every task, and
// perf_counter.stp keeps each thread's share at every context switch: the
// count @perf gives is the current thread's since the run began (stap's:
// since its task was found), in user and kernel mode.

// MaxPerfCounters is how many counters a script may have: the tapset
// keeps each counter's counts by thread in an array of its own
// (perf_counter.stp's __perf_total0 ...), which task storage holds.
const MaxPerfCounters = 8

// loweredOperators names the operators that become calls of tapset
// functions, by function, for diagnostics: the call shows as the
// operator the script wrote, as in stap.
var loweredOperators = map[string]string{"__perf_counter": "@perf"}

// collectPerfCounters lists the counters of the derived probes and
// empties the bodies of their points.
func (e *elab) collectPerfCounters() {
	for _, p := range e.prog.Probes {
		if p.Family != probes.PerfCounterFamily || p.Decl == nil {
			continue
		}
		c, err := probes.PerfCounterOf(probePoint(p))
		if err != nil {
			continue // reported when the point was matched
		}
		c.Pos = p.User.Position()
		if e.perfCounterNamed(c.Name) {
			e.rep.errorAt("perf", p.User.Components[0], "duplicate counter name")
			continue
		}
		if len(e.prog.PerfCounters) == MaxPerfCounters {
			e.rep.errorAt("perf", p.User.Components[0], fmt.Sprintf("too many perf counters: bpftap keeps at most %d (perf_counter.stp)", MaxPerfCounters))
			continue
		}
		if len(p.Body.Stmts) > 0 {
			e.rep.warnAt(p.Body.Stmts[0], "the body of a perf counter probe never runs: @perf(\""+c.Name+"\") reads the counter")
			p.Body = &syntax.Block{Pos: p.Body.Pos}
		}
		e.prog.PerfCounters = append(e.prog.PerfCounters, *c)
	}
}

// perfCounterNamed tells whether a counter has the name.
func (e *elab) perfCounterNamed(name string) bool {
	for _, c := range e.prog.PerfCounters {
		if c.Name == name {
			return true
		}
	}
	return false
}

// perfCounterIndex is the index of the counter name of program process,
// -1 for none; a counter of no program becomes process's.
func (e *elab) perfCounterIndex(name, process string) int {
	for i := range e.prog.PerfCounters {
		c := &e.prog.PerfCounters[i]
		if c.Name != name {
			continue
		}
		if c.Process == "" {
			c.SetProcess(process)
		}
		if c.Process == process {
			return i
		}
	}
	return -1
}

// perfCounter lowers @perf("NAME") in the probe being resolved.
func (s *scope) perfCounter(op *syntax.AtOp) syntax.Expr {
	name := op.Args[0].(*syntax.StringLit).Value
	zero := &syntax.NumberLit{Typed: syntax.Typed{Pos: op.Pos}}
	n, msg := s.perfCounterRead(name)
	if msg != "" {
		s.e.rep.errorAt("atop", op, msg)
		return zero
	}
	s.e.prog.PerfCounters[n].Read = true
	index := &syntax.NumberLit{Typed: syntax.Typed{Pos: op.Pos}, Value: int64(n)}
	return &syntax.Call{Typed: op.Typed, Name: "__perf_counter", Args: []syntax.Expr{index}}
}

// perfCounterRead is the index of the counter name the probe being
// resolved reads, or why it cannot read one.
func (s *scope) perfCounterRead(name string) (int, string) {
	notDefined := fmt.Sprintf("perf counter '%s' not defined", name)
	if !s.e.perfCounterNamed(name) {
		return 0, notDefined
	}
	if s.probe == nil {
		return 0, fmt.Sprintf("@perf(\"%s\") reads a counter in a probe of the counter's program, not in a function", name)
	}
	if !s.probe.Kernel {
		return 0, fmt.Sprintf("@perf(\"%s\") reads the counter of the thread a probe runs in: %s probes run in bpftap, in none of the program's", name, s.probe.Family)
	}
	process := probeProcess(s.probe)
	n := -1
	if process != "" {
		n = s.e.perfCounterIndex(name, process)
	}
	if n < 0 {
		return 0, notDefined
	}
	return n, ""
}

// probeProcess is the program a probe's point names (process("PATH"),
// resolved), "" for none.
func probeProcess(p *Probe) string {
	if path, ok := probePoint(p).Arg("process").(*syntax.StringLit); ok {
		return probes.ResolveExecutable(path.Value)
	}
	return ""
}

// probePoint is p's concrete point as the probes package reads one.
func probePoint(p *Probe) *probes.Point { return &probes.Point{Components: p.Point.Components} }

// perfDefined decides @defined(@perf("NAME")) in body before the
// operators are lowered: 1 where the probe reads the counter, else 0, as
// stap's @defined of an operator that does not resolve.
func (s *scope) perfDefined(body syntax.Node) {
	syntax.RewriteExprs(body, func(x syntax.Expr) syntax.Expr {
		d, ok := x.(*syntax.Defined)
		if !ok {
			return nil
		}
		op, ok := d.X.(*syntax.AtOp)
		if !ok || op.Name != "perf" {
			return nil
		}
		lit := &syntax.NumberLit{Typed: syntax.Typed{Pos: d.Pos}}
		if _, msg := s.perfCounterRead(op.Args[0].(*syntax.StringLit).Value); msg == "" {
			lit.Value = 1
		}
		return lit
	})
}
