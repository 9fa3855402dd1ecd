package sema

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Serving the user's own kernel.trace("syscalls:sys_enter_*") (and
// sys_exit_*, or any set of more than traceMergeCalls syscalls:* events
// one probe reaches) from the raw syscall tracepoints. Each syscalls:*
// event is a perf event of its own, and the kernel closes them one after
// another, each behind an RCU grace period under event_mutex: 360 of them
// took 12 s to detach. The kernel runs every one of them from the same
// raw tracepoint (raw_syscalls:sys_enter, sys_exit), skipping compat calls
// (x86_64's ARCH_TRACE_IGNORE_COMPAT_SYSCALLS) and numbers it has no event
// for, so one program there, behind the same tests, sees what they see:
//
//	__tp_nr = $id                       ($regs->orig_ax at sys_exit)
//	if (__tp_nr < 257) { ... } else { if (__tp_nr == 257) { __tp_pp = "kernel.trace(\"syscalls:sys_enter_openat\")"; __syscall_layout = 4 } else next }
//	if (__syscall_compat()) next
//	USER GUARDS                         (leading `if (pid() != target()) next`)
//	if (__syscall_layout < 3) ... else { if (__syscall_layout == 4) { USER BODY, openat's fields as registers } ... }
//
// The first tree of comparisons, on the call's number, keeps the calls of
// the set and sets what differs call by call and the body asks for (pp(),
// pn(), ppfunc(), $$name); the second runs the user's body rewritten for
// the call: $__syscall_nr is the number, each field ($dfd, $filename) the
// register of the syscall convention cut to its C type (as the entry's
// own record narrows it), $ret the raw tracepoint's, $$parms and $$vars a
// sprintf of those in the event's format, whose field names and values
// the first tree sets (callRewrite.parms). Calls whose rewritten bodies
// read alike share one copy (a body that reads no field is the same for
// every call, $$parms has one copy for each number of fields). A body that reads what the registers do
// not give (a field's members, @cast, a variable the event lacks, a
// kernel stack, a register) keeps every call on its own event; -v says
// which plan each point got and why.

// traceMergeCalls is the most syscalls:* events one probe keeps on their
// own: a raw tracepoint's program runs on every system call of the
// machine, where a call's own event costs the others nothing, but each
// event detached costs about 35 ms (bench/RESULTS-startup.md).
const traceMergeCalls = 4

// maxTraceLayouts is the most copies of the user's body one merged
// program holds: 289 copies of a printf of $$parms (one per set of field
// names, before the names became per-call locals) made a program too
// large for the kernel to patch its jumps ("cannot be patched due to
// 16-bit range").
const maxTraceLayouts = 32

// Locals the merged program sets: the call's number, and what differs
// call by call.
const (
	traceNrVar     = "__tp_nr"
	tracePPVar     = "__tp_pp"
	tracePNVar     = "__tp_pn"
	tracePPFuncVar = "__tp_ppfunc"
	traceEventVar  = "__tp_event"
)

// traceGroup is the syscalls:* events of one user probe on one side
// (entries or returns).
type traceGroup struct {
	decl *syntax.ProbeDecl
	exit bool
}

// mergeSyscallTraces serves each user probe's wide sets of syscalls:*
// events from the raw tracepoints and returns the first merged entry
// probe (which other entries may join), nil when none.
func (e *elab) mergeSyscallTraces() *Probe {
	groups := map[traceGroup][]*Probe{}
	var order []traceGroup
	for _, p := range e.prog.Probes {
		if event, ok := syscallTraceEvent(p); ok {
			k := traceGroup{p.Decl, strings.HasPrefix(event, "sys_exit_")}
			if groups[k] == nil {
				order = append(order, k)
			}
			groups[k] = append(groups[k], p)
		}
	}
	var leader *Probe
	for _, k := range order {
		merged := e.mergeTraces(groups[k], k.exit)
		if merged != nil && !k.exit && leader == nil {
			leader = merged
		}
	}
	return leader
}

// syscallTraceEvent returns the event of p when p is the user's own
// kernel.trace of a syscalls:* event of a call with a number.
func syscallTraceEvent(p *Probe) (string, bool) {
	a := p.Attach
	if a == nil || a.Kind != attach.Tracepoint || a.System != "syscalls" || p.Family != "kernel.trace" ||
		p.Script != p.Name || p.context == nil || p.Joins != nil {
		return "", false
	}
	if _, ok := probes.SyscallNumber(a.Event); !ok {
		return "", false
	}
	return a.Event, true
}

