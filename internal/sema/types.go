package sema

import (
	"fmt"
	"sort"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Type inference, as stap does it. Every function (by name) and then every
// probe is visited again and again; each expression is told the type its
// context expects (t) and settles its own type, the types of the variables it
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

const (
	tUnknown = syntax.TypeUnknown
	tLong    = syntax.TypeLong
	tString  = syntax.TypeString
	tStats   = syntax.TypeStats
)

// Levels of mismatch_complexity: the kinds of mismatch, simplest first.
const (
	kindUnresolved = iota
	kindSides
	kindExpected
	kindDecl
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
	inSlots    map[*syntax.In]*syntax.Index // the array element `k in a` tests
	formats    map[*syntax.StringLit]*format.Format
}

// typeAbort unwinds a pass after an error stap throws (instead of printing and
// going on); inferTypes recovers it.
type typeAbort struct{}

const maxTypePasses = 1000

func (e *elab) newTyper() *typer {
	return &typer{e: e, firstAt: map[declKey]syntax.Node{}, inSlots: map[*syntax.In]*syntax.Index{},
		formats: map[*syntax.StringLit]*format.Format{}}
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
	for _, b := range t.e.bodies() {
		typeLiterals(b)
	}
	for i := 0; i < maxTypePasses; i++ {
		t.newly, t.unresolved = 0, 0
		t.pass()
		if t.newly > 0 {
			t.complexity = 0
			continue
		}
		if converged() {
			break
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

// typeLiterals gives literals their types before inference starts, as stap's
// parser does.
func typeLiterals(n syntax.Node) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.NumberLit:
			n.SetType(tLong)
		case *syntax.StringLit:
			n.SetType(tString)
		}
		return true
	})
}

// recordTypePositions sets Var.TypePos from where each type was settled.
func (e *elab) recordTypePositions(t *typer) {
	for k, n := range t.firstAt {
		if v, ok := k.decl.(*syntax.Var); ok && k.index < 0 && v.TypePos.Line == 0 {
			v.TypePos = n.Position()
		}
	}
}

