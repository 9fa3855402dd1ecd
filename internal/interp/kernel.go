package interp

import (
	"strconv"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Kernel probes.
//
// Kernel probes run as BPF programs; what they print and the run-time errors
// they raise come back as records through a ring buffer, which the driver
// decodes and hands over here, in ring order. They are formatted and counted
// as the interpreter's own: print records with the format.Format compiled for
// their call (the same MAXSTRINGLEN, the same BufferSize room per call),
// errors with stap's "ERROR: MSG near TOKEN" line, towards MAXERRORS. Output
// is buffered and written when the driver calls Flush (after each batch of
// records), when the buffer grows large, and before the output of the next
// user-side handler, so that both stay in order. A record and a handler
// never interleave: each holds the session's lock.
//
// The driver drains the ring buffer and calls Flush before End, so that the
// end probes print after everything the kernel printed. Once too many errors
// stopped the session, later records are dropped: stap runs no handler
// after that.

// kernelFlushSize is how much kernel output is buffered at most.
const kernelFlushSize = 64 << 10

// KernelPrint formats a print record of a kernel probe: call is the
// print-family call it comes from (print, printf, println, printd, printdln),
// args its arguments, longs in Int and strings in Str. Strings are cut to
// MAXSTRINGLEN-1 bytes and at their first NUL byte, in place. A format error
// is reported as a run-time error at the argument, as in a user-side probe.
func (in *Interp) KernelPrint(call *syntax.PrintCall, args []format.Arg) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.state == stateError {
		return
	}
	for i := range args {
		args[i].Str = in.clip(args[i].Str)
	}
	if err := protect(func() { in.emit(call, nil, args) }); err != nil {
		in.flush()
		in.report(err)
	}
	if len(in.out) >= kernelFlushSize {
		in.flush()
	}
}

// KernelError reports a run-time error raised by a kernel probe: msg is the
// message (e.g. "division by 0", OverflowMessage(v)), at the token stap
// names after "near" (the operator, the indexed array), or the zero Pos.
// Output buffered before it is written first. Past MAXERRORS the session
// stops, as it does for user-side errors.
func (in *Interp) KernelError(msg string, at syntax.Pos) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.state == stateError {
		return
	}
	in.flush()
	in.report(&runError{Msg: msg, At: at})
}

// Flush writes the buffered kernel output.
func (in *Interp) Flush() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.flush()
}

// OverflowMessage is stap's error when array v is full.
func OverflowMessage(v *syntax.Var) string {
	if v.Decl != nil && v.Decl.Size > 0 {
		return "Array overflow, check size limit (" + strconv.FormatInt(v.Decl.Size, 10) + ")"
	}
	return "Array overflow, check MAXMAPENTRIES"
}

// KernelExit is exit() called by a kernel probe: the session stops as it
// does for exit() in a user-side probe.
func (in *Interp) KernelExit() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.stop(stateStopping)
}
