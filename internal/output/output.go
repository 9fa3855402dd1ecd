// Package output is the seam between a running script and what it outputs.
//
// The interpreter and the driver do not produce bytes: they hand a Writer
// typed events, one per thing a run outputs. A print-family call arrives
// as its compiled format and evaluated arguments, print(@hist_log(s)) as
// the statistic, log(msg) as the message, the end-of-run display of a
// global written and never read as the global's contents, a run-time
// error or warning as a Diagnostic with its position, records and stacks
// the kernel could not keep as a Loss, the closing count of errors and
// skipped probes as a Summary, -t's report as a HitReport, the attached
// programs as Attached, what a system() command printed as System, and
// switch_file() as SwitchFile. The print records of kernel probes arrive
// the same way, formatted with the format of the call they come from. A
// Writer decides the rendering: Text renders SystemTap's bytes, JSON one
// JSON object per event (docs/json-output.md); another back end is one
// more file, written without touching the interpreter or the driver.
//
// # Buffering
//
// stap flushes its print buffer at the end of every probe handler, so a
// handler's output is never interleaved with another's. The interpreter
// calls Flush there, after each batch of kernel records, and before it
// reports an error, so that output written before the error comes first.
// A Writer delivers nothing before Flush unless it must: it also writes
// once FlushSize bytes are buffered, so that a long handler or a burst of
// kernel records does not grow its buffer without bound. Diagnostics,
// losses and the summary are delivered at once (Text writes them to its
// diagnostics stream, as stap writes them to stderr).
//
// # Text
//
// Text renders each event as stap's module runtime does: a print-family
// call with format.Format.Exec, with printf's room (format.BufferSize) and
// the memory the call gives %m and %M; a histogram with format.Stat.AppendHist; a log
// message followed by a newline. A global is displayed one line per
// element, as the end probe stap synthesizes for it prints them with one
// printf each:
//
//	NAME=VALUE                      a long
//	NAME="VALUE"                    a string
//	NAME @count=0x0                 a statistic holding no value
//	NAME @count=N @min=N @max=N @sum=N @avg=N
//	NAME[KEY,KEY...]=VALUE          an array element (@count=... for statistics)
//
// Longs are written in decimal, strings in double quotes (keys and values
// alike) up to their first NUL byte, as printf's %s does; a line longer than
// format.BufferSize is cut there, as printf cuts its output.
//
// Errors and warnings go to the diagnostics stream as stap prints them
// ("ERROR: MSG near TOKEN at FILE:LINE:COL", "WARNING: MSG"), as do the
// loss warnings and the closing summary; the -t report and what system()
// commands print go to the output.
package output

