package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Type inference, as stap does it: every probe and function is visited again
// and again, each expression told the type its context expects, until a pass
// changes nothing; a last pass reports what stayed unknown. Types flow into
// variables (the first inference wins and is remembered for "type was first
// inferred here"), array keys and arities, and function results and
// parameters.

const (
	tUnknown = syntax.TypeUnknown
	tLong    = syntax.TypeLong
	tString  = syntax.TypeString
	tStats   = syntax.TypeStats
)

type typer struct {
	e       *elab
	changed bool
	final   bool
	fn      *syntax.Func
	typeAt  map[*syntax.Var]syntax.Node   // where a variable's type was inferred
	keyAt   map[*syntax.Var][]syntax.Node // where each key type was inferred
	arityAt map[*syntax.Var]syntax.Node   // where the arity was inferred
	formats map[*syntax.StringLit]*format.Format
}

const maxTypePasses = 100

func (e *elab) inferTypes() {
	t := &typer{e: e, typeAt: map[*syntax.Var]syntax.Node{}, keyAt: map[*syntax.Var][]syntax.Node{},
		arityAt: map[*syntax.Var]syntax.Node{}, formats: map[*syntax.StringLit]*format.Format{}}
	for _, g := range e.prog.Globals {
		if g.Init != nil {
			t.typeAt[g] = g.Init
		}
	}
	for i := 0; i < maxTypePasses; i++ {
		t.changed = false
		t.pass()
		if !t.changed {
			break
		}
	}
	t.final = true
	t.pass()
}

