// Package interp runs the user-side probes of an elaborated program (begin,
// end, error, never, timer.* and the stdin probes of input.char and
// input.line) with the semantics of SystemTap's
// module runtime, and implements every builtin of tapset.Builtins.
//
// # Life of a session
//
// A session moves through stap's states: starting (begin probes), running
// (timers), stopping (end probes) and error (error probes). The driver sees
// three moments:
//
//	in, err := interp.New(prog, interp.Config{Stdout: os.Stdout, Stderr: os.Stderr})
//	in.Begin()          // begin probes, by sequence number then definition order
//	// ... the driver attaches kernel probes, starts a -c command ...
//	in.Run(ctx)         // timers and stdin, until exit(), an error past MAXERRORS, or ctx is done
//	status := in.End()  // end probes (or error probes after a fatal error), closing warning
//
// Done() is closed as soon as the script asks to stop, so a driver that waits on
// something else (a target command) can stop waiting.
//
// Each probe handler runs atomically: stap locks every global a handler uses,
// and serialising all user-side handlers on one mutex gives the same results.
// Output goes to Config.Output as typed events (package output; stap's text
// by default) and is flushed when a handler ends, as stap flushes its print
// buffer at the end of every probe; warnings and errors are delivered at
// once, as events of the same writer. Duplicate warnings are printed once, as staprun does.
//
// # Values and errors
//
// Longs are int64 with wrapping arithmetic; strings hold at most MAXSTRINGLEN-1
// bytes and end at a NUL byte, like the runtime's char arrays; statistics are
// format.Stat aggregates. A run-time error (division by 0, array overflow,
// MAXACTION, error()) ends the handler, prints "ERROR: MSG near TOKEN" with
// stap's rendering of the token it last noted, and counts towards MAXERRORS;
// try/catch intercepts the catchable ones. With --suppress-handler-errors
// (Config.SuppressErrors) an error ends its handler and is only counted. The action budget (MAXACTION) and
// nesting limit (MAXNESTING) are accounted the way the translator's generated
// code accounts them, so scripts stop at the same statement as under stap.
//
// # Globals and arrays
//
// Globals are reached through the Scalar, Statistic and Array interfaces
// (storage.go): in memory by default, or in storage the driver supplies, such
// as BPF maps that kernel probes update. In-memory arrays keep their elements
// in a list, as the runtime does: unsorted foreach walks it in insertion
// order, a sorted foreach sorts the list in place (a stable merge sort on one
// column, or the runtime's partial sort when a limit of at most 30 is given),
// and a full wrapping array evicts the element at the head of the list.
// Statistics arrays are aggregated from per-CPU maps in hash order by stap;
// here they are iterated in insertion order too. Arrays in hash-ordered
// storage are walked in key order. A foreach walks a snapshot of the elements
// (stap refuses modifications of the array being iterated at translation
// time).
//
// # Kernel probes
//
// The print records and run-time errors of kernel probes reach the session
// through KernelPrint and KernelError (kernel.go): formatted, written in order
// with the handlers' output, and counted towards MAXERRORS like the
// interpreter's own.
//
// # Differences from stap
//
//   - Errors raised inside builtins name the call ("near identifier 'substr'
//     at <input>:...") where stap names the function's declaration in its
//     tapset file.
//   - The current process of a user-side probe is bpftap itself (stap's is
//     staprun for begin and end probes, and whatever runs when a timer fires).
//   - The kernel memory readers (kernel_string, kernel_long ..., printf's
//     %m and %M) read through a BPF program run on demand (package kmem):
//     exactly what a kernel probe may read. User memory has no process to read: user_string
//     reports stap's fault error, user_long and friends return 0.
//   - probefunc() is "" in user-side probes.
//   - Regular expressions use Go's engine in leftmost-longest mode, so they
//     match runes of UTF-8 text rather than bytes.
//   - The default MAXNESTING of a script whose functions call each other in
//     a cycle other than a ring can be a little higher than stap's
//     (nesting.go): stap walks every chain of calls, which takes
//     exponential time.
//   - The end-of-run display of a global written and never read is no
//     script code (sema.Probe.Display; display.go) and charges no actions:
//     stap's module runtime can fail with MAXACTION exceeded displaying a
//     very large array; bpftap always displays it.
package interp

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Config is what a session needs from its driver.
type Config struct {
	// Output receives what the run outputs: what the script prints, its
	// errors and warnings, what system() commands print (nil:
	// output.NewText(Stdout, Stderr)).
	Output output.Writer
	// Stdout and Stderr are where the default Output writes; the commands
	// of system() write their errors to Stderr.
	Stdout, Stderr io.Writer
	// Stdin feeds the procfs("__stdin").write probes (input.char,
	// input.line; input.go); nil: no input.
	Stdin io.Reader
	// Limits are the run-time limits (-D); the zero Limits are stap's
	// defaults.
	Limits tapset.Limits
	// Target is the pid of -x or -c (target()), 0 if none.
	Target int
	// Module is the run's module name (-m NAME, else stap_PID: the
	// driver's), which module_name() returns.
	Module string
	// Now is the clock (nil: time.Now); tests fix it.
	Now func() time.Time
	// Seed seeds randint (0: random).
	Seed uint64
	// Storage, if set, supplies the storage of the globals the driver keeps
	// outside the interpreter (BPF maps shared with kernel probes; see
	// Storage for the contract). It returns the zero Storage for a global
	// kept in memory. Initialisers and -G values are stored through it.
	Storage func(g Global) Storage
	// Timing measures every run of a user-side probe (-t; see Interp.Timing).
	Timing bool
	// Skipped, if set, returns the number of kernel probe runs skipped
	// (stap's skipped probes): past MAXSKIPPED the run ends in error
	// (skipped.go); the closing warning reports them.
	Skipped func() int64
	// HandlerStart, if set, is called before each user-side probe handler
	// runs (see Storage: what a storage learnt of the kernel's maps).
	HandlerStart func()
	// SuppressErrors is --suppress-handler-errors: a run-time error ends
	// its handler quietly, as if the handler were in try { } catch {
	// next }, and is only counted (the closing warning reports it); the
	// run goes on past MAXERRORS and MAXSKIPPED.
	SuppressErrors bool
	// Prepared, if set, is Prepare's work on the same program, made
	// beforehand (the driver makes it while the kernel verifies the
	// programs); nil: New prepares the program itself.
	Prepared *Prepared
}

