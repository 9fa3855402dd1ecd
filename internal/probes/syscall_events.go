package probes

import "github.com/bpftap/bpftap/internal/parallel"

// syscallEvents is syscallEvent for each of names, in order, made in
// parallel: each call's entry reads the call's format file from tracefs
// and parses the call's prologue, a few hundred of each for syscall.*,
// about a fifth of its pass 2. The error is the first in names' order, as
// one goroutine would have met it.
func syscallEvents(k KernelInfo, p *Point, names []string, ret bool) ([]*Point, error) {
	return parallel.Map(len(names), func(i int) (*Point, error) { return syscallEvent(k, p, names[i], ret) })
}
