package bpfrt

import (
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// EnableStats turns on the kernel's BPF run-time statistics (run count and
// cumulative run time of every program) until the returned Closer is
// closed. They cost two clock reads per program run, so they are enabled
// only for -t. Program.Stats (from *ebpf.Program) then reads a program's
// RunCount, RunTime and RecursionMisses (runs the kernel skipped because a
// BPF program was already running on the CPU: SystemTap's skipped probes).
func EnableStats() (io.Closer, error) {
	c, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return nil, fmt.Errorf("enable BPF run-time statistics: %w", err)
	}
	return c, nil
}
