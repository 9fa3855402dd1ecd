package bpfgen_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/kernelside"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/bpftap/bpftap/internal/target/targettest"
	"golang.org/x/sys/unix"
)

// nestingScript updates every kind of per-CPU storage from a system-call
// probe and from two probes that fire in hard-IRQ context, all on the same
// keys, beside shared twins that count the same updates with atomic adds
// (the kernel reads the twins, so they are never promoted to per-CPU).
// Each probe point is a program of its own; an IRQ-context program runs
// in the middle of a system-call program whenever the interrupt arrives
// there.
const nestingScript = `
global cached, cachedTwin, scalar, scalarTwin, swap, swapTwin
global stat, statKeyed, hist, variance, statTwin, sumTwin
probe kernel.trace("raw_syscalls:sys_enter"), kernel.trace("timer:hrtimer_expire_entry"),
      kernel.trace("irq_vectors:local_timer_entry") {
  x = gettimeofday_ns() % 3
  cached[1]++; cachedTwin[1]++
  swap[x] += 2; swapTwin[x] += 2
  scalar++; scalarTwin++
  stat <<< x; statKeyed[x % 2] <<< x; hist <<< x; variance <<< x
  statTwin++; sumTwin += x
  if (cachedTwin[1] < 0 || scalarTwin < 0 || swapTwin[x] < 0 || statTwin < 0 || sumTwin < 0) printf("negative\n")
}
probe end { println(@variance(variance)); print(@hist_log(hist)) }
`

// TestNestedUpdates drives the programs of nestingScript on one CPU with
// a getppid loop and a thread that sleeps 1 µs at a time (an hrtimer
// interrupt per sleep), then checks that every per-CPU count equals its
// shared twin: no update was lost or counted twice when an interrupt's
// program ran inside another program's update.
func TestNestedUpdates(t *testing.T) {
	requireBPF(t)
	prog := elaborate(t, nestingScript)
	s := runInterrupted(t, prog, kernelside.Config{}, 3*time.Second)
	checkTwins(t, s, prog)
}

// TestNestedUpdatesAsOf510 is TestNestedUpdates for a kernel told to lack
// what Linux 5.10 lacks: plain atomic adds for the counts, min and max
// raised in the keys of each program's nesting depth (no
// compare-and-exchange), which must leave no raise skipped.
func TestNestedUpdatesAsOf510(t *testing.T) {
	requireBPF(t)
	prog := elaborate(t, nestingScript)
	k := targettest.Running(t).AsOf(target.Version{Major: 5, Minor: 10})
	s := runInterrupted(t, prog, kernelside.Config{Kernel: k}, 3*time.Second)
	// The updates that keep @variance are the only ones nesting can stop
	// (these programs never nest in themselves): a plain raise that gave
	// way to a nested one counted 380 more in 3 s here.
	if skipped := checkTwins(t, s, prog); s.Skipped() != skipped {
		t.Errorf("%d skips counted, %d of them not of the statistic that keeps @variance", s.Skipped(), s.Skipped()-skipped)
	}
}

