package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
)

// warnHWBreakpoints warns, as stap does, when the script asks for more
// hardware watchpoints (kernel.data) than a CPU has debug registers: the
// kernel refuses those past the last free register when they attach.
func (e *elab) warnHWBreakpoints() {
	n := 0
	for _, p := range e.prog.Probes {
		if p.Attach != nil && p.Attach.Perf != nil && p.Attach.Perf.BreakType != 0 {
			n++
		}
	}
	if n > probes.HWBreakpoints {
		e.rep.add(&Diagnostic{Warning: true, Msg: fmt.Sprintf("Too many hardware breakpoint probes requested for %s (%d vs. %d)",
			syntax.HostArch(), n, probes.HWBreakpoints)})
	}
}
