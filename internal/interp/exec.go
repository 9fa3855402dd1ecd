package interp

import (
	"fmt"
	"time"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// ctl is how a statement ended.
type ctl int

const (
	ctlNone ctl = iota
	ctlBreak
	ctlContinue
	ctlReturn
	ctlNext
)

// activation is the state of one handler run (stap's context).
type activation struct {
	probe     *sema.Probe
	remaining int64 // actions left (c->actionremaining)
	nesting   int   // function nesting, -1 in the probe body
}

// frame holds the locals of a probe body or function call.
type frame struct {
	call    *syntax.Call // the call of the function (nil for a probe's frame)
	locals  []Value
	ret     Value
	pending int64 // actions noted but not yet charged
	// checked frames had their whole statement count charged on entry and
	// note no actions while they run.
	checked bool
}

// fire runs probe p if the session is in state want.
func (in *Interp) fire(p *sema.Probe, want int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.state != want {
		return
	}
	in.runHandler(p)
}

// timeHandler adds the run of p that started at start to its timing (-t).
func (in *Interp) timeHandler(p *sema.Probe, start time.Time) {
	st := in.timing[p]
	if st == nil {
		st = format.NewStat(nil, 0)
		in.timing[p] = st
	}
	st.Add(time.Since(start).Nanoseconds())
}

// Timing is the run time statistic (ns per run) of user-side probe p with
// Config.Timing, nil when it never ran.
func (in *Interp) Timing(p *sema.Probe) *format.Stat {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.timing[p]
}

// runHandler runs probe p's handler and tells whether it completed: false
// when a run-time error (reported) or abort() ended it.
func (in *Interp) runHandler(p *sema.Probe) (completed bool) {
	if in.timing != nil {
		defer in.timeHandler(p, time.Now())
	}
	if in.cfg.HandlerStart != nil {
		in.cfg.HandlerStart()
	}
	in.act = activation{probe: p, remaining: 10 * in.limits.MaxAction, nesting: -1}
	in.fr = &frame{locals: make([]Value, len(p.Locals))}
	if p.Value != nil {
		in.fr.locals[p.Value.Index] = Value{Str: in.procfsValue}
	}
	in.stack, in.printArgs, in.parts = in.stack[:0], in.printArgs[:0], in.parts[:0]
	err := protect(func() {
		defer swallowAbort()
		in.runBody(p)
		completed = true
	})
	if p.Value != nil {
		in.procfsValue = in.fr.locals[p.Value.Index].Str
	}
	in.flush()
	in.runCommands()
	if err != nil {
		in.report(err)
	}
	in.act.probe = nil
	return completed
}

// runBody runs the body of p, or for a display probe the display.
func (in *Interp) runBody(p *sema.Probe) {
	if p.Display != nil {
		in.display(p.Display)
		return
	}
	if p.Cond != nil && in.evalLong(p.Cond) == 0 {
		return
	}
	count, finite := in.actions.count(p.Body)
	in.enter(count, finite, syntax.Pos{})
	if in.execBlock(p.Body) != ctlNext {
		in.note(0, p.Body.Pos, true)
	}
}

// protect runs fn and returns the run-time error that ended it, if any;
// abort() unwinds through it.
func protect(fn func()) (err *runError) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*runError)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	fn()
	return nil
}

// swallowAbort recovers the unwinding of abort().
func swallowAbort() {
	if r := recover(); r != nil {
		if _, ok := r.(abortSignal); !ok {
			panic(r)
		}
	}
}

// report prints a handler's error and stops the session past MAXERRORS;
// with Config.SuppressErrors it only counts it.
func (in *Interp) report(e *runError) {
	if in.cfg.SuppressErrors {
		in.errors++
		return
	}
	in.out.Diagnostic(e.diagnostic())
	in.errorSeen = true
	in.errors++
	if int64(in.errors) > in.limits.MaxErrors {
		in.stop(stateError)
	}
}

// enter charges the statement count of a loop-free body (finite) up front,
// as the generated code does, and then stops noting actions in the frame.
func (in *Interp) enter(count int64, finite bool, at syntax.Pos) {
	if !finite {
		return
	}
	if in.act.remaining < count {
		panic(&runError{Msg: tapset.MsgMaxAction, At: at, Uncatchable: true})
	}
	in.fr.checked = true
}

// note records n actions at the statement at p; update charges what was noted
// (the generated code does so at the end of basic blocks, and every ten actions).
func (in *Interp) note(n int64, p syntax.Pos, update bool) {
	if in.exhausted(n, update) {
		panic(&runError{Msg: tapset.MsgMaxAction, At: p, Uncatchable: true})
	}
}

// noteAt is note at stap's token of a statement or expression, which is
// looked for only when the error needs it.
func (in *Interp) noteAt(n int64, s syntax.Node, update bool) {
	if in.exhausted(n, update) {
		panic(&runError{Msg: tapset.MsgMaxAction, At: stmtPos(s), Uncatchable: true})
	}
}

// exhausted notes n actions and reports whether charging them used up the
// handler's MAXACTION budget.
func (in *Interp) exhausted(n int64, update bool) bool {
	fr := in.fr
	if fr.checked {
		return false
	}
	fr.pending += n
	if !(update && fr.pending > 0 || fr.pending >= 10) {
		return false
	}
	in.act.remaining -= fr.pending
	fr.pending = 0
	return in.act.remaining <= 0
}

