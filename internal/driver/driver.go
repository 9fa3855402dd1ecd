// Package driver is bpftap's command: it parses stap's command line and runs the
// passes in order, stopping where -p says:
//
//	pass 1  parse       the user's script (-e, file or stdin, plus -E scripts) and the tapset
//	                    library files it reaches (tapset.Index; every -I file)
//	pass 2  elaborate   resolve probes, aliases, functions and variables; infer types
//	pass 3  translate   kernel probes → BPF programs (package kernelside); -p3 lists them
//	pass 4  load        maps created, programs through the kernel's verifier
//	pass 5  run         begin probes, kernel programs attached, the -c command,
//	                    timers and kernel events, end probes
//
// Each pass reports failure as stap does ("Pass N: ... failed.  [man error::passN]")
// and exits with status 1; -v prints stap's pass lines with their times. -l and
// -L PROBE stop after pass 2 with the listing of what PROBE matched (listing.go).
package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/exporter"
	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/monitor"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	kern "github.com/bpftap/bpftap/internal/target"
)

// Version is the bpftap version, printed by --version.
const Version = "0.1"

// Main runs bpftap with the given arguments (without the program name) and returns
// the process exit status.
func Main(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runMain(argv, stdin, stdout, stderr, nil)
}

// runMain is Main, which then hands ran (when not nil) the session it
// ran, for tests to see what it did.
func runMain(argv []string, stdin io.Reader, stdout, stderr io.Writer, ran func(*session)) int {
	if len(argv) > 0 && argv[0] == "exporter" {
		return exporter.Main(argv[1:], runScript, stdout, stderr)
	}
	opts, err := parseArgs(argv)
	var usage *usageError
	if err != nil {
		fmt.Fprintln(stderr, err)
		if errors.As(err, &usage) {
			fmt.Fprintln(stderr, "Try '--help' for more information. [man stap]")
		}
		return 1
	}
	switch {
	case opts.Help:
		fmt.Fprint(stdout, helpText+stapOptionsHelp())
		return 0
	case opts.Version:
		fmt.Fprintf(stdout, "bpftap %s: SystemTap scripts compiled to eBPF (language of SystemTap %s)\n",
			Version, syntax.DefaultConfig().Version)
		return 0
	case opts.CleanCache:
		if err := kernel.CleanCache(opts.CacheDir); err != nil {
			fmt.Fprintf(stderr, "ERROR: cleaning the cache: %v\n", err)
			return 1
		}
		return 0
	}
	if err := applyRlimits(opts.Rlimits, stderr); err != nil {
		return 1
	}
	// a background -F bpftap's pipe, not for what it runs (system())
	flightReady := os.Getenv(flightReadyEnv)
	os.Unsetenv(flightReadyEnv)
	if !opts.Flight { // only the background copy of a -F bpftap has the pipe
		flightReady = ""
	}
	if opts.Flight && opts.LastPass == 5 && flightReady == "" {
		return flightRecorder(argv, stdin, stdout, stderr)
	}
	if opts.Example && opts.Script != "" && opts.Script != "-" {
		if opts.Script, err = findExample(examplesDir, opts.Script); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	s := &session{opts: opts, stdin: stdin, stdout: stdout, stderr: stderr, signals: catchSignals(stderr),
		flightReady: flightReady}
	defer s.signals.stop()
	defer s.newScreen()()
	if ran != nil {
		defer ran(s)
	}
	return s.run()
}

// session carries one invocation through the passes.
type session struct {
	opts           *Options
	stdin          io.Reader
	stdout, stderr io.Writer
	timer          passTimer
	signals        *signals
	// parent, if set, is the context pass 5 runs in (the exporter's), and
	// begun is called once the begin probes ran instead of serving the
	// procfs files (exporter.go).
	parent context.Context
	begun  func(*interp.Interp)
	// scripts are the user's scripts as read; partialLibrary: pass 1
	// parsed only the library files they reach (parse.go).
	scripts        []*syntax.Source
	partialLibrary bool
	// kernel is the kernel the probes are for: the running one, told to
	// lack the features the environment masks (BPFTAP_KERNEL_AS_OF,
	// BPFTAP_KERNEL_WITHOUT).
	kernel *kern.Kernel
	// flightReady is the descriptor of a background -F bpftap's pipe to
	// the first (flight.go), "" for none.
	flightReady string
	// badTapsets are the -I files pass 1 skipped, their parse errors
	// printed (parse.go).
	badTapsets []string
	// warned counts the warnings of pass 4 (warn).
	warned int
	// screen is --monitor's on a terminal, else nil (monitor.go).
	screen *monitor.Screen
	// events serves pass 2 the trace events' fields (cache.go);
	// cacheSaid are the reasons told why a cache was not used.
	events    *kernel.EventCache
	cacheSaid []string
	// programFile is the cache's file of the program: the one it was
	// read from, or saved to ("" for neither; programcache.go);
	// programCached says it was read.
	programFile   string
	programCached bool
}

func (s *session) run() int {
	s.timer.start()
	s.signals.enter(1)
	var err error
	if s.kernel, err = kern.Running(); err != nil {
		fmt.Fprintf(s.stderr, "ERROR: %v\n", err)
		return 1
	}
	if status, stop := s.beforePasses(); stop {
		return status
	}
	compiled := compiling()
	defer compiled()
	key := s.programKey()
	prog := s.cachedProgram(key)
	var user, libs []*syntax.File
	if prog == nil {
		if user, libs, err = s.parse(false); err != nil {
			return s.fail(1, err)
		}
		if status, stop := s.endPass1(user, libs); stop {
			return status
		}
	}
	s.signals.enter(2)
	startedTarget := s.startingTarget()
	defer func() { // a run that stops before pass 3 kills it
		if held, err := startedTarget(); err == nil {
			held.kill()
		}
	}()
	if prog == nil {
		if prog, err = s.pass2(key, user, libs); err != nil {
			return s.fail(2, s.privilegeFirst(err))
		}
	} else {
		printWarnings(s.stderr, prog)
	}
	// stap notes suppressed repetitions of warnings once the session is over.
	defer fmt.Fprint(s.stderr, prog.SuppressedText())
	if status, stop := s.endPass2(prog); stop {
		return status
	}
	s.signals.enter(3)
	limits, err := s.limits()
	if err != nil {
		return s.fail(3, err)
	}
	held, err := startedTarget()
	if err != nil {
		return s.fail(5, err)
	}
	defer held.kill() // kill is done once
	ks, err := s.translate(prog, limits, held.pid())
	if err != nil {
		return s.fail(3, err)
	}
	defer ks.Close()
	if s.opts.LastPass == 3 {
		ks.Fprint(s.stdout) // each kernel probe's BPF instructions
		return 0
	}
	s.signals.enter(4)
	// The interpreter's work on the program alone runs while the kernel
	// verifies the programs, on the CPU pass 4 leaves idle.
	prepared := make(chan *interp.Prepared, 1)
	go func() { prepared <- interp.Prepare(prog) }()
	if err := s.load(ks); err != nil {
		return s.fail(4, err)
	}
	if s.opts.PanicWarnings && s.warned > 0 {
		return s.failWarned(4)
	}
	if s.opts.LastPass == 4 {
		return 0
	}
	if err := held.held(); err != nil {
		return s.fail(5, err)
	}
	time.AfterFunc(runCollects, compiled)
	s.signals.enter(5)
	return s.execute(prog, ks, limits, held, <-prepared)
}

// The passes before the run allocate a lot and keep little (syscall.*:
// 360 probes elaborated into one, a program of 40,000 instructions), so
// the collector runs less often while a session compiles: at compilingGC
// percent syscall.* and syscall.*.return compile without a collection
// (15 MB allocated, 4 MB of it live at the end: at 400 % one collection
// started as its programs loaded, its marking beside the verifier on the
// second CPU; paired runs at 800 % took 0.94-0.98x the time and 0.91-0.93x
// the CPU of runs at 400 %). A
// small script never collects while compiling; syscall.*'s peak memory
// grows from 38.5 to 39.3 MiB, strace.stp's (two collections at 400 %, one
// now) from 43 to 47 MiB. The run collects as usual from its
// runCollects-th millisecond: restored at once, the percentage would have
// the collector start as the run does, to free what the compilation left,
// which a run that ends sooner (-c of a short command) never needs. The
// exporter compiles several scripts at once: the first session to start
// raises the percentage, the last to finish restores it.
const (
	compilingGC = 800
	runCollects = 100 * time.Millisecond
)

var compilingSessions struct {
	sync.Mutex
	n, saved int
}

// compiling raises the collector's percentage for a session that starts
// compiling and returns what restores it once the session is done (a
// second call does nothing).
func compiling() (done func()) {
	c := &compilingSessions
	c.Lock()
	if c.n == 0 {
		c.saved = debug.SetGCPercent(compilingGC)
	}
	c.n++
	c.Unlock()
	return sync.OnceFunc(func() {
		c.Lock()
		if c.n--; c.n == 0 {
			debug.SetGCPercent(c.saved)
		}
		c.Unlock()
	})
}

// beforePasses answers what ends bpftap before pass 1: --dump-*, and
// --check-version where it is refused.
func (s *session) beforePasses() (status int, stop bool) {
	if s.opts.Dump != "" {
		return s.dump(), true
	}
	if s.opts.CheckVersion {
		if err := s.checkVersion(); err != nil {
			fmt.Fprintln(s.stderr, err)
			return 1, true
		}
	}
	return 0, false
}

// endPass1 ends a pass 1 that succeeded: its -v line, -W, and -p1.
func (s *session) endPass1(user, libs []*syntax.File) (status int, stop bool) {
	s.timer.report(s, 1, fmt.Sprintf("parsed user script and %d library scripts", len(libs)))
	if s.opts.PanicWarnings && len(s.badTapsets) > 0 {
		return s.failWarned(1), true
	}
	if s.opts.LastPass == 1 {
		for _, f := range user {
			syntax.Fprint(s.stdout, f)
		}
		return 0, true
	}
	return 0, false
}

// pass2 elaborates the script, with the cache of the trace events, and
// saves the program in the cache of programs under key.
func (s *session) pass2(key string, user, libs []*syntax.File) (*sema.Program, error) {
	s.events = kernel.NewEventCache(s.opts.CacheDir, s.opts.Cache)
	looked := debuginfo.Looked()
	prog, err := s.analyze(user, libs)
	s.saveEvents()
	if err == nil {
		s.saveProgram(key, prog, len(libs) > 0, debuginfo.Looked() != looked)
	}
	return prog, err
}

// endPass2 ends a pass 2 that succeeded: its -v lines, -W, and the runs
// that stop there (-l, -L, -p2).
func (s *session) endPass2(prog *sema.Program) (status int, stop bool) {
	s.timer.report(s, 2, "analyzed script: "+programSummary(prog))
	if s.opts.PanicWarnings && (len(prog.Warnings) > 0 || prog.SuppressedWarnings > 0) {
		return s.failWarned(2), true
	}
	if s.verbose(2) > 0 {
		for _, plan := range prog.Plans {
			fmt.Fprintf(s.stderr, "Pass 2: %s\n", plan)
		}
	}
	if s.opts.List != nil {
		return s.list(prog), true
	}
	if s.opts.LastPass == 2 {
		printElaborated(s.stdout, prog)
		return 0, true
	}
	return 0, false
}

// passNames name the passes as stap's "Pass N: ... failed." lines do.
var passNames = [...]string{1: "parse", 2: "analysis", 3: "translation", 4: "compilation", 5: "run"}

// fail prints a pass's diagnostics and stap's closing lines for that pass: the
// diagnostics, "Pass N: NAME failed." (not in a listing, as stap), then the
// note about suppressed repetitions.
func (s *session) fail(pass int, err error) int {
	report, trailer := diagnostics(err)
	fmt.Fprint(s.stderr, ensureNewline(report))
	var semErrs *sema.Errors
	if pass == 2 && s.opts.KeepGoing && errors.As(err, &semErrs) {
		fmt.Fprint(s.stderr, semanticCatalog(semErrs.Diags))
	}
	if s.opts.List == nil {
		fmt.Fprintf(s.stderr, "Pass %d: %s failed.  [man error::pass%d]\n", pass, passNames[pass], pass)
	}
	fmt.Fprint(s.stderr, trailer)
	if s.opts.JSON {
		w := output.NewJSON(s.stdout)
		for _, d := range passDiagnostics(pass, err) {
			w.Diagnostic(d)
		}
		w.Flush()
	}
	return 1
}

// failWarned fails pass n under -W: its warnings, printed already, are
// errors, as in stap.
func (s *session) failWarned(n int) int {
	fmt.Fprintf(s.stderr, "Pass %d: %s failed.  [man error::pass%d]\n", n, passNames[n], n)
	return 1
}

// warn prints a warning of pass 4 (a -d object not found), which -W
// counts.
func (s *session) warn(msg string) {
	s.warned++
	fmt.Fprintf(s.stderr, "WARNING: %s\n", msg)
}

// diagnostics renders a pass's error. The parser's and the elaborator's error lists
// render themselves in stap's format; anything else is one line.
func diagnostics(err error) (report, trailer string) {
	var parseErrs syntax.ErrorList
	var semErrs *sema.Errors
	switch {
	case errors.As(err, &parseErrs):
		return parseErrs.Report(), suppressedNote(parseErrs.Suppressed())
	case errors.As(err, &semErrs):
		return semErrs.Text(), semErrs.SuppressedText()
	}
	return err.Error(), ""
}

func suppressedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("Number of similar error messages suppressed: %d.\nRerun with -v to see them.\n", n)
}

