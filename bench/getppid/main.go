// Command getppid is the workload of the benchmark harness: it pins itself
// to one CPU, makes -n getppid system calls in a tight loop and prints the
// mean wall-clock cost of one call in nanoseconds. -call lseek makes
// lseek(fd of /dev/null, 0, SEEK_CUR) calls instead: a call with arguments,
// for tracers that format them; -call faccessat makes
// faccessat(AT_FDCWD, "/nonexistent/bpftap-bench", F_OK) calls, whose path a
// tracer reads and quotes.
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
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	n := flag.Int("n", 2_000_000, "number of getppid calls to time")
	cpu := flag.Int("cpu", 1, "CPU to pin the loop to")
	call := flag.String("call", "getppid", "the call: getppid, lseek, umask or faccessat")
	clock := flag.String("clock", "wall", "what to time: wall (wall-clock) or thread (the thread's CPU time, which leaves out the time other work on a busy machine takes the CPU)")
	flag.Parse()
	nr, args := uintptr(unix.SYS_GETPPID), [3]uintptr{}
	if *call == "lseek" {
		f, err := os.Open("/dev/null")
		if err != nil {
			fmt.Fprintln(os.Stderr, "getppid:", err)
			os.Exit(1)
		}
		nr, args = unix.SYS_LSEEK, [3]uintptr{f.Fd(), 0, 1}
	}
	if *call == "umask" {
		nr, args = unix.SYS_UMASK, [3]uintptr{0o22, 0, 0}
	}
	if *call == "faccessat" {
		nr, args = unix.SYS_FACCESSAT, [3]uintptr{uintptr(unix.AT_FDCWD & 0xffffffff), uintptr(unsafe.Pointer(accessPath)), unix.F_OK}
	}
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(*cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		fmt.Fprintf(os.Stderr, "getppid: pinning to CPU %d: %v\n", *cpu, err)
		os.Exit(1)
	}
	now := wallNow
	if *clock == "thread" {
		now = threadNow
	}
	loop(*n/100, nr, args) // warm up caches and branch predictors
	start := now()
	loop(*n, nr, args)
	fmt.Printf("%.3f\n", float64(now()-start)/float64(*n))
}

// accessPath is the path -call faccessat asks about (a file that is not
// there: the call fails at once).
var accessPath, _ = unix.BytePtrFromString("/nonexistent/bpftap-bench")

func wallNow() int64 { return time.Now().UnixNano() }

// threadNow is the calling thread's CPU time in nanoseconds (the loop's
// thread: it is locked to its OS thread).
func threadNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		fmt.Fprintln(os.Stderr, "getppid:", err)
		os.Exit(1)
	}
	return ts.Nano()
}

func loop(n int, nr uintptr, args [3]uintptr) {
	for range n {
		unix.RawSyscall(nr, args[0], args[1], args[2])
	}
}