func (in *Interp) execBlock(b *syntax.Block) ctl {
	for _, s := range b.Stmts {
		if c := in.exec(s); c != ctlNone {
			return c
		}
	}
	return ctlNone
}

func (in *Interp) exec(s syntax.Stmt) ctl {
	switch s := s.(type) {
	case *syntax.Block:
		return in.execBlock(s)
	case *syntax.ExprStmt:
		in.evalVoid(s.X)
		in.noteAt(1, s, false)
	case *syntax.NullStmt:
	case *syntax.IfStmt:
		return in.execIf(s)
	case *syntax.WhileStmt:
		return in.execLoop(s.Pos, nil, s.Cond, nil, s.Body)
	case *syntax.ForStmt:
		return in.execLoop(s.Pos, s.Init, s.Cond, s.Post, s.Body)
	case *syntax.ForeachStmt:
		return in.execForeach(s)
	case *syntax.BreakStmt:
		in.note(1, s.Pos, true)
		return ctlBreak
	case *syntax.ContinueStmt:
		in.note(1, s.Pos, true)
		return ctlContinue
	case *syntax.NextStmt:
		in.note(1, s.Pos, true)
		return ctlNext
	case *syntax.ReturnStmt:
		if s.Value != nil {
			in.fr.ret = in.eval(s.Value)
		}
		in.note(1, s.Pos, true)
		return ctlReturn
	case *syntax.DeleteStmt:
		in.execDelete(s.Target)
		in.note(1, s.Pos, false)
	case *syntax.TryStmt:
		return in.execTry(s)
	default:
		throw(fmt.Sprintf("unsupported statement %T", s), s.Position())
	}
	return ctlNone
}

func (in *Interp) execIf(s *syntax.IfStmt) ctl {
	in.note(1, s.Pos, true)
	if in.evalLong(s.Cond) != 0 {
		c := in.exec(s.Then)
		if c == ctlNone {
			in.noteAt(0, s.Then, true)
		}
		return c
	}
	if s.Else == nil {
		return ctlNone
	}
	c := in.exec(s.Else)
	if c == ctlNone {
		in.noteAt(0, s.Else, true)
	}
	return c
}

// execLoop runs for and while loops (stap parses while as a for loop).
// Init and Post are expression statements to stap; the action of Post is
// noted where the generated code places it, once after the loop.
func (in *Interp) execLoop(at syntax.Pos, init, cond, post syntax.Expr, body syntax.Stmt) ctl {
	if init != nil {
		in.evalVoid(init)
		in.noteAt(1, init, false)
	}
	in.note(1, at, true)
	c := in.iterate(at, cond, post, body)
	if post != nil && c == ctlNone {
		in.noteAt(1, post, false)
	}
	return c
}

func (in *Interp) iterate(at syntax.Pos, cond, post syntax.Expr, body syntax.Stmt) ctl {
	for {
		in.note(1, at, false)
		if cond != nil && in.evalLong(cond) == 0 {
			return ctlNone
		}
		switch in.exec(body) {
		case ctlBreak:
			return ctlNone
		case ctlReturn:
			return ctlReturn
		case ctlNext:
			return ctlNext
		case ctlNone:
			in.noteAt(0, body, true)
		}
		if post != nil {
			in.evalVoid(post)
		}
	}
}

func (in *Interp) execTry(s *syntax.TryStmt) ctl {
	in.note(0, s.Pos, true)
	var c ctl
	err := in.catch(func() {
		c = in.execBlock(s.Body)
		if c == ctlNone {
			in.note(0, s.Body.Pos, true)
		}
	})
	if err == nil {
		return c
	}
	if s.CatchVar != nil {
		in.store(s.CatchVar, Value{Str: in.clip(err.Msg)})
	}
	in.note(1, s.Pos, true)
	c = in.execBlock(s.Catch)
	if c == ctlNone {
		in.note(0, s.Catch.Pos, true)
	}
	return c
}

// catch runs fn as a try block runs its body: the error it raises that a
// catch may take is returned, the interpreter's stacks unwound to where
// they were; any other goes on up.
func (in *Interp) catch(fn func()) *runError {
	stack, printArgs, parts := len(in.stack), len(in.printArgs), len(in.parts)
	err := protect(fn)
	if err == nil {
		return nil
	}
	if err.Uncatchable || in.act.remaining <= 0 {
		panic(err)
	}
	in.stack, in.printArgs, in.parts = in.stack[:stack], in.printArgs[:printArgs], in.parts[:parts]
	return err
}

// execDelete deletes an element, a slice of elements, a whole array or a scalar.
func (in *Interp) execDelete(target syntax.Expr) {
	switch t := target.(type) {
	case *syntax.Ident:
		g := in.global(t.Var)
		switch {
		case g == nil:
			in.store(t, Value{})
		case g.Array != nil:
			g.Array.Clear()
		case g.Statistic != nil:
			g.Statistic.Reset()
		default:
			g.Scalar.Store(Value{})
		}
	case *syntax.Index:
		arr := in.arrayOf(t.Array)
		keys, wild := in.evalKeys(t.Keys)
		defer in.release(keys)
		if !wild {
			arr.Delete(keys)
			return
		}
		for _, e := range arr.Elements() {
			if sliceMatch(e.Key, keys, t.Keys) {
				arr.Delete(e.Key)
			}
		}
	}
}