func (t *typer) pass() {
	funcs := append([]*syntax.Func(nil), t.e.prog.Funcs...)
	sort.SliceStable(funcs, func(i, j int) bool { return funcs[i].Name < funcs[j].Name })
	for _, f := range funcs {
		if f.Decl == nil || f.Decl.Body == nil {
			continue
		}
		t.fn = f
		t.within("function "+f.Name, func() { t.stmt(f.Decl.Body) })
		if !t.initial {
			t.checkLocals(f.Locals[len(f.Params):])
		}
	}
	for _, p := range t.e.prog.Probes {
		t.fn = nil
		t.within("probe "+p.Name, func() { t.stmt(p.Body) })
		if !t.initial {
			t.checkLocals(p.Locals)
		}
		if p.Cond != nil {
			t.expr(p.Cond, tLong)
		}
	}
	for _, g := range t.e.prog.Globals {
		if g.Type == tUnknown && !t.initial {
			t.unresolvedAt(varToken(g))
		}
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

// thrown is an error stap throws from the middle of a type pass.
type thrown struct{ d *Diagnostic }

func (t *typer) throw(origin string, n syntax.Node, msg string) {
	panic(thrown{&Diagnostic{Msg: msg, Tok: describe(n), Pos: n.Position(), origin: origin}})
}

// varToken is the token stap blames for a variable: its declaration or first use.
func varToken(v *syntax.Var) syntax.Node {
	if v.Decl != nil {
		return v.Decl
	}
	return &syntax.Ident{Typed: syntax.Typed{Pos: v.Pos}, Name: v.Name}
}

func (t *typer) checkLocals(locals []*syntax.Var) {
	for _, v := range locals {
		switch v.Type {
		case tUnknown:
			t.unresolvedAt(varToken(v))
		case tStats:
			t.report("statlocal", varToken(v), "stat locals not supported, missing global declaration? ")
		}
	}
}

// report counts an unresolved type and, in the reporting pass, prints msg.
func (t *typer) report(origin string, at syntax.Node, msg string) {
	t.unresolved++
	if t.assert {
		t.e.rep.errorAt(origin, at, msg)
	}
}

func (t *typer) unresolvedAt(at syntax.Node) {
	t.unresolved++
	if t.assert && t.complexity <= kindUnresolved {
		t.e.rep.errorAt("unresolved", at, "unresolved type ")
	}
}

func (t *typer) invalid(at syntax.Node, ty syntax.Type) {
	msg := "invalid type " + ty.String()
	if isOperator(at) {
		msg = "invalid operator"
	}
	t.report("invalid", at, msg)
}

func isOperator(n syntax.Node) bool {
	d := describe(n)
	return len(d) > 8 && d[:8] == "operator"
}

// mismatchable reports whether a mismatch of this kind is printed now, or
// records that one was met.
func (t *typer) mismatchable(kind int) bool {
	t.unresolved++
	if t.assert {
		return t.complexity <= kind
	}
	t.complexity = max(t.complexity, kind)
	return false
}

func (t *typer) mismatchSides(x syntax.Expr, l, r syntax.Type) {
	if t.mismatchable(kindSides) {
		t.e.rep.errorAt("sides", x, fmt.Sprintf("type mismatch: left and right sides don't agree (%s vs %s)", l, r))
	}
}

func (t *typer) mismatch(at syntax.Node, want, got syntax.Type) {
	if !t.mismatchable(kindExpected) {
		return
	}
	msg := "type mismatch: expected " + want.String()
	if got != tUnknown {
		msg += " but found " + got.String()
	}
	t.e.rep.errorAt("expected", at, msg)
}

// mismatchDecl reports a type meeting a symbol typed otherwise, pointing at
// where the symbol's type was first inferred.
func (t *typer) mismatchDecl(at syntax.Node, ty syntax.Type, decl any, index int, declType syntax.Type) {
	if !t.mismatchable(kindDecl) {
		return
	}
	if t.fn != nil && index < 0 {
		for i, p := range t.fn.Params {
			if p == decl {
				index = i
			}
		}
	}
	first := t.firstAt[declKey{decl, index}]
	if first == nil {
		t.e.rep.errorAt("declbasic", at, fmt.Sprintf("type mismatch: expected %s but found %s", ty, declType))
		return
	}
	msg, chain := fmt.Sprintf("type mismatch (%s)", ty), "type"
	if index >= 0 {
		msg = fmt.Sprintf("index %d %s", index, msg)
		chain += fmt.Sprintf(" of index %d", index)
	}
	n := note(first, chain+fmt.Sprintf(" was first inferred here (%s)", declType))
	n.origin = "declfirst"
	t.e.rep.errorAt("decl", at, msg, n)
}

// resolved counts progress and remembers where a symbol's type was settled.
func (t *typer) resolved(at syntax.Node, decl any, index int) {
	t.newly++
	if decl != nil {
		t.firstAt[declKey{decl, index}] = at
	}
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

func varRef(v *syntax.Var) referent   { return referent{&v.Type, v} }
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

func (t *typer) stmt(s syntax.Stmt) {
	switch s := s.(type) {
	case *syntax.Block:
		for _, x := range s.Stmts {
			t.stmt(x)
		}
	case *syntax.ExprStmt:
		t.expr(s.X, tUnknown)
	case *syntax.IfStmt:
		t.expr(s.Cond, tLong)
		t.stmt(s.Then)
		t.stmtOpt(s.Else)
	case *syntax.WhileStmt:
		t.expr(s.Cond, tLong)
		t.stmt(s.Body)
	case *syntax.ForStmt:
		t.exprOpt(s.Init, tUnknown)
		t.exprOpt(s.Cond, tLong)
		t.exprOpt(s.Post, tUnknown)
		t.stmt(s.Body)
	case *syntax.ForeachStmt:
		t.foreach(s)
	case *syntax.ReturnStmt:
		t.ret(s)
	case *syntax.DeleteStmt:
		t.delete(s.Target)
	case *syntax.TryStmt:
		t.stmt(s.Body)
		if s.CatchVar != nil {
			t.expr(s.CatchVar, tString)
		}
		t.stmt(s.Catch)
	}
}

func (t *typer) stmtOpt(s syntax.Stmt) {
	if s != nil {
		t.stmt(s)
	}
}

func (t *typer) exprOpt(x syntax.Expr, want syntax.Type) {
	if x != nil {
		t.expr(x, want)
	}
}

func (t *typer) delete(x syntax.Expr) {
	switch x := x.(type) {
	case *syntax.Index:
		t.index(x, tUnknown)
	case *syntax.Ident:
		if x.Var != nil {
			t.resolve2(x, varRef(x.Var), tUnknown, false)
		}
	}
}

func (t *typer) ret(s *syntax.ReturnStmt) {
	f := t.fn
	if f == nil {
		return
	}
	if s.Value == nil {
		if f.Result != tUnknown {
			t.mismatchDecl(s, tUnknown, f, -1, f.Result)
		}
		return
	}
	t.expr(s.Value, f.Result)
	vt := s.Value.Type()
	if f.Result != tUnknown && vt != tUnknown && f.Result != vt {
		t.mismatchDecl(s.Value, vt, f, -1, f.Result)
	}
	if f.Result == tUnknown && (vt == tLong || vt == tString) {
		f.Result = vt
		t.resolved(s.Value, f, -1)
	}
	if vt == tStats {
		t.invalid(s.Value, vt)
	}
}

func (t *typer) foreach(s *syntax.ForeachStmt) {
	wanted := tUnknown
	switch a := s.Array.(type) {
	case *syntax.Hist:
		if len(s.Keys) != 1 {
			t.unresolvedAt(s)
		}
		for _, k := range s.Keys {
			t.expr(k, tLong)
		}
		t.hist(a)
		wanted = tLong
	case *syntax.Ident:
		v := a.Var
		if v == nil {
			return
		}
		if len(s.Keys) != len(v.Keys) {
			t.unresolvedAt(s)
		} else {
			for i, k := range s.Keys {
				t.key(v, i, k)
			}
			for i, k := range s.Slice {
				if _, star := k.(*syntax.Star); !star && i < len(v.Keys) {
					t.key(v, i, k)
				}
			}
		}
		t.expr(a, tUnknown)
		wanted = v.Type
	}
	if s.Value != nil {
		switch wanted {
		case tStats:
			t.invalid(s.Value, wanted)
		case tUnknown:
			t.expr(s.Value, tUnknown)
		default:
			t.checkArg(wanted, s.Value)
		}
	}
	if wanted != tUnknown && s.SortAgg != "" && wanted != tStats {
		t.invalid(s.Array, wanted)
	}
	t.exprOpt(s.Limit, tLong)
	t.stmt(s.Body)
}

// key types expression k used as key i of array v.
func (t *typer) key(v *syntax.Var, i int, k syntax.Expr) {
	ft := v.Keys[i]
	t.expr(k, ft)
	at := k.Type()
	if (at == tString || at == tLong) && ft == tUnknown {
		v.Keys[i] = at
		ft = at
		t.resolved(k, v, i)
	}
	if at == tStats {
		t.invalid(k, at)
	}
	if ft == tStats {
		t.invalid(k, ft)
	}
	if at != tUnknown && ft != tUnknown && ft != at {
		t.mismatchDecl(k, at, v, i, v.Type)
	}
	if at == tUnknown {
		t.unresolvedAt(k)
	}
}

// checkArg requires x to have type want (stap's check_arg_type).
func (t *typer) checkArg(want syntax.Type, x syntax.Expr) {
	t.expr(x, want)
	switch x.Type() {
	case tUnknown:
		t.settle(x, want)
	case want:
	default:
		t.mismatch(x, want, x.Type())
	}
}

// expr visits x expecting type want.
func (t *typer) expr(x syntax.Expr, want syntax.Type) {
	if t.initial && (isContextExpr(x) || isDefined(x)) {
		return
	}
	switch x := x.(type) {
	case *syntax.NumberLit:
		t.literal(x, tLong, want)
	case *syntax.StringLit:
		t.literal(x, tString, want)
	case *syntax.Ident:
		if x.Var != nil {
			t.resolve2(x, varRef(x.Var), want, false)
		}
	case *syntax.Index:
		t.index(x, want)
	case *syntax.Binary:
		t.binary(x, want)
	case *syntax.Unary:
		if n, ok := x.X.(*syntax.NumberLit); ok && x.Op == "-" {
			n.SetType(tLong) // stap's parser folds a negative literal
			t.literal(x, tLong, want)
			return
		}
		t.operand(x, x.X, want)
	case *syntax.IncDec:
		t.operand(x, x.X, want)
	case *syntax.Assign:
		t.assign(x, want)
	case *syntax.Ternary:
		t.ternary(x, want)
	case *syntax.In:
		t.in(x, want)
	case *syntax.Call:
		t.call(x, want)
	case *syntax.PrintCall:
		t.print(x)
	case *syntax.StatOp:
		t.expr(x.X, tStats)
		for _, a := range x.Args {
			t.expr(a, tLong)
		}
		switch x.Type() {
		case tUnknown:
			t.settle(x, tLong)
		case tLong:
		default:
			t.mismatch(x, tLong, x.Type())
		}
	case *syntax.Hist:
		t.hist(x)
	case *syntax.Defined:
		t.defined(x)
	case *syntax.TargetVar:
		if x.Type() != tUnknown { // resolved in a kernel probe (context.go)
			t.literal(x, x.Type(), want)
			return
		}
		t.report("target", x, "unresolved target-symbol expression")
	case *syntax.AtVar:
		t.report("atvar", x, "unresolved @var() expression")
	case *syntax.Cast:
		if x.Type() != tUnknown {
			t.expr(x.Operand, tLong)
			t.literal(x, x.Type(), want)
			return
		}
		t.e.rep.errorAt("cast", x, fmt.Sprintf("type definition '%s' not found in '%s'", x.TypeName, x.Module))
	case *syntax.Entry:
		t.throw("entry", x, "internal error: @entry is only valid in .return probes")
	case *syntax.Autocast:
		t.autocast(x)
	}
}

// defined visits a @defined constant folding has not settled (none should
// be left).
func (t *typer) defined(x *syntax.Defined) {
	t.expr(x.X, tUnknown)
	t.report("defined", x, "unexpected @defined")
}

func isDefined(x syntax.Expr) bool {
	_, ok := x.(*syntax.Defined)
	return ok
}

func (t *typer) literal(x syntax.Expr, ty, want syntax.Type) {
	x.SetType(ty)
	if want != ty && want != tUnknown {
		t.mismatch(x, want, ty)
	}
}

func (t *typer) autocast(x *syntax.Autocast) {
	if t.assert {
		t.e.rep.errorAt("autocast", x, "unknown type in dereference")
	}
	t.expr(x.Operand, tLong)
	t.unresolved++
}

func (t *typer) hist(x *syntax.Hist) {
	t.expr(x.X, tStats)
	for _, a := range []syntax.Expr{x.Start, x.Stop, x.Interval} {
		t.exprOpt(a, tLong)
	}
}

func (t *typer) index(x *syntax.Index, want syntax.Type) {
	if h, ok := x.Array.(*syntax.Hist); ok {
		if len(x.Keys) != 1 {
			t.unresolvedAt(x)
		}
		for _, k := range x.Keys {
			t.expr(k, tLong)
			if k.Type() != tLong {
				t.unresolvedAt(x)
			}
		}
		t.hist(h)
		if x.Type() != tLong {
			t.settle(x, tLong)
		}
		return
	}
	id, ok := x.Array.(*syntax.Ident)
	if !ok || id.Var == nil {
		return
	}
	v := id.Var
	t.resolve2(x, varRef(v), want, false)
	if len(x.Keys) != len(v.Keys) {
		t.unresolvedAt(x)
		return
	}
	for i, k := range x.Keys {
		if _, star := k.(*syntax.Star); !star {
			t.key(v, i, k)
		}
	}
}

func (t *typer) in(x *syntax.In, want syntax.Type) {
	if id, ok := x.Array.(*syntax.Ident); ok && id.Var != nil {
		elem := t.inSlots[x]
		if elem == nil {
			elem = &syntax.Index{Typed: syntax.Typed{Pos: x.Pos}, Array: x.Array, Keys: x.Keys}
			t.inSlots[x] = elem
		}
		t.index(elem, tUnknown)
	}
	switch {
	case want == tUnknown && x.Type() != tUnknown:
	case want == tString || want == tStats:
		t.mismatch(x, want, tLong)
	case x.Type() == tUnknown:
		t.settle(x, tLong)
	}
}

func (t *typer) binary(x *syntax.Binary, want syntax.Type) {
	switch x.Op {
	case ".":
		if want != tUnknown && want != tString {
			t.invalid(x, want)
		}
		t.expr(x.X, tString)
		t.expr(x.Y, tString)
		t.settleIfUnknown(x, tString)
	case "=~", "!~":
		if want == tStats || want == tString {
			t.invalid(x, want)
		}
		t.expr(x.X, tString)
		t.expr(x.Y, tString)
		t.settleIfUnknown(x, tLong)
	case "<", ">", "<=", ">=", "==", "!=":
		if want == tStats || want == tString {
			t.invalid(x, want)
		}
		t.expr(x.X, x.Y.Type())
		t.expr(x.Y, x.X.Type())
		t.checkSides(x, x.X, x.Y)
		t.settleIfUnknown(x, tLong)
	default:
		t.numeric(x, x.X, x.Y, want)
	}
}

// numeric visits an operator whose operands and result are longs.
func (t *typer) numeric(x, l, r syntax.Expr, want syntax.Type) {
	if want == tStats || want == tString {
		t.invalid(x, want)
	}
	t.expr(l, tLong)
	t.expr(r, tLong)
	t.checkSides(x, l, r)
	t.settleIfUnknown(x, tLong)
}

func (t *typer) checkSides(x, l, r syntax.Expr) {
	lt, rt := l.Type(), r.Type()
	if lt != tUnknown && rt != tUnknown && lt != rt {
		t.mismatchSides(x, lt, rt)
	}
}

func (t *typer) settleIfUnknown(x syntax.Expr, ty syntax.Type) {
	if x.Type() == tUnknown {
		t.settle(x, ty)
	}
}

func (t *typer) operand(x, operand syntax.Expr, want syntax.Type) {
	if want == tStats || want == tString {
		t.invalid(x, want)
	}
	t.expr(operand, tLong)
	t.settleIfUnknown(x, tLong)
}

func (t *typer) assign(x *syntax.Assign, want syntax.Type) {
	if want == tStats {
		t.invalid(x, want)
	}
	switch {
	case x.Op == "<<<":
		if want == tString {
			t.invalid(x, want)
		}
		t.expr(x.LHS, tStats)
		t.expr(x.RHS, tLong)
		if x.Type() == tUnknown || x.Type() == tStats {
			t.settle(x, tLong)
		}
	case x.LHS.Type() == tStats:
		t.invalid(x.LHS, tStats)
	case x.RHS.Type() == tStats:
		t.invalid(x.RHS, tStats)
	case x.Op == ".=":
		if want == tLong || want == tStats {
			t.invalid(x, want)
		}
		t.expr(x.LHS, tString)
		t.expr(x.RHS, tString)
		t.settleIfUnknown(x, tString)
	case x.Op == "=":
		t.plainAssign(x, want)
	default:
		t.numeric(x, x.LHS, x.RHS, want)
	}
}

func (t *typer) plainAssign(x *syntax.Assign, want syntax.Type) {
	sub := want
	if sub == tUnknown && x.Type() != tUnknown {
		sub = x.Type()
	}
	t.expr(x.LHS, firstKnown(sub, x.RHS.Type()))
	t.expr(x.RHS, firstKnown(sub, x.LHS.Type()))
	if sub != tUnknown && x.Type() == tUnknown {
		t.settle(x, sub)
	}
	if sub == tUnknown && x.LHS.Type() != tUnknown {
		t.settle(x, x.LHS.Type())
	}
	t.checkSides(x, x.LHS, x.RHS)
}

func firstKnown(a, b syntax.Type) syntax.Type {
	if a != tUnknown {
		return a
	}
	return b
}

func (t *typer) ternary(x *syntax.Ternary, want syntax.Type) {
	t.expr(x.Cond, tLong)
	sub := want
	if sub == tUnknown && x.Type() != tUnknown {
		sub = x.Type()
	}
	t.expr(x.Then, sub)
	t.expr(x.Else, sub)
	switch {
	case sub == tUnknown && x.Type() != tUnknown:
	case sub != tUnknown && x.Type() == tUnknown:
		t.settle(x, sub)
	case sub == tUnknown && x.Then.Type() != tUnknown:
		t.settle(x, x.Then.Type())
	case sub == tUnknown && x.Else.Type() != tUnknown:
		t.settle(x, x.Else.Type())
	case x.Type() != sub:
		t.mismatch(x, sub, x.Type())
	}
}

func (t *typer) call(x *syntax.Call, want syntax.Type) {
	f := x.Func
	if f == nil {
		return
	}
	t.resolve2(x, funcRef(f), want, true)
	if x.Type() == tStats {
		t.invalid(x, tStats)
	}
	if len(x.Args) != len(f.Params) {
		t.unresolvedAt(x)
		return
	}
	for i, a := range x.Args {
		p := f.Params[i]
		t.expr(a, p.Type)
		at := a.Type()
		if (at == tString || at == tLong) && p.Type == tUnknown {
			p.Type = at
			t.resolved(a, p, i)
		}
		if at == tStats {
			t.invalid(a, at)
		}
		if p.Type == tStats {
			t.invalid(varToken(p), p.Type)
		}
		if at != tUnknown && p.Type != tUnknown && p.Type != at {
			t.mismatchDecl(a, at, p, i, p.Type)
		}
		if at == tUnknown {
			t.unresolvedAt(a)
		}
	}
}

func (t *typer) print(x *syntax.PrintCall) {
	unresolved := 0
	switch {
	case len(x.Args) == 1 && isHist(x.Args[0]):
		t.hist(x.Args[0].(*syntax.Hist))
	case x.Format != nil:
		t.printf(x)
	default:
		for _, a := range x.Args {
			t.expr(a, tUnknown)
			if a.Type() == tUnknown {
				t.unresolvedAt(a)
				unresolved++
			}
		}
	}
	if unresolved > 0 {
		x.SetType(tUnknown)
		t.unresolvedAt(x)
		return
	}
	if x.Type() == tUnknown {
		ty := tLong
		if x.Name[0] == 's' {
			ty = tString
		}
		t.settle(x, ty)
	}
}

func isHist(x syntax.Expr) bool {
	_, ok := x.(*syntax.Hist)
	return ok
}

func (t *typer) printf(x *syntax.PrintCall) {
	f := t.formats[x.Format]
	if f == nil {
		var err error
		f, err = format.Compile(x.Format.Value)
		if err != nil {
			t.throw("format", x, err.Error())
		}
		t.formats[x.Format] = f
	}
	kinds := f.Args()
	if len(kinds) != len(x.Args) {
		t.e.rep.errorAt("nargs", x, "Wrong number of args to formatted print operator")
		panic(typeAbort{})
	}
	for i, a := range x.Args {
		t.checkArg(kindType(kinds[i]), a)
	}
}

func kindType(k format.Kind) syntax.Type {
	if k == format.KindString {
		return tString
	}
	return tLong
}
