package driver

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Signals, as stapio handles them. SIGINT, SIGTERM, SIGHUP and SIGQUIT
// are caught from the start: before the begin probes run nothing has run,
// so bpftap says which pass the signal stopped and exits at once with
// status 1 (stap exits quietly; the kernel frees every BPF object with the
// process; the held -c command dies with it, never released; a long map
// creation or elaboration does not delay the exit); from the begin probes
// on they end the run, and the end probes run; the third one forces the
// exit even from a probe that never returns (the procfs mounts detached
// and the terminal restored first: beforeForcedExit). SIGPIPE is caught and dropped, not ignored: a write
// to a closed pipe then fails with EPIPE and the run ends as if
// interrupted, and the -c command, which inherits an ignored signal but
// not a caught one, starts with SIGPIPE's default action (with SIGPIPE
// ignored, a pipeline's writer whose reader is gone printed "write error:
// Broken pipe" instead of dying quietly).
type signals struct {
	stderr io.Writer
	ch     chan os.Signal
	pipe   chan os.Signal
	mu     sync.Mutex
	pass   int    // the pass running
	cancel func() // the run's, from the begin probes on
	caught int
	// atExit is done before a forced exit: the procfs mounts are
	// detached (a mount left behind answers ENOTCONN until unmounted),
	// --monitor's terminal restored. Undone entries are nil.
	atExit []func()
}

// stopSignals are the signals that end a run.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// forceExit is the number of signals after which bpftap exits at once.
const forceExit = 3

// catchSignals starts handling signals; stop ends it.
func catchSignals(stderr io.Writer) *signals {
	sig := &signals{stderr: stderr, ch: make(chan os.Signal, forceExit), pipe: make(chan os.Signal, 1)}
	signal.Notify(sig.ch, stopSignals...)
	signal.Notify(sig.pipe, syscall.SIGPIPE) // never read: signal drops what a full channel cannot take
	go sig.handle()
	return sig
}

func (sig *signals) handle() {
	for received := range sig.ch {
		sig.mu.Lock()
		sig.caught++
		cancel, caught, pass := sig.cancel, sig.caught, sig.pass
		sig.mu.Unlock()
		switch {
		case caught >= forceExit:
			sig.mu.Lock()
			atExit := slices.Clone(sig.atExit)
			sig.mu.Unlock()
			for _, f := range atExit {
				if f != nil {
					f()
				}
			}
			fmt.Fprintln(sig.stderr, "Too many interrupts received, exiting.") // stapio's words
			os.Exit(1)
		case cancel == nil:
			fmt.Fprintf(sig.stderr, "Interrupted by %s in pass %d (%s): nothing ran.\n",
				unix.SignalName(received.(syscall.Signal)), pass, passNames[pass])
			os.Exit(1)
		}
		cancel()
	}
}

// enter records that pass n is running, which an interruption names.
func (sig *signals) enter(n int) {
	sig.mu.Lock()
	sig.pass = n
	sig.mu.Unlock()
}

// arm makes the signals that end a run call cancel, at once when one
// already came.
func (sig *signals) arm(cancel func()) {
	sig.mu.Lock()
	sig.cancel = cancel
	caught := sig.caught
	sig.mu.Unlock()
	if caught > 0 {
		cancel()
	}
}

// beforeForcedExit makes a forced exit call f first, until undone.
func (sig *signals) beforeForcedExit(f func()) (undo func()) {
	sig.mu.Lock()
	sig.atExit = append(sig.atExit, f)
	i := len(sig.atExit) - 1
	sig.mu.Unlock()
	return func() {
		sig.mu.Lock()
		sig.atExit[i] = nil
		sig.mu.Unlock()
	}
}

func (sig *signals) stop() {
	signal.Stop(sig.ch)
	signal.Stop(sig.pipe)
}

// runContext returns the context of pass 5: cancelled by a signal once
// armed (signals.arm), a failed output (see outputSink), or the -T
// timeout.
func (s *session) runContext() (context.Context, context.CancelFunc) {
	parent := s.parent
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	if s.opts.Timeout <= 0 {
		return ctx, cancel
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Duration(s.opts.Timeout*float64(time.Second)))
	return ctx, func() { cancelTimeout(); cancel() }
}
