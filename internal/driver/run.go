package driver

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/kernelside"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/procfs"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/tty"
)

// execute runs pass 5: begin probes, then the kernel programs are attached
// and the -c command released, timers and kernel events until the script
// exits, the command ends, the -T timeout expires or a signal arrives; then
// the programs are detached, the ring drained and the end probes run.
// prepared is interp.Prepare's of prog, made while the programs loaded.
func (s *session) execute(prog *sema.Program, ks *kernelside.Session, limits tapset.Limits, target *target, prepared *interp.Prepared) int {
	ctx, cancel := s.runContext()
	defer cancel()
	files, err := s.outputFiles()
	if err != nil {
		return s.fail(5, err)
	}
	sink := &outputSink{w: s.stdout, stderr: s.stderr, stop: cancel}
	if files != nil {
		defer files.Close()
		sink.w = files
	}
	out := s.newOutput(sink)
	in, err := interp.New(prog, interp.Config{Output: out, Stderr: s.stderr, Stdin: s.stdin, Limits: limits, Target: target.pid(), Module: s.module(),
		Storage: ks.Storage, Skipped: ks.Skipped, HandlerStart: ks.HandlerStart, Timing: s.timed(),
		SuppressErrors: s.opts.SuppressErrors, Prepared: prepared})
	if err != nil {
		return s.fail(5, err)
	}
	if s.verbose(5) > 0 {
		fmt.Fprintln(s.stderr, "Pass 5: starting run.")
	}
	if in.ReadsInput() {
		defer tty.KeysAsTyped(s.stdin)()
	}
	s.signals.arm(cancel) // until now nothing ran: a signal ends bpftap at once
	in.Begin()
	stopServing, attachErr := s.serveProcfs(in)
	defer stopServing()
	if attachErr == nil {
		attachErr = s.attach(ks, in, out)
	}
	released := attachErr == nil
	if attachErr != nil {
		in.KernelExit()
		out.Diagnostic(errorDiagnostic(attachErr))
	} else if err := failed(output.KindCommand, target.release(cancel)); err != nil {
		out.Diagnostic(errorDiagnostic(err))
		released = false
	}
	if released && s.flightReady != "" {
		flightDetach(s.flightReady)
	}
	endScreen := func() {}
	if released {
		endScreen = s.showScreen(prog, ks, in, cancel)
		s.announce(prog, in.Done())
	}
	in.Run(ctx)
	endScreen() // before the end probes print
	stopServing()
	s.stopKernel(ks, in, out)
	status := in.End()
	if attachErr != nil { // the end probes ran, as stap's do, but the run failed
		status = 1
	}
	if s.opts.Timing {
		out.HitReport(hitReport(prog, ks, in))
		out.Flush()
	}
	commandStatus := s.reportCommand(target, released, out)
	if !released { // a command that could not start failed the run
		status = max(status, commandStatus)
	}
	out.Flush()
	if sink.Failed() {
		status = 1
	}
	switch {
	case status != 0:
		fmt.Fprintln(s.stderr, "Pass 5: run failed.  [man error::pass5]")
	case s.verbose(5) > 0:
		fmt.Fprintf(s.stderr, "Pass 5: run completed in %s.\n", s.timer.elapsed())
	}
	return max(status, commandStatus)
}

// commandFailure follows stapio's warning about a -c command that ran
// and failed: the run did not fail, but the exit status is stap's.
const commandFailure = ": the -c command failed, the trace is complete (exit status 1, as stap's)"

// reportCommand reports a -c command that ended on its own with a failure
// and returns the exit status it gives bpftap: 1, as stap's, for a failure.
// One that ran (released) failed itself, which its line says; one whose
// exec failed (said already) failed the run too.
func (s *session) reportCommand(target *target, released bool, out output.Writer) (status int) {
	warning := target.finish()
	if warning == "" {
		return 0
	}
	if released {
		warning += commandFailure
	}
	out.Diagnostic(&output.Diagnostic{Severity: output.Warning, Kind: output.KindCommand, Msg: warning})
	return 1
}

