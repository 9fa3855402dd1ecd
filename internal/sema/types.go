package sema

import (
	"github.com/bpftap/bpftap/internal/syntax"
)

// Type inference, as stap does it. Every function (by name) and then every
// probe is visited again and again; each expression is told the type its
// context expects (want) and settles its own type, the types of the variables it
// refers to, of array keys, of function results and parameters. A visit that
// settles a type counts as progress; the passes stop when one makes none.
// If something is still unknown or inconsistent, one more pass runs with
// reporting turned on. Without -v that pass reports only the most complex kind
// of mismatch met (a symbol against its first inference beats an expected type,
// which beats two sides of an operator, which beat an unknown type), so one
// mistake yields one message; with -v every kind is reported.
//
// Expressions and symbols keep their types between passes, so a conflict is
// noticed where the second type meets the first, and "first inferred here"
// points at the token whose visit settled the symbol's type.
//
// A pass visits only the bodies a visit could change (types_order.go),
// which is what stap's full passes settle, in the same order: a chain of
// 20,000 functions each returning the next one's value takes 20,000
// passes, as in stap, but each visits a few bodies, not 20,000.
//
// The typer is split by concern, as go/types splits its checker: this file
// drives the passes and settles types; types_stmt.go, types_expr.go and
// types_call.go visit statements, expressions and calls; types_errors.go
// reports what stays unknown or conflicting.

const (
	tUnknown = syntax.TypeUnknown
	tLong    = syntax.TypeLong
	tString  = syntax.TypeString
	tStats   = syntax.TypeStats
)

// declKey names a symbol whose type is inferred: a variable's or function's
// value (index -1) or an array key or function parameter (index ≥ 0).
type declKey struct {
	decl  any
	index int
}

type typer struct {
	e          *elab
	newly      int // types settled in this pass
	unresolved int // unknown or conflicting types met in this pass
	assert     bool
	initial    bool // stap's initial pass (initialTypes)
	complexity int
	fn         *syntax.Func                 // function being visited, nil in probes
	firstAt    map[declKey]syntax.Node      // where each symbol type was settled
	sched      *schedule                    // the bodies in order, and which are due (types_order.go)
	inSlots    map[*syntax.In]*syntax.Index // the array element `k in a` tests
}

// typeAbort unwinds a pass after an error stap throws (instead of printing and
// going on); inferTypes recovers it.
type typeAbort struct{}

func (e *elab) newTyper() *typer {
	return &typer{e: e, firstAt: map[declKey]syntax.Node{}, inSlots: map[*syntax.In]*syntax.Index{}}
}

// run runs type passes until they converge (see inferTypes), recovering the
// abort of a pass that threw an error.
func (t *typer) run(converged func() bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(typeAbort); !ok {
				panic(r)
			}
		}
	}()
	t.sched = newSchedule(t.e.prog, t.e.funcsByName()) // literals typed as it indexes
	// The bound (schedule.passes) stops passes that would settle
	// something again and again.
	all := true
	for i := 0; i < t.sched.passes(); i++ {
		t.newly, t.unresolved = 0, 0
		t.pass(all)
		switch {
		case t.newly > 0:
			t.complexity, all = 0, false
		case !all: // nothing was due: one pass over everything tells what is left
			all = true
		case converged():
			return
		}
	}
}

// initialTypes is stap's first type inference, run before each round of
// constant folding so that a mismatch is reported even in code the folding
// is about to drop. Context expressions and @defined are left alone, and only
// mismatches are reported. It returns false if it reported any.
func (e *elab) initialTypes() bool {
	t := e.newTyper()
	t.initial = true
	t.run(func() bool {
		if t.assert || t.complexity == 0 {
			return true
		}
		t.assert = true
		if e.opts.Verbose {
			t.complexity = kindSides
		}
		return false
	})
	e.recordTypePositions(t)
	return !e.rep.failed()
}

func (e *elab) inferTypes() {
	t := e.newTyper()
	t.run(func() bool {
		if t.unresolved == 0 || t.assert {
			return true
		}
		t.assert = true
		if e.opts.Verbose {
			t.complexity = 0
		}
		return false
	})
	e.recordTypePositions(t)
}