// mergeTraces replaces the probes of g (entries, or returns with exit) by
// one on the raw tracepoint, when there are enough of them and their body
// allows it, and says which plan they got.
func (e *elab) mergeTraces(g []*Probe, exit bool) *Probe {
	side := "entries"
	if exit {
		side = "returns"
	}
	entries := entriesOf(g)
	what := fmt.Sprintf("%s: the %s of %d system calls", userPointsOf(entries), side, len(g))
	if len(g) <= traceMergeCalls {
		if len(g) > 1 {
			e.prog.Plans = append(e.prog.Plans, fmt.Sprintf("%s on their own trace events (%d or fewer: the other calls pay nothing for them)", what, traceMergeCalls))
		}
		return nil
	}
	merged, note := e.traceProgram(g, exit)
	if merged == nil {
		e.prog.Plans = append(e.prog.Plans, fmt.Sprintf("%s on their own trace events: %s", what, note))
		return nil
	}
	e.prog.Plans = append(e.prog.Plans, fmt.Sprintf("%s share one program on %s (%s)", what, merged.Attach.Target(), note),
		fmt.Sprintf("%s: one program to load and detach rather than %d trace events, each detached behind an RCU grace period", userPointsOf(entries), len(g)))
	e.replaceProbes(entries, merged)
	return merged
}

// entriesOf wraps probes for replaceProbes.
func entriesOf(g []*Probe) []*syscallEntry {
	var s []*syscallEntry
	for _, p := range g {
		s = append(s, &syscallEntry{probe: p})
	}
	return s
}

// traceProgram builds the merged probe of g; nil and the reason when the
// kernel or the body does not allow it, else the probe and a note on its
// layouts.
func (e *elab) traceProgram(g []*Probe, exit bool) (*Probe, string) {
	first := g[0]
	wide := first.context.NativeSyscallEntries()
	if exit {
		wide = first.context.SyscallReturns()
	}
	if wide == nil {
		return nil, "the kernel has no BTF-typed raw_syscalls tracepoint to serve them from"
	}
	if first.Cond != nil && !pure(first.Cond) {
		return nil, "the probe's condition has side effects, which every other system call would run"
	}
	guards, rest := leadingGuards(first.Body)
	if why := e.unservable(first.Body); why != "" { // its guards too: they run on the raw tracepoint
		return nil, why
	}
	at := first.Point.Pos
	calls, shapes, why := traceCases(g, rest, exit, at)
	if why != "" {
		return nil, why
	}
	stmts := []syntax.Stmt{probes.SyscallNrInto(traceNrVar, exit), callDispatch(calls, at)}
	if wide.CompatSyscalls() {
		stmts = append(stmts, &syntax.IfStmt{Pos: at, Cond: compatCall(at), Then: &syntax.NextStmt{Pos: at}})
	}
	stmts = append(stmts, guards...)
	if len(shapes) == 1 {
		stmts = append(stmts, shapes[0].body)
	} else {
		stmts = append(stmts, dispatch(shapes, SyscallLayoutVar, at))
	}
	return mergedProbe(first, wide, stmts), fmt.Sprintf("%d argument layouts", len(shapes))
}

// traceCases are the cases of the two dispatches of g's merged probe: by
// call, what the call sets (its per-call locals, its copy's number), and
// the copies of the user's body (rest) by number; a reason when a call's
// copy cannot be written or there are too many copies.
func traceCases(g []*Probe, rest *syntax.Block, exit bool, at syntax.Pos) (calls, shapes []dispatchCase, why string) {
	var layouts layoutTable
	for _, p := range g {
		nr, _ := probes.SyscallNumber(p.Attach.Event)
		body, own, why := traceBody(p, rest, exit, at)
		if why != "" {
			return nil, nil, why
		}
		k := layouts.number(body)
		calls = append(calls, callCase(nr, own, k, at))
	}
	shapes = layouts.shapes
	if len(shapes) > maxTraceLayouts {
		return nil, nil, fmt.Sprintf("the body reads what differs in %d ways between the calls (more than the %d copies of it one program holds)", len(shapes), maxTraceLayouts)
	}
	if len(shapes) == 1 { // no layout to carry
		for _, c := range calls {
			c.body.Stmts = c.body.Stmts[:len(c.body.Stmts)-1]
		}
	}
	slices.SortFunc(calls, func(a, b dispatchCase) int { return a.key - b.key })
	return calls, shapes, ""
}

