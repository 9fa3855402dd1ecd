package kernelside

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/output"
)

// fillPerfCounters opens the counting events of the counters @perf reads,
// one for every task on each online CPU, and puts them in the counters'
// maps (bpfgen/perfcounter.go), which keep them open: an event the kernel
// cannot open is an error at the counter's point. A CPU brought online
// later has none: the counters count nothing there.
func (s *Session) fillPerfCounters() error {
	counters := s.mod.PerfCounters()
	if len(counters) == 0 {
		return nil
	}
	cpus, err := bpfrt.OnlineCPUs()
	if err != nil {
		return output.Failf("perf counters: %w", err)
	}
	for n, c := range counters {
		m := s.objs.shared[bpfgen.PerfCounterMap(n)]
		if !c.Read {
			continue
		}
		for _, cpu := range cpus {
			fd, err := bpfrt.OpenCounter(&c.Event, cpu)
			if err == nil {
				err = m.Put(uint32(cpu), uint32(fd))
				unix.Close(fd)
			}
			if err != nil {
				return &Error{Pos: c.Pos, Msg: fmt.Sprintf("perf counter '%s' on CPU %d: %v", c.Name, cpu, err), Err: err}
			}
		}
	}
	return nil
}
