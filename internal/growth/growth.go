// Package growth checks, in tests, that the work a function does grows
// linearly with the size of its input. Work is a count: the bytes the
// function allocates (Allocated), or steps it counts itself. A count,
// unlike a duration, does not change when other processes load the
// machine. A quadratic step (a source line copied into each of its errors,
// a pass over every function for each function) costs in proportion to
// the square of the size.
//
// Run a test counting bytes without t.Parallel: the count is the whole
// process's, and a top-level test that is not parallel runs alone.
package growth

import (
	"runtime"
	"testing"
)

// Allocated returns the bytes fn allocates (on the heap, in every goroutine).
func Allocated(fn func()) float64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc - before.TotalAlloc)
}

// Linear measures the cost of an input of each size, ascending, and fails
// t when the cost per unit of size at the largest exceeds that at the
// smallest more than slack times: sizes 8 times apart give 8 for
// quadratic work, about 1 (less, for a fixed cost) for linear work.
func Linear(t testing.TB, sizes []int, slack float64, cost func(n int) float64) {
	t.Helper()
	cost(sizes[0]) // what is done once (a library parsed, a cache filled) is not the input's
	perUnit := make([]float64, len(sizes))
	for i, n := range sizes {
		perUnit[i] = cost(n) / float64(n)
	}
	first, last := perUnit[0], perUnit[len(perUnit)-1]
	if last > slack*first {
		t.Errorf("cost per unit of size grows %.1f times from size %d to %d (at most %.1f): %.0f",
			last/first, sizes[0], sizes[len(sizes)-1], slack, perUnit)
	}
}
