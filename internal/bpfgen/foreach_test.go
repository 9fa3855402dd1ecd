package bpfgen_test

import (
	"testing"
	"time"
)

// TestNestedForeach runs foreach loops and whole deletes in a system-call
// probe and in two probes that fire in hard-IRQ context on the same CPU
// (TestNestedUpdates' workload, CPU 0 alone), so that interrupts land
// inside loops and deletes. Every loop checks that it visits a's keys 0..7 exactly once, in
// order (unsorted: key order; and descending), while the interrupting
// programs run loops of their own over a and change its values; bad
// counts a loop that did not. r is deleted whole in every run and gets a
// <<< 1 in every probe: a delete that an update interrupted half way
// would leave a partial whose count and sum differ.
func TestNestedForeach(t *testing.T) {
	requireBPF(t)
	prog := elaborate(t, `
global a, bad, loops, irq, r
probe kernel.trace("raw_syscalls:sys_enter"), kernel.trace("timer:hrtimer_expire_entry"),
      kernel.trace("irq_vectors:local_timer_entry") {
  if (cpu() != 0) next
  if (!a[7]) for (i = 0; i < 8; i++) a[i] = 1
  a[gettimeofday_ns() % 8]++
  want = 0
  foreach (k in a) { if (k != want) bad++; want++ }
  if (want != 8) bad++
  want = 7
  foreach (v = [k-] in a limit 8) { if (k != want || v < 1) bad++; want-- }
  if (want != -1) bad++
  loops++
  if (pp() != "kernel.trace(\"raw_syscalls:sys_enter\")") irq++
  delete r
  r <<< 1
  if (@count(r) != @sum(r)) bad++
}
`)
	s := runInterrupted(t, prog, 3*time.Second)
	loops := global(s, prog, "loops").Scalar.Load().Int
	bad := global(s, prog, "bad").Scalar.Load().Int
	r := global(s, prog, "r").Statistic.Total()
	if loops < 1000 || bad != 0 || r.Count != r.Sum {
		t.Errorf("%d runs, %d loops or statistics went wrong; r's count %d, sum %d", loops, bad, r.Count, r.Sum)
	}
	t.Logf("%d runs, %d of them in IRQ context, %d skips counted", loops, global(s, prog, "irq").Scalar.Load().Int, s.Skipped())
}
