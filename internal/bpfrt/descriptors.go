package bpfrt

import "golang.org/x/sys/unix"

// descriptorMargin is what ReserveDescriptors leaves for the rest of the
// process: its output files, the commands it runs, the tracefs and perf
// files an attach opens on the way.
const descriptorMargin = 256

// ReserveDescriptors raises RLIMIT_NOFILE, where it is below, to n
// descriptors more than the margin: each program, map and link of a
// session is one, and a wildcard over a source file's functions on a
// kernel without kprobe_multi (Debian 12's 6.1) loads thousands of
// programs, where the hard limit is often 4096 (Go lifts the soft limit
// to it). Root may raise the hard limit too, up to fs.nr_open. Best
// effort: a load that runs out of descriptors says so (loadError).
func ReserveDescriptors(n int) {
	var lim unix.Rlimit
	want := uint64(n + descriptorMargin)
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil || lim.Cur >= want {
		return
	}
	lim.Cur = want
	lim.Max = max(lim.Max, want)
	unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
}
