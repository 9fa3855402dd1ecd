package probes

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// syscallEvents is syscallEvent for each of names, in order, made by as
// many goroutines as the process may run at once: each call's entry reads
// the call's format file from tracefs and parses the call's prologue, a
// few hundred of each for syscall.*, about a fifth of its pass 2. The
// error is the first in names' order, as one goroutine would have met it.
func syscallEvents(k KernelInfo, p *Point, names []string, ret bool) ([]*Point, error) {
	out := make([]*Point, len(names))
	errs := make([]error, len(names))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(names)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(names); i = int(next.Add(1) - 1) {
				out[i], errs[i] = syscallEvent(k, p, names[i], ret)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
