package bpfgen_test

import (
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/kernelside"
)

// TestNestedForeach runs foreach loops and whole deletes in a system-call
// probe and in two probes that fire in hard-IRQ context on the same CPU
// (TestNestedUpdates' workload, CPU 0 alone), so that interrupts land
// inside loops and deletes. Every loop checks that it visits a's keys 0..7 exactly once, in
// order (unsorted: key order; and descending), while the interrupting
// programs run loops of their own over a and change its values; unsorted
// and sorted count the loops that did not. r is deleted whole in every
// run, gets a <<< 1 and is read: a read of a partial that a nested
// program sees half zeroed or half updated would find its count and sum
// differ (stat). A program that interrupted another's delete, update or
// read of r cannot read it exactly and ends its run there (nesting.go's
// guardedRead): every run that started and did not end must have been
// counted as a skipped probe.
func TestNestedForeach(t *testing.T) {
	requireBPF(t)
	prog := elaborate(t, `
global a, unsorted, sorted, stat, started, loops, irq, r
probe kernel.trace("raw_syscalls:sys_enter"), kernel.trace("timer:hrtimer_expire_entry"),
      kernel.trace("irq_vectors:local_timer_entry") {
  if (cpu() != 0) next
  started++
  if (!a[7]) for (i = 0; i < 8; i++) a[i] = 1
  a[gettimeofday_ns() % 8]++
  want = 0
  foreach (k in a) { if (k != want) unsorted++; want++ }
  if (want != 8) unsorted++
  want = 7
  foreach (v = [k-] in a limit 8) { if (k != want || v < 1) sorted++; want-- }
  if (want != -1) sorted++
  if (pp() != "kernel.trace(\"raw_syscalls:sys_enter\")") irq++
  delete r
  r <<< 1
  if (@count(r) != @sum(r)) stat++
  loops++
}
`)
	s := runInterrupted(t, prog, kernelside.Config{}, 3*time.Second)
	count := func(name string) int64 { return global(s, prog, name).Scalar.Load().Int }
	started, loops := count("started"), count("loops")
	unsorted, sorted, stat := count("unsorted"), count("sorted"), count("stat")
	r := global(s, prog, "r").Statistic.Total()
	if loops < 1000 || unsorted != 0 || sorted != 0 || stat != 0 || r.Count != r.Sum {
		t.Errorf("%d runs: %d unsorted walks and %d sorted walks went wrong, %d times @count(r) != @sum(r) after its delete; r's count %d, sum %d at the end",
			loops, unsorted, sorted, stat, r.Count, r.Sum)
	}
	if cut := started - loops; cut < 0 || cut > s.Skipped() {
		t.Errorf("%d runs started and %d ended, but only %d skips were counted", started, loops, s.Skipped())
	}
	t.Logf("%d runs, %d of them in IRQ context, %d cut short; %d skips counted", loops, count("irq"), started-loops, s.Skipped())
}

// TestNestedForeachSnapshot moves one unit between two elements of t in
// every hard-IRQ run, and sums t with a foreach in every system-call run:
// the sum is 800 at every moment between two IRQ runs, so a loop that saw
// some elements before an interrupt and others after it (a torn view,
// which stap's lock held for the whole loop rules out) finds another sum.
func TestNestedForeachSnapshot(t *testing.T) {
	requireBPF(t)
	prog := elaborate(t, `
global t, torn, sums, moves
probe kernel.trace("raw_syscalls:sys_enter"), kernel.trace("timer:hrtimer_expire_entry"),
      kernel.trace("irq_vectors:local_timer_entry") {
  if (cpu() != 0) next
  if (!t[7]) for (i = 0; i < 8; i++) t[i] = 100
  if (pp() != "kernel.trace(\"raw_syscalls:sys_enter\")") {
    x = gettimeofday_ns() % 8
    t[x]--
    t[(x + 3) % 8]++
    moves++
    next
  }
  sum = 0
  foreach (v = [k] in t) sum += v
  if (sum != 800) torn++
  sums++
}
`)
	s := runInterrupted(t, prog, kernelside.Config{}, 3*time.Second)
	count := func(name string) int64 { return global(s, prog, name).Scalar.Load().Int }
	sums, moves, torn := count("sums"), count("moves"), count("torn")
	if sums < 1000 || moves < 1000 || torn != 0 {
		t.Errorf("%d loops, %d moves: %d loops saw a torn array", sums, moves, torn)
	}
	t.Logf("%d loops, %d moves, %d skips counted", sums, moves, s.Skipped())
}
