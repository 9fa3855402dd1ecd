// Command getppid is the workload of the benchmark harness: it pins itself
// to one CPU, makes -n getppid system calls in a tight loop and prints the
// mean wall-clock cost of one call in nanoseconds.
//
// The calls go through RawSyscall, so the Go scheduler adds nothing to
// them; what a tracer attached to the system-call tracepoints adds shows
// up as the difference from an untraced run.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	n := flag.Int("n", 2_000_000, "number of getppid calls to time")
	cpu := flag.Int("cpu", 1, "CPU to pin the loop to")
	flag.Parse()
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(*cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		fmt.Fprintf(os.Stderr, "getppid: pinning to CPU %d: %v\n", *cpu, err)
		os.Exit(1)
	}
	loop(*n / 100) // warm up caches and branch predictors
	start := time.Now()
	loop(*n)
	fmt.Printf("%.3f\n", float64(time.Since(start).Nanoseconds())/float64(*n))
}

func loop(n int) {
	for range n {
		unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
	}
}
