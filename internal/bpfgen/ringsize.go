package bpfgen

import (
	"strings"

	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// QuietRingSize is the ring buffer of a module whose kernel probes print
// nothing (1 MiB, where DefaultRingSize is 4), unless -s sizes it: the
// ring then carries only error and exit records, a few dozen bytes each
// and each ending a probe, and the reader maps the ring's pages twice, so
// the larger ring would add 8 MiB to bpftap's resident memory for room
// nothing uses.
const QuietRingSize = 1 << 20

// defaultRingSize is the ring buffer of prog's module when -s does not
// size it.
func defaultRingSize(prog *sema.Program) int {
	if printsInKernel(prog) {
		return DefaultRingSize
	}
	return QuietRingSize
}

// printsInKernel tells whether a kernel probe of prog, or a function it
// calls, sends output records: a print-family call other than the
// sprint ones, or a call of a Deferred builtin (system, log, warn).
func printsInKernel(prog *sema.Program) bool {
	seen := map[*syntax.Func]bool{}
	var prints func(syntax.Node) bool
	prints = func(n syntax.Node) bool {
		return syntax.Any(n, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.PrintCall:
				return !strings.HasPrefix(n.Name, "s")
			case *syntax.Call:
				if b := sema.Builtin(n); b != nil && b.Kernel == tapset.Deferred {
					return true
				}
				if f := n.Func; f != nil && f.Decl != nil && !seen[f] {
					seen[f] = true
					return prints(f.Decl.Body)
				}
			}
			return false
		})
	}
	for _, p := range prog.Probes {
		if p.Kernel && prints(p.Body) {
			return true
		}
	}
	return false
}
