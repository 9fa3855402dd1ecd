package interp

import (
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Kernel probes.
//
// Kernel probes run as BPF programs; what they print and the run-time errors
// they raise come back as records through a ring buffer, which the driver
// decodes and hands over here, in ring order. They are formatted and counted
// as the interpreter's own: print records with the format.Format compiled for
// their call (the same MAXSTRINGLEN, the same BufferSize room per call),
// errors with stap's "ERROR: MSG near TOKEN" line, towards MAXERRORS. Output
// goes to the session's output writer after what handlers wrote before it,
// so that both stay in order; the writer delivers it when the driver calls
// Flush (after each batch of records), at the end of the next user-side
// handler, or by itself when its buffer fills (output.Text past 64 KiB). A
// record and a handler never interleave: each holds the session's lock.
//
// The driver drains the ring buffer and calls Flush before End, so that the
// end probes print after everything the kernel printed. Once too many errors
// stopped the session, later records are dropped: stap runs no handler
// after that.

// KernelPrint formats a print record of a kernel probe: call is the
// print-family call it comes from (print, printf, println, printd, printdln),
// args its arguments, longs in Int and strings in Str; for an argument that
// calls a Captured builtin (tapset.Captured), the call's arguments, depth
// first: the call is made here (captured); for one reading a deferred
// string local, the number of its assignment and the assignment's leaves
// (deferredValue). Strings are cut to
// MAXSTRINGLEN-1 bytes and at their first NUL byte, in place. A format error
// is reported as a run-time error at the argument, as in a user-side probe.
func (in *Interp) KernelPrint(call *syntax.PrintCall, args []format.Arg) {
	if !in.receive() {
		return
	}
	defer in.mu.Unlock()
	if err := protect(func() {
		if len(in.captures) > 0 && in.captures[call] { // no map lookup per record when nothing is captured
			args = in.captured(call.Args, args)
		} else {
			for i := range args {
				args[i].Str = in.clip(args[i].Str)
			}
		}
		in.emit(call, nil, args)
	}); err != nil {
		in.flush()
		in.report(err)
	}
}

// receive takes the session's lock for a kernel record; it tells whether
// the record is to be handled, and releases the lock when it is not (the
// session stopped in error).
func (in *Interp) receive() bool {
	in.mu.Lock()
	if in.state == stateError {
		in.mu.Unlock()
		return false
	}
	return true
}

// KernelCall makes a call of a Deferred builtin (tapset.Deferred: system,
// log, warn) that a kernel probe sent the arguments of: after the output
// written before it, as the probe made it; a command system() asks for
// runs at once, as it would at the end of a user-side handler. An
// argument calling a Captured builtin is computed here, as for a print.
func (in *Interp) KernelCall(call *syntax.Call, args []format.Arg) {
	if !in.receive() {
		return
	}
	defer in.mu.Unlock()
	var values []Value
	err := protect(func() {
		for _, a := range in.captured(call.Args, args) {
			values = append(values, Value(a))
		}
		in.callBuiltinIn(call, values, 0)
	})
	in.flush()
	in.runCommands()
	if err != nil {
		in.report(err)
	}
}

// captured computes the arguments exprs of a print-family call from the
// values a kernel probe sent: the value of an argument, or the values of
// the arguments of a Captured builtin's call, which is made here as a
// user-side probe would make it. A string is cut at MAXSTRINGLEN, but for
// a stack the call takes whole (sema.WholeStack).
func (in *Interp) captured(exprs []syntax.Expr, values []format.Arg) []format.Arg {
	args := make([]format.Arg, len(exprs))
	for i, e := range exprs {
		var v Value
		v, values = in.capturedValue(e, values, false)
		args[i] = format.Arg(v)
	}
	return args
}

// capturedValue computes e from the first of values, returning the rest;
// whole keeps a string value uncut.
func (in *Interp) capturedValue(e syntax.Expr, values []format.Arg, whole bool) (Value, []format.Arg) {
	if sites := in.deferredSites(e); sites != nil {
		return in.deferredValue(sites, values)
	}
	c, ok := e.(*syntax.Call)
	if !ok || !isCaptured(c) {
		v := Value(values[0])
		if !whole {
			v.Str = in.clip(v.Str)
		}
		return v, values[1:]
	}
	pid := 0
	if sema.Builtin(c).InProcess {
		pid, values = int(values[0].Int), values[1:]
	}
	args := make([]Value, len(c.Args))
	for i, a := range c.Args {
		args[i], values = in.capturedValue(a, values, sema.WholeStack(c, a))
	}
	v := in.callBuiltinIn(c, args, pid)
	if !isText(c) {
		v.Str = in.clip(v.Str)
	}
	return v, values
}

// deferredSites returns the functions of the assignments of the deferred
// string local e reads (sema.DeferPrinted), if it reads one.
func (in *Interp) deferredSites(e syntax.Expr) []*syntax.Func {
	if id, ok := e.(*syntax.Ident); ok && in.prog.Deferred != nil {
		return in.prog.Deferred[id.Var]
	}
	return nil
}

// deferredValue computes a deferred string local from the first of
// values, the number of the assignment that made it (0: none, ""), and
// the values of the assignment's leaves after it; it returns the rest.
// The function's `return E` runs as the probe's assignment would (the
// functions E calls nest as they would there), with a MAXACTION of its
// own.
func (in *Interp) deferredValue(sites []*syntax.Func, values []format.Arg) (Value, []format.Arg) {
	id := values[0].Int
	values = values[1:]
	if id < 1 || id > int64(len(sites)) {
		return Value{}, values
	}
	f := sites[id-1]
	fr := &in.deferredFrame // one record at a time, under the session's lock
	*fr = frame{locals: fr.locals[:0]}
	for _, v := range values[:len(f.Params)] {
		v.Str = in.clip(v.Str)
		fr.locals = append(fr.locals, Value(v))
	}
	in.act, in.fr = activation{remaining: 10 * in.limits.MaxAction, nesting: -1}, fr
	v := in.eval(f.Decl.Body.Stmts[0].(*syntax.ReturnStmt).Value)
	return v, values[len(f.Params):]
}

// isCaptured tells whether a kernel probe captured the arguments of c, a
// call of a Captured builtin.
func isCaptured(c *syntax.Call) bool {
	b := sema.Builtin(c)
	return b != nil && b.Kernel == tapset.Captured
}

// KernelError reports a run-time error raised by a kernel probe: msg is the
// message (e.g. tapset.MsgDivisionByZero, tapset.OverflowMessage(v)), at the token stap
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

// Flush delivers the kernel output written so far.
func (in *Interp) Flush() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.flush()
}

// KernelExit is exit() called by a kernel probe: the session stops as it
// does for exit() in a user-side probe.
func (in *Interp) KernelExit() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.stop(stateStopping)
}