// session states, as in stap's runtime.
const (
	stateStarting = iota
	stateRunning
	stateStopping
	stateError
)

// Interp is one run of a program.
type Interp struct {
	prog   *sema.Program
	cfg    Config
	limits tapset.Limits
	now    func() time.Time
	start  time.Time
	rng    *rand.Rand
	// scheduled is when runTimers started the timers' schedule, from
	// which each timer's periods count.
	scheduled time.Time

	mu       sync.Mutex // held while a handler runs
	state    int
	paused   bool // the timers do not fire (Pause)
	done     chan struct{}
	doneOnce sync.Once

	timing  map[*sema.Probe]*format.Stat // with Config.Timing
	globals []Storage
	formats map[*syntax.PrintCall]*format.Format
	// captures marks the print-family calls of kernel probes whose records
	// carry the arguments of Captured builtins or deferred string locals
	// (kernel.go); deferredFrame holds the leaves of the deferred local
	// being computed.
	captures      map[*syntax.PrintCall]bool
	deferredFrame frame
	regexps       map[*syntax.Binary]*regexpProg
	actions       *actionCounter

	maxNesting int
	// stack holds the key tuples, arguments and locals in use (see release),
	// printArgs the arguments of print-family calls being evaluated, parts
	// the operands of concatenations (concatParts), and frames the frames
	// of function calls by nesting depth, all reused.
	stack     []Value
	printArgs []format.Arg
	parts     []string
	frames    []*frame
	// builtinCall is the context of the running builtin.
	builtinCall callContext
	act         activation    // the running handler
	fr          *frame        // the running function or probe body
	out         output.Writer // Config.Output
	// commands system() queued, run after the handler's output
	pendingCommands []string
	spec            speculations // speculative.go
	pendingSwitch   bool         // switch_file() was called (runCommands)
	errors          int
	warned          map[string]bool
	errorSeen       bool

	// per-session builtin state
	tokenizeState tokenizer
	// procfsValue is $value as a procfs probe starts and ends, valueBuf
	// the bytes of the last string appended to it, valueRoom the most
	// bytes it holds in the running probe, and valueSize the length of
	// the last $value a read probe made (procfs.go).
	procfsValue string
	valueBuf    []byte
	valueRoom   int
	valueSize   int
	match       matchState
}