// recordTypePositions sets Var.TypePos from where each type was settled.
func (e *elab) recordTypePositions(t *typer) {
	for k, n := range t.firstAt {
		if v, ok := k.decl.(*syntax.Var); ok && k.index < 0 && v.TypePos.Line == 0 {
			v.TypePos = n.Position()
		}
	}
}

// pass visits the bodies in stap's order, all of them or those due
// (types_order.go); a pass over all of them then checks the globals.
func (t *typer) pass(all bool) {
	t.sched.start(all)
	for i, ok := t.sched.next(); ok; i, ok = t.sched.next() {
		if v := t.e.opts.typeVisits; v != nil {
			*v++
		}
		newly := t.newly
		t.visit(t.sched.bodies[i])
		if t.newly > newly { // it may settle more once it sees what it settled
			t.sched.due(i)
		}
	}
	if !all {
		return
	}
	for _, g := range t.e.prog.Globals {
		if g.Type == tUnknown && !t.initial {
			t.unresolvedAt(varToken(g))
		}
		if g.Wrap && !g.IsArray && !t.initial { // stap throws: the pass ends here
			t.e.rep.errorAt("wrapscalar", varToken(g), "wrapping not supported for scalars")
			panic(typeAbort{})
		}
	}
}

// visit types one function's or probe's body.
func (t *typer) visit(b typedBody) {
	if f := b.fn; f != nil {
		t.fn = f
		t.within("function "+f.Name, func() { t.stmt(f.Decl.Body) })
		if !t.initial {
			t.checkLocals(f.Locals[len(f.Params):])
		}
		return
	}
	p := b.probe
	t.fn = nil
	t.within("probe "+p.Name, func() { t.stmt(p.Body) })
	if !t.initial {
		t.checkLocals(p.Locals)
	}
	if p.Cond != nil {
		t.expr(p.Cond, tLong)
	}
}

// within runs a visit; an error thrown inside is reported as stap reports it:
// "while processing probe NAME" chained to the error.
func (t *typer) within(what string, visit func()) {
	defer func() {
		if r := recover(); r != nil {
			if th, ok := r.(thrown); ok {
				d := &Diagnostic{Msg: "while processing " + what, origin: "processing", Chain: []*Diagnostic{th.d}}
				t.e.rep.add(d)
				panic(typeAbort{})
			}
			panic(r)
		}
	}()
	visit()
}

// settle gives expression x type ty, counting progress.
func (t *typer) settle(x syntax.Expr, ty syntax.Type) {
	x.SetType(ty)
	t.resolved(x, nil, 0)
}

// referent is a symbol an expression refers to: its type and identity.
type referent struct {
	ty   *syntax.Type
	decl any
}

func varRef(v *syntax.Var) referent { return referent{&v.Type, v} }

func funcRef(f *syntax.Func) referent { return referent{&f.Result, f} }

// resolve2 reconciles a referring expression, its referent and the expected
// type t (stap's resolve_2types).
func (t *typer) resolve2(x syntax.Expr, ref referent, want syntax.Type, acceptUnknown bool) {
	re, te := x.Type(), *ref.ty
	switch {
	case want != tUnknown && re == want && re == te:
	case want == tUnknown && re != tUnknown && re == te:
	case re != tUnknown && te != tUnknown && re != te:
		t.mismatchDecl(x, re, ref.decl, -1, te)
	case re != tUnknown && want != tUnknown && re != want:
		t.mismatchDecl(x, want, ref.decl, -1, te)
	case te != tUnknown && want != tUnknown && te != want:
		t.mismatchDecl(x, want, ref.decl, -1, te)
	case re == tUnknown && want != tUnknown:
		t.settle(x, want)
	case re == tUnknown && te != tUnknown:
		t.settle(x, te)
	case re != tUnknown && te == tUnknown:
		*ref.ty = re
		t.resolved(x, ref.decl, -1)
	case !acceptUnknown:
		t.unresolvedAt(x)
	}
}
