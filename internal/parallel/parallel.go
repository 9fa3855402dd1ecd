// Package parallel runs start-up work that splits into independent items
// (the library files to parse or scan, the system calls' trace events to
// read, the programs to load) on as many goroutines as the process may
// run at once, each goroutine taking the next item left, so that one slow
// item does not hold back a whole share of the others.
//
// Where the items' costs are known to differ a lot (syscall.* parses
// twelve library files, one of them 55 KB and half of the pass), the
// LargestFirst forms start them in decreasing size: the longest item then
// runs beside all the others instead of after them (the classic "longest
// processing time first" schedule, within 4/3 of the best).
package parallel

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Each calls f(i) for every i in [0, n) and returns when all have
// returned.
func Each(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// EachLargestFirst is Each with the items started in decreasing size
// (equal sizes in index order).
func EachLargestFirst(n int, size func(i int) int, f func(i int)) {
	sizes, order := make([]int, n), make([]int, n)
	for i := range n {
		sizes[i], order[i] = size(i), i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[b], sizes[a]) })
	Each(n, func(k int) { f(order[k]) })
}

// Map returns f(i) for every i in [0, n), in order; the error is the
// first in that order, as a loop would have met it, and then no results.
func Map[R any](n int, f func(i int) (R, error)) ([]R, error) {
	return collect(n, func(g func(int)) { Each(n, g) }, f)
}

// MapLargestFirst is Map with the items started as EachLargestFirst
// starts them; results and error are in index order.
func MapLargestFirst[R any](n int, size func(i int) int, f func(i int) (R, error)) ([]R, error) {
	return collect(n, func(g func(int)) { EachLargestFirst(n, size, g) }, f)
}

// collect runs f over [0, n) with each and gathers its results.
func collect[R any](n int, each func(func(int)), f func(i int) (R, error)) ([]R, error) {
	out, errs := make([]R, n), make([]error, n)
	each(func(i int) { out[i], errs[i] = f(i) })
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
