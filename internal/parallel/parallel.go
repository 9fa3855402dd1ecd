// Package parallel runs start-up work that splits into independent items
// (the library files to parse or scan, the system calls' trace events to
// read, the programs to load) on as many goroutines as the process may
// run at once, each goroutine taking the next item left, so that one slow
// item does not hold back a whole share of the others.
package parallel

import (
	"runtime"
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

// Map returns f(i) for every i in [0, n), in order; the error is the
// first in that order, as a loop would have met it, and then no results.
func Map[R any](n int, f func(i int) (R, error)) ([]R, error) {
	out, errs := make([]R, n), make([]error, n)
	Each(n, func(i int) { out[i], errs[i] = f(i) })
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
