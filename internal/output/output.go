// Package output is the seam between a running script and what it outputs.
//
// The interpreter does not produce bytes: it hands a Writer typed events,
// one per thing a script outputs. A print-family call arrives as its
// compiled format and evaluated arguments, print(@hist_log(s)) as the
// statistic, log(msg) as the message, and the end-of-run display of a
// global written and never read as the global's contents. The print
// records of kernel probes arrive the same way, formatted with the format
// of the call they come from. A Writer decides the rendering: Text renders
// SystemTap's bytes; a JSON mode or an exporter would be another Writer,
// written without touching the interpreter.
//
// # Buffering
//
// stap flushes its print buffer at the end of every probe handler, so a
// handler's output is never interleaved with another's. The interpreter
// calls Flush there, after each batch of kernel records, and before it
// reports an error, so that output written before the error comes first.
// A Writer delivers nothing before Flush unless it must: Text also writes
// once FlushSize bytes are buffered, so that a long handler or a burst of
// kernel records does not grow its buffer without bound.
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
package output

import (
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Writer receives what a script outputs, as typed events.
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
	// Flush delivers what was written since the last Flush (stap flushes at the end of every probe handler).
	Flush() error
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
