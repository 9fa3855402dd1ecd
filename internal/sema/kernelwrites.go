package sema

import "github.com/bpftap/bpftap/internal/syntax"

// Writes to context variables. stap refuses an assignment to a $var
// (`$prev = 0`, `$p->pid++`) in pass 2 unless -g, when its kernel module
// writes the kernel's memory or registers. bpftap never does (a BPF
// program cannot, but for the few points whose kernel asks the program
// for a value), so it refuses the write in pass 2 either way: with stap's
// words without -g, with the reason with it.

// writeRefused is stap's message; writeRefusedGuru bpftap's with -g.
const (
	writeRefused     = "write to target variable not permitted"
	writeRefusedGuru = writeRefused + ": bpftap never writes the kernel's memory or registers " +
		"(a BPF program cannot; stap -g does it with a kernel module)"
)

// refuseKernelWrites reports each assignment to a context variable in the
// body of a kernel probe, at the variable.
func (e *elab) refuseKernelWrites(body *syntax.Block) {
	msg := writeRefused
	if e.opts.Guru {
		msg = writeRefusedGuru
	}
	syntax.Walk(body, func(n syntax.Node) bool {
		if v, ok := assignTarget(n).(*syntax.TargetVar); ok {
			e.rep.errorAt("lvalue", v, msg)
		}
		return true
	})
}