func ensureNewline(s string) string {
	if s != "" && s[len(s)-1] != '\n' {
		return s + "\n"
	}
	return s
}

// passKinds are the kinds of the diagnostics of a failed pass.
var passKinds = [...]output.Kind{1: output.KindParse, 2: output.KindSemantic, 3: output.KindCompile, 4: output.KindCompile}

// passDiagnostics are the diagnostics of a failed pass as --json writes
// them (after stap's text on stderr, which stays): the parser's errors
// (with stap's verdict on a script without declarations, "Input file
// '...' is empty.", as one more) and the elaborator's errors and warnings one by one with their
// positions, another error of pass 5 from its type (errorDiagnostic), of
// an earlier pass as one error of the pass's kind.
func passDiagnostics(pass int, err error) []*output.Diagnostic {
	var parseErrs syntax.ErrorList
	var semErrs *sema.Errors
	var ds []*output.Diagnostic
	switch {
	case errors.As(err, &parseErrs):
		for _, e := range parseErrs {
			ds = append(ds, &output.Diagnostic{Severity: output.Error, Kind: output.KindParse, Msg: e.Msg, At: e.Pos, Hint: e.Hint})
		}
	case errors.As(err, &semErrs):
		for _, d := range semErrs.Diags {
			ds = append(ds, &output.Diagnostic{Severity: severity(d.Warning), Kind: output.KindSemantic, Msg: d.Msg, Near: d.Tok, At: d.Pos})
		}
	case pass >= len(passKinds):
		ds = append(ds, errorDiagnostic(err))
	default:
		ds = append(ds, &output.Diagnostic{Severity: output.Error, Kind: passKinds[pass], Msg: failureMessage(err)})
	}
	return ds
}

func severity(warning bool) output.Severity {
	if warning {
		return output.Warning
	}
	return output.Error
}