// serveProcfs serves the files of the script's procfs probes (package
// procfs) in the module's directory, and over HTTP with --http; it
// returns what stops that, which may be called more than once.
func (s *session) serveProcfs(in *interp.Interp) (stop func(), err error) {
	files := in.ProcfsFiles()
	var stops []func()
	stop = func() {
		for _, f := range stops {
			f()
		}
		stops = nil
	}
	if s.begun != nil {
		s.begun(in)
		return stop, nil
	}
	if len(files) == 0 {
		return stop, nil
	}
	srv, err := procfs.Serve(procfs.Dir(s.module()), files, in)
	if err != nil {
		return stop, failed(output.KindProcfs, output.Failf("%w", err))
	}
	stops = append(stops, s.signals.beforeForcedExit(srv.Detach), srv.Stop)
	if s.opts.HTTP != "" {
		stopHTTP, err := procfs.ServeHTTP(s.opts.HTTP, procfs.Handler(files, in), s.stderr)
		if err != nil {
			return stop, failed(output.KindProcfs, output.Failf("--http %s: %w", s.opts.HTTP, err))
		}
		stops = append(stops, stopHTTP)
	}
	return stop, nil
}

// module is the module's name: -m NAME, else stap_PID.
func (s *session) module() string {
	if s.opts.Module != "" {
		return s.opts.Module
	}
	return fmt.Sprintf("stap_%d", os.Getpid())
}

// failure is an error of the run that the driver reports as a
// diagnostic, with the kind of what raised it; its text is stap's line
// ("ERROR: ..."), which the error it wraps renders.
type failure struct {
	kind output.Kind
	err  error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// failed wraps err, if any, as a failure of the kind.
func failed(kind output.Kind, err error) error {
	if err == nil {
		return nil
	}
	return &failure{kind, err}
}

// execError is the -c command's exec failure, which stap's child reports
// as "CMD: REASON", without "ERROR: ".
type execError struct{ command, reason string }

func (e *execError) Error() string { return e.command + ": " + e.reason }

// errorDiagnostic is the diagnostic of an error of the driver, from its
// type: a kernelside.Error with its position and source line; the -c
// command's exec failure bare; any other with the kind of the failure
// it is (a kernel error when it is none) and its message (failureMessage).
func errorDiagnostic(err error) *output.Diagnostic {
	var ke *kernelside.Error
	var ee *execError
	switch {
	case errors.As(err, &ke):
		return &output.Diagnostic{Severity: output.Error, Kind: output.KindKernel, Msg: ke.Msg, At: ke.Pos, Source: true}
	case errors.As(err, &ee):
		return &output.Diagnostic{Severity: output.Error, Kind: output.KindCommand, Msg: ee.Error(), Bare: true}
	}
	d := &output.Diagnostic{Severity: output.Error, Kind: output.KindKernel, Msg: failureMessage(err)}
	if f := (*failure)(nil); errors.As(err, &f) {
		d.Kind = f.kind
	}
	return d
}

// failureMessage is the message of err without the "ERROR: " that an
// output.Failure's text starts with (Text writes it again).
func failureMessage(err error) string {
	if f := (*output.Failure)(nil); errors.As(err, &f) {
		return f.Msg()
	}
	return err.Error()
}

// limits applies the -D NAME=VALUE settings to the interpreter's limits. Names
// that are not run-time limits only meant something to stap's C compiler and are
// accepted without effect.
func (s *session) limits() (tapset.Limits, error) {
	l := tapset.DefaultLimits()
	for _, d := range s.opts.Defines {
		name, value, ok := strings.Cut(d, "=")
		if !ok {
			continue
		}
		if _, err := l.Define(name, value); err != nil {
			return l, output.Failf("-D %s: %w", d, err)
		}
	}
	return l, nil
}

// outputFiles opens the files of -o FILE (and -S), which switch_file()
// switches; nil without -o: the output goes to standard output.
func (s *session) outputFiles() (*outputFiles, error) {
	if s.opts.Output == "" {
		return nil, nil
	}
	files, err := openOutputFiles(s.opts.Output, s.opts.OutputMB, s.opts.OutputFiles)
	if err != nil {
		return nil, output.Failf("%w", err)
	}
	return files, nil
}