import (
	"strings"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Writer receives what a run outputs, as typed events. The interpreter
// calls it under its lock, the driver before and after the run: a Writer
// is never called concurrently.
type Writer interface {
	// Print is one print-family call (print, printf, println, printd, printdln) with
	// its evaluated arguments and the memory its %m and %M dump (nil: none
	// can be read); the error is a run-time error of the call (a
	// *format.RunError names the argument at fault).
	Print(f *format.Format, args []format.Arg, mem format.Memory) error
	// Hist is print(@hist_log(s)) or print(@hist_linear(s, ...)).
	Hist(s *format.Stat) error
	// Log is log(msg).
	Log(msg string)
	// Global is the end-of-run display of a global written and never read.
	Global(g *Global)
	// Diagnostic is a run-time error or a warning.
	Diagnostic(d *Diagnostic)
	// Loss is records or stacks the kernel could not keep.
	Loss(l *Loss)
	// Summary closes the run: its errors and skipped probes.
	Summary(s *Summary)
	// HitReport is -t's report.
	HitReport(r []Hit)
	// Attached is the kernel programs attached when the run starts.
	Attached(a *Attached)
	// System is output of a command run by system().
	System(out []byte)
	// SwitchFile is switch_file(): what was written is delivered and the
	// output goes on to the next file of -o (a destination without files
	// ignores it, as stapio does without -o).
	SwitchFile() error
	// Flush delivers what was written since the last Flush (stap flushes at the end of every probe handler).
	Flush() error
}

// Severity tells an error from a warning.
type Severity int

// The severities of diagnostics.
const (
	Error Severity = iota
	Warning
)

// Kind names what raised a diagnostic, for a program that reads them
// (JSON's "kind"); Text shows no kind, as stap shows none.
type Kind string

// The kinds of diagnostics.
const (
	KindParse    Kind = "parse"    // pass 1: the script does not parse
	KindSemantic Kind = "semantic" // pass 2: elaboration and type checking
	KindCompile  Kind = "compile"  // passes 3 and 4: translation, the kernel programs' build
	KindRuntime  Kind = "runtime"  // a probe handler's run-time error (user-side or kernel)
	KindKernel   Kind = "kernel"   // loading, attaching, reading the kernel programs
	KindCommand  Kind = "command"  // the -c command: it cannot start, or it failed
	KindScript   Kind = "script"   // the script's own warn()
	KindOutput   Kind = "output"   // an output the run could not write (switch_file(), log lines)
	KindProcfs   Kind = "procfs"   // serving the procfs probes' files
)

// Diagnostic is an error or a warning of the run.
type Diagnostic struct {
	Severity Severity
	Kind     Kind
	Msg      string
	// Near is the token stap names after "near" ("operator '/'",
	// "identifier 'x'", "keyword"); "" when the message names none.
	Near string
	// At is where the error was raised; the zero Pos when nowhere.
	At syntax.Pos
	// Source shows the source line with a caret under At, as an error
	// of attaching a probe does.
	Source bool
	// Bare is written without "ERROR: " in text, as stap's child reports
	// a -c command it cannot exec ("CMD: REASON").
	Bare bool
	// Hint says how to write what the script seems to mean (a parse
	// error's: bpftrace's probes in SystemTap's syntax); "" when none.
	Hint string
}

// Loss is what the kernel could not keep during the run: Count records
// (What "transport": the ring buffer was full) or stacks ("stack", "user
// stack build-id": the stack maps were full), and the Option that raises
// the Limit named, from Size.
type Loss struct {
	What   string
	Count  int64
	Option string // "-s", "-D MAXSTACKS"
	Limit  string // "buffer size", "stack map size"
	Size   int64
}

// Summary is the run's count of errors and skipped probes; Reentrancy
// tells that skips are nested runs (-t reports them as such).
type Summary struct {
	Errors, Skipped int64
	Reentrancy      bool
}

// Hit is one probe's line of -t's report: how often it ran and its run
// times in ns.
type Hit struct {
	Probe                   string // the probe point as it resolved
	At                      syntax.Pos
	Hits                    int64
	Min, Avg, Max, Variance int64
	From                    string // the probe point the script wrote
	Index                   int
}

// Attached reports the kernel programs attached for the run: how many
// and, rendered, how long the passes so far took.
type Attached struct {
	Programs int
	Elapsed  string
}

// Global is the content of a global at the end of the run. A Writer reads
// it during the call only: its statistics may be the session's own.
type Global struct {
	Name string
	// Type is the type of the value: syntax.TypeLong, syntax.TypeString or
	// syntax.TypeStats.
	Type syntax.Type
	Keys []syntax.Type // the types of an array's keys; nil for a scalar
	// Elements are in the order stap displays them: an array's sorted by
	// value, descending (statistics by @count). A scalar has one element
	// without keys.
	Elements []Element
}

// Element is one value of a global: its keys in an array, and its value, a
// long or a string as format.Arg carries them, or for statistics its
// aggregate.
type Element struct {
	Key   []format.Arg
	Value format.Arg
	Stat  *format.Stat // statistics; an array element holds at least one value
}

// UnreadStrings begins the warning that ends a run whose kernel probes
// printed strings in user memory as their address (they could not read
// them: a page not in memory yet, or a bad address).
const UnreadStrings = "Number of user strings printed as their address (0x...)"

// WithoutUnreadWarning is a run's diagnostics got without the
// UnreadStrings warning when the expectation want has none. Whether the
// page of a path is in memory when a probe reads it depends on the page
// cache and the kernel's fault-around (the dynamic loader's first openat
// of a process reads as an address now and then): the test harnesses
// expect the warning where a test makes it happen, and ignore it where a
// script merely reads every path of its workload.
func WithoutUnreadWarning(got, want string) string {
	if strings.Contains(want, UnreadStrings) || !strings.Contains(got, UnreadStrings) {
		return got
	}
	var kept []string
	for _, line := range strings.SplitAfter(got, "\n") {
		if !strings.Contains(line, UnreadStrings) {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "")
}