// New prepares a session for prog. It fails when the program uses something
// the interpreter cannot run (an invalid printf format, a bad histogram).
func New(prog *sema.Program, cfg Config) (*Interp, error) {
	if cfg.Limits == (tapset.Limits{}) {
		cfg.Limits = tapset.DefaultLimits()
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Output == nil {
		cfg.Output = output.NewText(cfg.Stdout, cfg.Stderr)
	}
	ready := cfg.Prepared
	if ready == nil || ready.prog != prog {
		ready = Prepare(prog)
	}
	if ready.err != nil {
		return nil, ready.err
	}
	in := &Interp{
		prog:     prog,
		cfg:      cfg,
		out:      cfg.Output,
		limits:   cfg.Limits,
		now:      cfg.Now,
		done:     make(chan struct{}),
		formats:  ready.formats,
		captures: ready.captures,
		regexps:  ready.regexps,
		actions:  ready.actions,
		warned:   map[string]bool{},
	}
	if in.now == nil {
		in.now = time.Now
	}
	if cfg.Timing {
		in.timing = map[*sema.Probe]*format.Stat{}
	}
	in.start = in.now()
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	in.rng = rand.New(rand.NewPCG(seed, seed>>1|1))
	in.maxNesting = int(in.limits.MaxNesting)
	if in.maxNesting == 0 {
		in.maxNesting = ready.nesting
	}
	if err := in.initGlobals(); err != nil {
		return nil, err
	}
	return in, nil
}

// Done is closed when the script asks to stop (exit(), abort(), too many errors).
func (in *Interp) Done() <-chan struct{} { return in.done }

func (in *Interp) stop(state int) {
	if in.state == stateStarting || in.state == stateRunning || state == stateError {
		if in.state != stateError {
			in.state = state
		}
	}
	in.doneOnce.Do(func() { close(in.done) })
}

// Begin runs the begin probes. Afterwards the session is running unless a
// begin probe called exit() or failed.
func (in *Interp) Begin() {
	for _, p := range in.probes("begin") {
		in.fire(p, stateStarting)
	}
	in.mu.Lock()
	if in.state == stateStarting {
		in.state = stateRunning
	}
	in.mu.Unlock()
}

// Run fires the timer probes, and the input probes for each byte of
// Config.Stdin, until the script stops or ctx is done.
func (in *Interp) Run(ctx context.Context) {
	if list := in.inputProbes(); len(list) > 0 && in.cfg.Stdin != nil {
		go in.feedInput(in.cfg.Stdin, list)
	}
	var timers []*sema.Probe
	for _, p := range in.prog.Probes {
		if !p.Kernel && p.Family == "timer" {
			timers = append(timers, p)
		}
	}
	stopWatch := in.watchSkipped(ctx)
	defer stopWatch()
	in.runTimers(ctx, timers)
}

// End stops the session, runs the end probes (or the error probes after a
// fatal error), prints the closing warning and returns the exit status: 1
// when any error was reported, as staprun does.
func (in *Interp) End() int {
	in.mu.Lock()
	in.checkSkipped()
	if in.state == stateStarting || in.state == stateRunning {
		in.state = stateStopping
	}
	in.mu.Unlock()
	in.doneOnce.Do(func() { close(in.done) })
	in.Flush()
	for _, p := range in.probes("end") {
		in.fire(p, stateStopping)
	}
	for _, p := range in.probes("error") {
		in.fire(p, stateError)
	}
	var skipped int64
	if in.cfg.Skipped != nil {
		skipped = in.cfg.Skipped()
	}
	// with -t every skip is a nested run, as stap's reentrancy
	in.out.Summary(&output.Summary{Errors: int64(in.errors), Skipped: skipped, Reentrancy: in.cfg.Timing})
	if in.errorSeen {
		return 1
	}
	return 0
}

// probes returns the user-side probes of a begin/end/error family in the order
// stap runs them: by sequence number, then in program order.
func (in *Interp) probes(family string) []*sema.Probe {
	var list []*sema.Probe
	for _, p := range in.prog.Probes {
		if !p.Kernel && p.Family == family {
			list = append(list, p)
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Sequence < list[j].Sequence })
	return list
}

// warn hands the output writer a warning of the kind unless the same
// text was already handed.
func (in *Interp) warn(kind output.Kind, msg string) {
	line := ensureNewline(msg)
	if in.warned[line] {
		return
	}
	in.warned[line] = true
	in.out.Diagnostic(&output.Diagnostic{Severity: output.Warning, Kind: kind, Msg: msg})
}

func ensureNewline(s string) string {
	if len(s) == 0 || s[len(s)-1] != '\n' {
		return s + "\n"
	}
	return s
}

// flush delivers the output written so far. Output the writer fails to
// deliver is lost; the script runs on.
func (in *Interp) flush() {
	in.out.Flush()
}