// callDispatch is the first dispatch, on the call's number; when no call
// sets anything, a test of the set alone: a balanced tree of comparisons
// over the runs of consecutive numbers (sys_enter_*'s 360 calls are a few
// dozen runs).
func callDispatch(calls []dispatchCase, at syntax.Pos) syntax.Stmt {
	var runs [][2]int
	for _, c := range calls {
		if len(c.body.Stmts) > 0 {
			return dispatch(calls, traceNrVar, at)
		}
		if n := len(runs); n > 0 && runs[n-1][1] == c.key-1 {
			runs[n-1][1] = c.key
		} else {
			runs = append(runs, [2]int{c.key, c.key})
		}
	}
	return inRuns(runs, at)
}

// inRuns leaves the probe unless the call's number is in one of runs
// (sorted, disjoint [first, last] pairs).
func inRuns(runs [][2]int, at syntax.Pos) syntax.Stmt {
	nr := func() syntax.Expr { return &syntax.Ident{Typed: syntax.Typed{Pos: at}, Name: traceNrVar} }
	cmp := func(op string, v int) syntax.Expr {
		return &syntax.Binary{Typed: syntax.Typed{Pos: at}, Op: op, X: nr(), Y: numberAt(v, at)}
	}
	if len(runs) == 1 {
		out := cmp("!=", runs[0][0])
		if runs[0][0] != runs[0][1] {
			out = &syntax.Binary{Typed: syntax.Typed{Pos: at}, Op: "||", X: cmp("<", runs[0][0]), Y: cmp(">", runs[0][1])}
		}
		return &syntax.IfStmt{Pos: at, Cond: out, Then: &syntax.NextStmt{Pos: at}}
	}
	mid := len(runs) / 2
	return &syntax.IfStmt{Pos: at, Cond: cmp("<", runs[mid][0]), Then: inRuns(runs[:mid], at), Else: inRuns(runs[mid:], at)}
}

// leadingGuards splits off the leading `if (COND) next` statements of
// body whose COND reads nothing that differs call by call: the merged
// program runs them once, before the per-call copies.
func leadingGuards(body *syntax.Block) (guards []syntax.Stmt, rest *syntax.Block) {
	n := 0
	for n < len(body.Stmts) {
		i, ok := nextIf(body.Stmts[n])
		if !ok || readsContext(i.Cond) || namesProbe(i.Cond) {
			break
		}
		n++
	}
	return body.Stmts[:n], &syntax.Block{Pos: body.Pos, Stmts: body.Stmts[n:]}
}

// pure tells whether x has no side effects (it assigns nothing and calls
// nothing): the merged probe may evaluate a condition that is for every
// system call, not only those of its set.
func pure(x syntax.Expr) bool {
	return !syntax.Any(x, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.Assign, *syntax.IncDec, *syntax.Call, *syntax.PrintCall:
			return true
		}
		return false
	})
}

// perCall are the calls whose value differs call by call, by the local
// that holds it in the merged program.
var perCall = map[string]string{"pp": tracePPVar, "pn": tracePNVar, "ppfunc": tracePPFuncVar}

// namesProbe tells whether n calls pp(), pn() or ppfunc().
func namesProbe(n syntax.Node) bool {
	return syntax.Any(n, func(n syntax.Node) bool {
		c, ok := n.(*syntax.Call)
		return ok && perCall[c.Name] != ""
	})
}

// contextBound are the builtins whose value depends on how the probe is
// attached (its kernel stack, its registers, its address): a body that
// calls one, or a function that does, keeps its own events.
var contextBound = map[string]bool{
	"addr": true, "caller_addr": true, "backtrace": true, "sprint_backtrace": true, "__backtrace_lines": true,
	"__stack_raw": true, "__callers": true, "task_backtrace": true,
	"register": true, "u_register": true, "returnval": true, "is_return": true, "user_mode": true,
	"__func_addr": true, "__context_var": true,
}

