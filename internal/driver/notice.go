package driver

import (
	"fmt"
	"strconv"

	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/tty"
)

// The notice of a silent run. Many scripts print nothing until their end
// probes run (a count by process printed at Ctrl-C): the terminal stays
// blank, and a new user cannot tell a run that traces from one that
// hangs. stap says nothing then; bpftrace prints "Attaching N probes..."
// before every run. bpftap says one line on standard error, in the words
// of bpftrace's tools ("Tracing ... Hit Ctrl-C to end."), once the begin
// probes ran and the probes are attached, and only when
//
//   - standard error is a terminal (never in a pipeline, a file, a test),
//   - the run goes on (no begin probe called exit()) by itself: no -c
//     command, whose output shows and whose end ends the run, no -F, no
//     exporter, no --monitor screen,
//   - and nothing would reach the terminal before the end: no probe
//     but end and error probes reaches (through the functions it calls)
//     a print of the print family, warn, log, error or system, or the
//     output goes to -o's files.
//
// Errors the run raises still print; the notice only ever comes first.

// outputBuiltins are the builtins besides the print family that write
// to the output or to standard error.
var outputBuiltins = map[string]bool{"warn": true, "log": true, "error": true, "__error_at_call": true, "system": true, "commit": true}

// announce prints the notice of a silent run, if it is one and still
// runs (done is closed once the script stops).
func (s *session) announce(prog *sema.Program, done <-chan struct{}) {
	if !tty.IsTerminal(s.stderr) || s.opts.Command != "" || s.opts.Flight || s.parent != nil || s.begun != nil ||
		s.opts.Output == "" && printsBeforeEnd(prog) {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	probes := output.Plural(len(prog.Probes), "probe")
	if s.opts.Timeout > 0 {
		fmt.Fprintf(s.stderr, "Tracing %s for %s s... Hit Ctrl-C to end sooner.\n", probes, strconv.FormatFloat(s.opts.Timeout, 'g', -1, 64))
		return
	}
	fmt.Fprintf(s.stderr, "Tracing %s... Hit Ctrl-C to end.\n", probes)
}

// printsBeforeEnd tells whether a probe that runs before the end of the
// run may print.
func printsBeforeEnd(prog *sema.Program) bool {
	return prog.Prints(func(p *sema.Probe) bool { return p.Family != "end" && p.Family != "error" },
		func(b *tapset.Builtin) bool { return outputBuiltins[b.Name] })
}
