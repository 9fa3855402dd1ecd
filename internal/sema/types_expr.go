package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
)

// Typing expressions: each expression is told the type its context expects
// and settles its own, and those of the variables, array keys and
// parameters it refers to.

func (t *typer) exprOpt(x syntax.Expr, want syntax.Type) {
	if x != nil {
		t.expr(x, want)
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
	case *syntax.TargetVar, *syntax.Cast, *syntax.Autocast, *syntax.AtVar:
		t.contextExpr(x, want)
	case *syntax.Entry:
		t.throw("entry", x, "internal error: @entry is only valid in .return probes")
	}
}

// contextExpr types a context expression ($var, @cast, an autocast): one
// that resolved (context.go, autocast.go) is a long or string computed in
// the kernel; else the error its resolution gave (reported only now, so
// only if it survived elision), or stap's message for an expression
// nothing resolves.
func (t *typer) contextExpr(x syntax.Expr, want syntax.Type) {
	if x.Type() != tUnknown && t.e.contextErrs[x] == nil { // (&@cast is a long, resolved or not)
		if op := ContextOperand(x); op != nil {
			t.expr(op, tLong)
		}
		for _, c := range contextComponents(x) {
			if c.Kind == syntax.ComponentIndex {
				t.expr(c.Index, tLong)
			}
		}
		t.literal(x, x.Type(), want)
		return
	}
	if t.contextError(x) {
		return
	}
	switch x := x.(type) {
	case *syntax.TargetVar:
		t.report("target", x, "unresolved target-symbol expression")
	case *syntax.Cast:
		t.e.rep.errorAt("cast", x, fmt.Sprintf("type definition '%s' not found in '%s'", x.TypeName, x.Module))
	case *syntax.Autocast:
		t.autocast(x)
	case *syntax.AtVar:
		t.report("atvar", x, "unresolved @var() expression")
	}
}

func isCast(x syntax.Expr) bool {
	_, ok := x.(*syntax.Cast)
	return ok
}

// ContextOperand is the operand whose value a @cast or an autocast
// starts from, or nil (the code generator computes it first).
func ContextOperand(x syntax.Expr) syntax.Expr {
	switch x := x.(type) {
	case *syntax.Cast:
		return x.Operand
	case *syntax.Autocast:
		return x.Operand
	}
	return nil
}

// contextError reports the error context expression x met when it was
// resolved (context.go, autocast.go), and tells whether there was one.
func (t *typer) contextError(x syntax.Expr) bool {
	err := t.e.contextErrs[x]
	switch {
	case err == nil:
	case isCast(x): // stap resolves @cast in its type rounds: each reports it, before the rest
		t.unresolved++
		t.e.rep.errorAt("cast", contextBlame(x, err.Step), err.Msg)
	default:
		t.report("context", contextBlame(x, err.Step), err.Msg)
	}
	return err != nil
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
