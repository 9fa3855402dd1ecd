package sema

import (
	"github.com/bpftap/bpftap/internal/syntax"
)

// Typing statements: conditions are longs, deletes and foreach loops type
// the arrays they name, return settles the function's result.

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