func (t *typer) pass() {
	for _, p := range t.e.prog.Probes {
		t.fn = nil
		if p.Cond != nil {
			t.expr(p.Cond, tLong)
		}
		t.stmt(p.Body)
	}
	for _, f := range t.e.prog.Funcs {
		if f.Decl == nil || f.Decl.Body == nil {
			continue
		}
		t.fn = f
		t.stmt(f.Decl.Body)
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
		t.expr(s.Target, tUnknown)
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

func (t *typer) ret(s *syntax.ReturnStmt) {
	if t.fn == nil || s.Value == nil {
		return
	}
	got := t.expr(s.Value, t.fn.Result)
	if t.fn.Result == tUnknown && got != tUnknown {
		t.fn.Result = got
		t.changed = true
	}
}

func (t *typer) foreach(s *syntax.ForeachStmt) {
	var v *syntax.Var
	switch a := s.Array.(type) {
	case *syntax.Ident:
		v = a.Var
		t.arity(v, a, len(s.Keys))
	case *syntax.Hist:
		t.expr(a, tUnknown)
	}
	for i, k := range s.Keys {
		if v == nil {
			t.expr(k, tLong)
			continue
		}
		t.key(v, i, k, tUnknown)
		t.key(v, i, k, t.expr(k, keyType(v, i)))
	}
	for i, x := range s.Slice {
		if _, star := x.(*syntax.Star); !star && v != nil {
			t.keyExpr(v, i, x)
		}
	}
	if s.Value != nil && v != nil {
		vt := v.Type
		if vt == tStats {
			vt = tLong
		}
		t.expr(s.Value, vt)
		if v.Type == tUnknown && s.Value.Var != nil && s.Value.Var.Type != tUnknown {
			t.setVar(v, s.Value.Var.Type, s.Array)
		}
	}
	t.exprOpt(s.Limit, tLong)
	t.stmt(s.Body)
}

func keyType(v *syntax.Var, i int) syntax.Type {
	if v == nil || i >= len(v.Keys) {
		return tUnknown
	}
	return v.Keys[i]
}

// expr infers the type of x given what its context expects, reports a mismatch
// and returns the type.
func (t *typer) expr(x syntax.Expr, want syntax.Type) syntax.Type {
	got := t.infer(x, want)
	if got != tUnknown {
		x.SetType(got)
	}
	if want != tUnknown && got != tUnknown && got != want && !isVarRef(x) {
		t.e.rep.errorAt("mismatch", x, fmt.Sprintf("type mismatch: expected %s but found %s", want, got))
	}
	if t.final && got == tUnknown && needsType(x) && !t.e.rep.failed() {
		t.e.rep.errorAt("unresolved", x, "unresolved type ")
	}
	return got
}

// isVarRef tells expressions whose mismatches setVar reports.
func isVarRef(x syntax.Expr) bool {
	switch x := x.(type) {
	case *syntax.Ident:
		return x.Var != nil
	case *syntax.Index:
		_, ok := x.Array.(*syntax.Ident)
		return ok
	}
	return false
}

func needsType(x syntax.Expr) bool {
	switch x := x.(type) {
	case *syntax.Ident:
		return x.Var != nil && !x.Var.IsArray
	case *syntax.Index:
		_, ok := x.Array.(*syntax.Ident)
		return ok
	}
	return false
}

func (t *typer) infer(x syntax.Expr, want syntax.Type) syntax.Type {
	switch x := x.(type) {
	case *syntax.NumberLit:
		return tLong
	case *syntax.StringLit:
		return tString
	case *syntax.Ident:
		return t.ident(x, want)
	case *syntax.Index:
		return t.index(x, want)
	case *syntax.Binary:
		return t.binary(x)
	case *syntax.Unary:
		t.expr(x.X, tLong)
		return tLong
	case *syntax.IncDec:
		t.expr(x.X, tLong)
		return tLong
	case *syntax.Assign:
		return t.assign(x)
	case *syntax.Ternary:
		return t.ternary(x, want)
	case *syntax.In:
		t.in(x)
		return tLong
	case *syntax.Call:
		return t.call(x)
	case *syntax.PrintCall:
		return t.print(x)
	case *syntax.StatOp:
		t.expr(x.X, tStats)
		for _, a := range x.Args {
			t.expr(a, tLong)
		}
		return tLong
	case *syntax.Hist:
		t.expr(x.X, tStats)
		for _, a := range []syntax.Expr{x.Start, x.Stop, x.Interval} {
			t.exprOpt(a, tLong)
		}
		return tUnknown
	case *syntax.Defined:
		return tLong
	}
	return tUnknown
}

func (t *typer) ident(x *syntax.Ident, want syntax.Type) syntax.Type {
	v := x.Var
	if v == nil {
		return tUnknown
	}
	if !v.IsArray {
		t.arity(v, x, 0)
	}
	if want != tUnknown {
		t.setVar(v, want, x)
	}
	return v.Type
}

// setVar records that v has type ty at node at, or reports the conflict.
func (t *typer) setVar(v *syntax.Var, ty syntax.Type, at syntax.Node) {
	if ty == tUnknown {
		return
	}
	if v.Type == tUnknown {
		v.Type = ty
		v.TypePos = at.Position()
		t.typeAt[v] = at
		t.changed = true
		return
	}
	if v.Type == ty {
		return
	}
	first := t.typeAt[v]
	if first == nil {
		t.e.rep.errorAt("mismatch", at, fmt.Sprintf("type mismatch: expected %s but found %s", ty, v.Type))
		return
	}
	n := note(first, fmt.Sprintf("type was first inferred here (%s)", v.Type))
	n.origin = "first"
	t.e.rep.errorAt("varmismatch", at, fmt.Sprintf("type mismatch (%s)", ty), n)
}

// arity records how many keys v is used with (0 for a scalar).
func (t *typer) arity(v *syntax.Var, at syntax.Node, n int) {
	if v.Kind != syntax.VarGlobal {
		return
	}
	first := t.arityAt[v]
	if first == nil {
		t.arityAt[v] = at
		v.IsArray = n > 0
		if n > 0 && v.Keys == nil {
			v.Keys = make([]syntax.Type, n)
		}
		return
	}
	if len(v.Keys) != n && (n > 0 || v.IsArray) {
		c := note(first, fmt.Sprintf("arity %d first inferred here", len(v.Keys)))
		c.origin = "arityfirst"
		t.e.rep.errorAt("arity", at, fmt.Sprintf("inconsistent arity (%d vs %d)", len(v.Keys), n), c)
	}
}

func (t *typer) index(x *syntax.Index, want syntax.Type) syntax.Type {
	id, ok := x.Array.(*syntax.Ident)
	if !ok {
		t.expr(x.Array, tUnknown)
		for _, k := range x.Keys {
			t.expr(k, tLong)
		}
		return tLong
	}
	v := id.Var
	if v == nil {
		return tUnknown
	}
	t.arity(v, id, len(x.Keys))
	for i, k := range x.Keys {
		if _, star := k.(*syntax.Star); star {
			continue
		}
		t.keyExpr(v, i, k)
	}
	if want != tUnknown {
		t.setVar(v, want, id)
	}
	return v.Type
}

// key records the type of key i of v, or reports the conflict.
func (t *typer) key(v *syntax.Var, i int, at syntax.Node, ty syntax.Type) {
	if ty == tUnknown || i >= len(v.Keys) {
		return
	}
	if at := t.keyAt[v]; len(at) < len(v.Keys) {
		t.keyAt[v] = append(at, make([]syntax.Node, len(v.Keys)-len(at))...)
	}
	if v.Keys[i] == tUnknown {
		v.Keys[i] = ty
		t.keyAt[v][i] = at
		t.changed = true
		return
	}
	if v.Keys[i] != ty {
		var chain []*Diagnostic
		if first := t.keyAt[v][i]; first != nil {
			c := note(first, fmt.Sprintf("type of index %d was first inferred here (%s)", i, v.Keys[i]))
			c.origin = "keyfirst"
			chain = append(chain, c)
		}
		t.e.rep.errorAt("keymismatch", at, fmt.Sprintf("index %d type mismatch (%s)", i, ty), chain...)
	}
}

// keyExpr types the expression k used as key i of v: its own type decides the
// key's, else the key's decides its.
func (t *typer) keyExpr(v *syntax.Var, i int, k syntax.Expr) {
	got := t.expr(k, tUnknown)
	if got == tUnknown {
		t.expr(k, keyType(v, i))
		return
	}
	t.key(v, i, k, got)
}

func (t *typer) in(x *syntax.In) {
	id, ok := x.Array.(*syntax.Ident)
	if !ok || id.Var == nil {
		return
	}
	v := id.Var
	t.arity(v, id, len(x.Keys))
	for i, k := range x.Keys {
		if _, star := k.(*syntax.Star); !star {
			t.keyExpr(v, i, k)
		}
	}
}

func (t *typer) binary(x *syntax.Binary) syntax.Type {
	switch x.Op {
	case ".":
		t.expr(x.X, tString)
		t.expr(x.Y, tString)
		return tString
	case "=~", "!~":
		t.expr(x.X, tString)
		t.expr(x.Y, tString)
		return tLong
	case "&&", "||":
		t.expr(x.X, tLong)
		t.expr(x.Y, tLong)
		return tLong
	case "<", ">", "<=", ">=", "==", "!=":
		lt, rt := t.expr(x.X, tUnknown), t.expr(x.Y, tUnknown)
		switch {
		case rt != tUnknown:
			t.expr(x.X, rt)
		case lt != tUnknown:
			t.expr(x.Y, lt)
		}
		return tLong
	}
	lt, rt := t.expr(x.X, tUnknown), t.expr(x.Y, tUnknown)
	if lt != tUnknown && rt != tUnknown && lt != rt && !isVarRef(x.X) && !isVarRef(x.Y) {
		t.e.rep.errorAt("sides", x, fmt.Sprintf("type mismatch: left and right sides don't agree (%s vs %s)", lt, rt))
		return tLong
	}
	t.expr(x.X, tLong)
	t.expr(x.Y, tLong)
	return tLong
}

func (t *typer) assign(x *syntax.Assign) syntax.Type {
	switch x.Op {
	case "=":
		rt := t.expr(x.RHS, tUnknown)
		lt := t.expr(x.LHS, rt)
		if rt == tUnknown && lt != tUnknown {
			t.expr(x.RHS, lt)
		}
		return lt
	case "<<<":
		t.expr(x.LHS, tStats)
		t.expr(x.RHS, tLong)
		return tUnknown
	case ".=":
		t.expr(x.LHS, tString)
		t.expr(x.RHS, tString)
		return tString
	}
	t.expr(x.LHS, tLong)
	t.expr(x.RHS, tLong)
	return tLong
}

func (t *typer) ternary(x *syntax.Ternary, want syntax.Type) syntax.Type {
	t.expr(x.Cond, tLong)
	tt, et := t.expr(x.Then, want), t.expr(x.Else, want)
	if want == tUnknown {
		switch {
		case tt != tUnknown:
			et = t.expr(x.Else, tt)
		case et != tUnknown:
			tt = t.expr(x.Then, et)
		}
	}
	if tt != tUnknown {
		return tt
	}
	return et
}

func (t *typer) call(x *syntax.Call) syntax.Type {
	f := x.Func
	if f == nil {
		return tUnknown
	}
	for i, a := range x.Args {
		if i >= len(f.Params) {
			t.expr(a, tUnknown)
			continue
		}
		p := f.Params[i]
		got := t.expr(a, p.Type)
		if p.Type == tUnknown && got != tUnknown {
			t.setVar(p, got, a)
		}
	}
	return f.Result
}

func (t *typer) print(x *syntax.PrintCall) syntax.Type {
	if x.Format != nil {
		t.printf(x)
	} else {
		for _, a := range x.Args {
			t.expr(a, tUnknown)
			if t.final && a.Type() == tUnknown && !isHist(a) && !needsType(a) && !t.e.rep.failed() {
				t.e.rep.errorAt("unresolved", x, "unresolved type ")
			}
		}
	}
	if x.Name[0] == 's' {
		return tString
	}
	return tUnknown
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
			t.e.rep.errorAt("format", x, err.Error())
			return
		}
		t.formats[x.Format] = f
	}
	kinds := f.Args()
	if len(kinds) != len(x.Args) {
		t.e.rep.errorAt("nargs", x, "Wrong number of args to formatted print operator")
	}
	for i, a := range x.Args {
		want := tUnknown
		if i < len(kinds) {
			want = kindType(kinds[i])
		}
		t.expr(a, want)
	}
}

func kindType(k format.Kind) syntax.Type {
	switch k {
	case format.KindLong:
		return tLong
	case format.KindString:
		return tString
	}
	return tUnknown
}