// unservable says why body cannot run on the raw tracepoint ("" when it
// can): an expression the registers do not give, or a call of a function
// that depends on the attachment.
func (e *elab) unservable(body syntax.Node) string {
	var why string
	seen := map[string]bool{}
	syntax.Any(body, func(n syntax.Node) bool {
		why = e.unservableNode(n, seen)
		return why != ""
	})
	return why
}

func (e *elab) unservableNode(n syntax.Node, seen map[string]bool) string {
	switch n := n.(type) {
	case *syntax.TargetVar:
		if len(n.Components) > 0 || n.AddrOf || n.Pretty > 0 {
			return fmt.Sprintf("the body reads %s, which the raw tracepoint's registers do not give", syntax.ExprString(n))
		}
	case *syntax.Cast, *syntax.Autocast, *syntax.Entry, *syntax.AtVar, *syntax.AtOp:
		return fmt.Sprintf("the body reads %s", syntax.ExprString(n.(syntax.Expr)))
	case *syntax.Call:
		return e.unservableCall(n.Name, seen)
	}
	return ""
}

// unservableCall is unservableNode for a call of name, following the
// script and tapset functions it reaches.
func (e *elab) unservableCall(name string, seen map[string]bool) string {
	if seen[name] {
		return ""
	}
	seen[name] = true
	if contextBound[name] {
		return fmt.Sprintf("the body calls %s(), which depends on how the probe is attached", name)
	}
	if _, ok := tapset.Builtins[name]; ok {
		return ""
	}
	decls := append(append([]*syntax.FuncDecl(nil), e.userFuncs[name]...), e.libFuncs[name]...)
	if len(decls) == 0 {
		return ""
	}
	for _, d := range decls {
		var why string
		syntax.Any(d.Body, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.Call); ok && perCall[c.Name] != "" {
				why = fmt.Sprintf("the body calls %s(), which calls %s()", name, c.Name)
			} else {
				why = e.unservableNode(n, seen)
			}
			return why != ""
		})
		if why != "" {
			return fmt.Sprintf("%s (through %s())", why, name)
		}
	}
	return ""
}

// callRewrite rewrites a copy of the user's body for one call of the set
// (p's event) and collects the statements that set the per-call locals
// the copy reads, which the first dispatch runs.
type callRewrite struct {
	p    *Probe
	args []attach.Arg // the entry's fields but __syscall_nr; nil at sys_exit
	exit bool
	at   syntax.Pos
	own  []syntax.Stmt
	set  map[string]bool // the per-call locals own sets
	why  string          // the first variable with no rewriting
}

// traceBody is a copy of body for p's call on the raw tracepoint, with
// what it reads of the call's event rewritten, and the statements that
// set the per-call locals it reads; a reason when a variable has no
// rewriting.
func traceBody(p *Probe, body *syntax.Block, exit bool, at syntax.Pos) (*syntax.Block, []syntax.Stmt, string) {
	r := &callRewrite{p: p, exit: exit, at: at, set: map[string]bool{}}
	if !exit {
		var err error
		if r.args, err = p.context.CallArgs(); err != nil {
			return nil, nil, err.Error()
		}
	}
	out := syntax.Clone(body)
	rewriteExprs(out, func(x syntax.Expr) (syntax.Expr, bool) {
		switch x := x.(type) {
		case *syntax.Call:
			if v := perCall[x.Name]; v != "" && len(x.Args) == 0 {
				return r.perCallString(v), true
			}
		case *syntax.TargetVar:
			return r.field(x), true
		}
		return x, false
	})
	return out, r.own, r.why
}

// perCallString is the local v (tracePPVar, ...), set to its value for
// the call.
func (r *callRewrite) perCallString(v string) syntax.Expr {
	value := map[string]string{tracePPVar: r.p.Name, tracePNVar: r.p.PN(), tracePPFuncVar: tapset.PPFunc(r.p.Name), traceEventVar: r.p.Attach.Event}[v]
	return r.perCall(v, &syntax.StringLit{Typed: syntax.Typed{Pos: r.at}, Value: value})
}

// perCall is the local name, set to value in the call's own statements.
func (r *callRewrite) perCall(name string, value syntax.Expr) syntax.Expr {
	if !r.set[name] {
		r.set[name] = true
		r.own = append(r.own, setLocal(name, value, r.at))
	}
	return &syntax.Ident{Typed: syntax.Typed{Pos: r.at}, Name: name}
}

