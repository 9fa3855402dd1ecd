package bpfgen

import (
	"github.com/bpftap/bpftap/internal/sema"
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
	return prog.Prints(func(p *sema.Probe) bool { return p.Kernel }, func(b *tapset.Builtin) bool { return b.Kernel == tapset.Deferred })
}
