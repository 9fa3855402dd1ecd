package interp

import (
	"context"
	"github.com/bpftap/bpftap/internal/output"
	"time"

	"github.com/bpftap/bpftap/internal/tapset"
)

// Skipped probes.
//
// stap checks the count of skipped probes at the end of every probe run
// and, once it is past MAXSKIPPED while the session runs, puts the session
// in error with "Skipped too many probes": no end probes, the error probes,
// exit status 1. The kernel probes here are BPF programs, which cannot stop
// the session; the interpreter reads the count (Config.Skipped) every
// skipCheckInterval while the run lasts and once more when it ends, after
// the driver has detached the programs, so that the last skips count too.

// skipCheckInterval is how often a run compares the skipped probes with
// MAXSKIPPED.
const skipCheckInterval = 100 * time.Millisecond

// watchSkipped checks the skipped probes every skipCheckInterval until the
// session stops, ctx is done or the returned function is called, which
// returns once the checks have stopped (Config.Skipped is not called after).
func (in *Interp) watchSkipped(ctx context.Context) (stop func()) {
	if in.cfg.Skipped == nil {
		return func() {}
	}
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(skipCheckInterval)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-in.done:
				return
			case <-tick.C:
				in.mu.Lock()
				in.checkSkipped()
				in.mu.Unlock()
			}
		}
	}()
	return func() { close(quit); <-stopped }
}

// checkSkipped ends a running session in error once more probes were
// skipped than MAXSKIPPED allows, as stap's probe epilogue does (not with
// Config.SuppressErrors). The caller holds in.mu.
func (in *Interp) checkSkipped() {
	if in.cfg.Skipped == nil || in.cfg.SuppressErrors || in.state != stateRunning || in.cfg.Skipped() <= in.limits.MaxSkipped {
		return
	}
	in.flush()
	in.out.Diagnostic(&output.Diagnostic{Severity: output.Error, Kind: output.KindRuntime, Msg: tapset.MsgSkippedTooMany})
	in.errorSeen = true
	in.stop(stateError)
}
