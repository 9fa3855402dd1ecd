package driver

import (
	"fmt"
	"io"

	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/kernelside"
	"github.com/bpftap/bpftap/internal/monitor"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/tty"
)

// --monitor[=INTERVAL] (package monitor). Where standard output is a
// terminal, the screen is made before pass 1, and the session's stdout
// and stderr become its streams, which pass straight through until it
// starts: once the begin probes ran, the probes are attached and the -c
// command released (which writes to the same streams). It ends when the
// run does (q, Ctrl-C, -T, exit(), the command's end), before the end
// probes print; the terminal is restored on every path: Close by the
// driver (deferred from Main too), Restore before a forced exit. The
// probes are timed as with -t (the screen shows their hits and run
// times); the report is printed only with -t. Where standard output is no
// terminal, --monitor does nothing, as in stap.

// newScreen makes --monitor's screen when standard output is a terminal,
// and returns what ends it.
func (s *session) newScreen() (end func()) {
	term := tty.File(s.stdout)
	if s.opts.Monitor == 0 || s.opts.LastPass != 5 || term == nil {
		return func() {}
	}
	s.screen = monitor.New(term, s.stdin, s.stdout, s.stderr)
	s.stdout, s.stderr = s.screen.Stdout(), s.screen.Stderr()
	return s.screen.Close
}

// timed tells whether the probes time their runs: -t, or a screen.
func (s *session) timed() bool { return s.opts.Timing || s.screen != nil }

// showScreen shows --monitor's screen, if any, until what it returns is
// called; q calls quit.
func (s *session) showScreen(prog *sema.Program, ks *kernelside.Session, in *interp.Interp, quit func()) (end func()) {
	if s.screen == nil {
		return func() {}
	}
	src := &monitorSource{prog: prog, ks: ks, in: in, stderr: s.stderr}
	err := s.screen.Start(monitor.Config{Interval: s.opts.Monitor, Module: s.module(), Source: src, Quit: quit, KeysToScript: in.ReadsInput()})
	if err != nil {
		fmt.Fprintf(s.stderr, "WARNING: --monitor: %v\n", err)
		return func() {}
	}
	undo := s.signals.beforeForcedExit(s.screen.Restore)
	return func() {
		s.screen.Close()
		undo()
	}
}

// monitorSource is the run as the screen sees it.
type monitorSource struct {
	prog   *sema.Program
	ks     *kernelside.Session
	in     *interp.Interp
	stderr io.Writer
}

func (m *monitorSource) Probes() []output.Hit { return probeHits(m.prog, m.ks, m.in) }

func (m *monitorSource) Globals(top int) []interp.Glance { return m.in.Glance(top) }

func (m *monitorSource) Reset() { m.in.ResetGlobals() }

// Pause pauses the kernel programs and the timers.
func (m *monitorSource) Pause(paused bool) {
	m.in.Pause(paused)
	if err := m.ks.Pause(paused); err != nil {
		fmt.Fprintf(m.stderr, "WARNING: --monitor could not pause the kernel probes: %v\n", err)
	}
}