// checkTwins compares the per-CPU globals of nestingScript with their
// twins. Updates of a statistic that keeps @variance may be skipped when
// programs nest (nesting.go); the skips must be counted. It returns how
// many were.
func checkTwins(t *testing.T, s *kernelside.Session, prog *sema.Program) int64 {
	t.Helper()
	for _, v := range prog.Globals {
		if (v.Name == "cached" || v.Name == "scalar" || v.Name == "swap") && !v.PerCPU {
			t.Fatalf("%s is not promoted to per-CPU storage: the test tests nothing", v.Name)
		}
	}
	long := func(name string, key ...int64) int64 {
		st := global(s, prog, name)
		if key == nil {
			return st.Scalar.Load().Int
		}
		v, _ := st.Array.Get(interp.Key{{Int: key[0]}})
		return v.Int
	}
	check := func(name string, got, want int64) {
		if got != want {
			t.Errorf("%s = %d, its shared twin counted %d (%+d)", name, got, want, got-want)
		}
	}
	check("cached[1]", long("cached", 1), long("cachedTwin", 1))
	check("scalar", long("scalar"), long("scalarTwin"))
	for x := range int64(3) {
		check(fmt.Sprintf("swap[%d]", x), long("swap", x), long("swapTwin", x))
	}
	count, sum := long("statTwin"), long("sumTwin")
	for _, name := range []string{"stat", "hist"} {
		total := global(s, prog, name).Statistic.Total()
		check("@count("+name+")", total.Count, count)
		check("@sum("+name+")", total.Sum, sum)
		if total.Min != 0 || total.Max != 2 {
			t.Errorf("@min(%s) = %d, @max = %d, want 0 and 2", name, total.Min, total.Max)
		}
	}
	var keyed int64
	for _, e := range global(s, prog, "statKeyed").Array.Elements() {
		keyed += e.Stat.Count
	}
	check("@count(statKeyed[*])", keyed, count)
	skipped := count - global(s, prog, "variance").Statistic.Total().Count
	if skipped < 0 || skipped > s.Skipped() {
		t.Errorf("@count(variance) is %d short of its twin, %d skips were counted", skipped, s.Skipped())
	}
	t.Logf("%d updates of each global; %d of the statistic that keeps @variance skipped; %d skips counted", count, skipped, s.Skipped())
	return skipped
}

// runInterrupted compiles prog with cfg, loads and attaches it, runs
// interruptedSyscalls for d and stops the session, which is closed when
// the test ends.
func runInterrupted(t *testing.T, prog *sema.Program, cfg kernelside.Config, d time.Duration) *kernelside.Session {
	t.Helper()
	s, err := kernelside.Compile(prog, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, step := range []func() error{s.Load, func() error { return s.Start(&recorder{}) }, s.Attach} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	interruptedSyscalls(t, d)
	if _, err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	return s
}

// interruptedSyscalls runs, for d, a getppid loop and a thread that sleeps
// 1 µs at a time, both on CPU 0, so that hrtimer interrupts keep arriving
// while the loop's system-call probes run.
func interruptedSyscalls(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	work := func(body func()) {
		defer wg.Done()
		runtime.LockOSThread() // the thread ends with the goroutine
		var cpu0 unix.CPUSet
		cpu0.Set(0)
		if err := unix.SchedSetaffinity(0, &cpu0); err != nil {
			errs <- err
			return
		}
		for time.Now().Before(deadline) {
			body()
		}
	}
	wg.Add(2)
	go work(func() {
		for range 1000 {
			unix.Getppid()
		}
	})
	go work(func() {
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		unix.Nanosleep(&unix.Timespec{Nsec: 1000}, nil)
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestNestedTaskStorage runs an array by thread (task-local storage) in
// the programs of a system-call probe and of two hard-IRQ probes, as
// TestNestedUpdates does. A program that interrupts another inside a
// task-storage helper cannot create its element (the kernel's recursion
// check; elements are created once per thread, so it happens a few times
// a run at most); it must skip the rest of its run and count it, so every
// run that started and did not complete is counted as a skipped probe,
// and a delete never loses an update.
func TestNestedTaskStorage(t *testing.T) {
	requireBPF(t)
	prog := elaborate(t, `
global mine, started, completed
probe kernel.trace("raw_syscalls:sys_enter"), kernel.trace("timer:hrtimer_expire_entry"),
      kernel.trace("irq_vectors:local_timer_entry") {
  started++
  mine[tid()] = started
  completed++
  if ([tid()] in mine) delete mine[tid()]
}
probe end { println(started, completed) }
`)
	for _, v := range prog.Globals {
		if v.Name == "mine" && !v.ByThread {
			t.Fatal("mine is not kept by thread: the test tests nothing")
		}
	}
	s := runInterrupted(t, prog, kernelside.Config{}, 2*time.Second)
	started := global(s, prog, "started").Scalar.Load().Int
	completed := global(s, prog, "completed").Scalar.Load().Int
	if started == 0 || completed > started || started-completed > s.Skipped() {
		t.Errorf("%d runs started, %d completed, %d skips counted", started, completed, s.Skipped())
	}
	t.Logf("%d runs started, %d completed, %d skips counted", started, completed, s.Skipped())
}