// field is what x, a context variable of the call's event, is on the raw
// tracepoint: the call's number, an argument's register, $ret, the
// event's name, or for $$parms and $$vars their text; x itself, with
// r.why set, when the event lacks it.
func (r *callRewrite) field(x *syntax.TargetVar) syntax.Expr {
	at := x.Pos
	switch x.Name {
	case "$$name":
		return r.perCallString(traceEventVar)
	case "$$parms", "$$vars":
		return r.parms(x)
	case "$__syscall_nr":
		return &syntax.Ident{Typed: syntax.Typed{Pos: at}, Name: traceNrVar}
	case "$ret":
		if r.exit {
			return x
		}
	}
	if i := argIndex(r.args, x.Name); i >= 0 && i < 6 {
		return &syntax.TargetVar{Typed: syntax.Typed{Pos: at}, Name: probes.EntryArg(i, r.args[i].Loc.Size, r.args[i].Loc.Signed)}
	}
	if r.why == "" {
		r.why = fmt.Sprintf("the body reads %s, which %s does not have", x.Name, r.p.Attach.Target())
	}
	return x
}

// parms is $$parms (or $$vars) of the call: the event's text,
// "__syscall_nr=%#x dfd=%#x filename=%p ...", as a sprintf whose format
// depends only on the number of fields, so that the calls share it:
// each field's name and value are per-call locals (%p prints as %#x).
func (r *callRewrite) parms(x *syntax.TargetVar) syntax.Expr {
	a, err := r.p.context.Var(&syntax.TargetVar{Name: x.Name})
	if err != nil {
		if r.why == "" {
			r.why = err.Msg
		}
		return x
	}
	at := x.Pos
	call := &syntax.PrintCall{Typed: syntax.Typed{Pos: at}, Name: "sprintf"}
	var format []string
	for i, arg := range a.Args {
		name := r.p.Attach.Args[arg.Param].Name
		v := r.field(&syntax.TargetVar{Typed: syntax.Typed{Pos: at}, Name: "$" + name})
		if name == "__syscall_nr" || r.exit {
			format = append(format, name+"=%#x")
			call.Args = append(call.Args, v)
			continue
		}
		format = append(format, "%s=%#x")
		call.Args = append(call.Args, r.perCall(fmt.Sprintf("__tp_field%d", i), &syntax.StringLit{Typed: syntax.Typed{Pos: at}, Value: name}),
			r.perCall(fmt.Sprintf("__tp_value%d", i), v))
	}
	call.Format = &syntax.StringLit{Typed: syntax.Typed{Pos: at}, Value: strings.Join(format, " ")}
	return call
}

// layoutTable numbers the distinct bodies of a dispatch: bodies that read
// alike (the same text) share a number and one copy.
type layoutTable struct {
	index  map[string]int
	shapes []dispatchCase // by number
}

// number returns body's number, adding it when it is new.
func (t *layoutTable) number(body *syntax.Block) int {
	key := syntax.StmtString(body)
	if k, ok := t.index[key]; ok {
		return k
	}
	if t.index == nil {
		t.index = map[string]int{}
	}
	k := len(t.shapes)
	t.index[key] = k
	t.shapes = append(t.shapes, dispatchCase{key: k, body: body})
	return k
}

// compatCall is `__syscall_compat()`: whether the call is a compat call,
// which no syscalls:* event sees.
func compatCall(at syntax.Pos) syntax.Expr {
	return &syntax.Call{Typed: syntax.Typed{Pos: at}, Name: "__syscall_compat"}
}

// orCompat is `x || __syscall_compat()`.
func orCompat(x syntax.Expr, at syntax.Pos) syntax.Expr {
	return &syntax.Binary{Typed: syntax.Typed{Pos: at}, Op: "||", X: x, Y: compatCall(at)}
}

// setLocal is `name = value`.
func setLocal(name string, value syntax.Expr, at syntax.Pos) syntax.Stmt {
	return &syntax.ExprStmt{X: &syntax.Assign{Typed: syntax.Typed{Pos: at}, Op: "=",
		LHS: &syntax.Ident{Typed: syntax.Typed{Pos: at}, Name: name}, RHS: value}}
}
