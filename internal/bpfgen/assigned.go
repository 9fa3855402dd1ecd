package bpfgen

import "github.com/bpftap/bpftap/internal/syntax"

// Locals read before they are written. A probe's locals start as 0 or ""
// (stap's semantics), a store per local at every event; the merged
// syscall.* program has one local per named argument of every call, some
// 150 stores before its dispatch, where each call's branch assigns its
// own locals before it reads them. readBeforeWritten finds the locals some
// path may read before assigning them; the others need no zeroing.
//
// The walk follows execution order with the set of locals every path so
// far has assigned. Branches start from a copy and meet in the
// intersection; a branch that ends in next, return, break or continue
// does not reach the meet. A loop's body and a catch block may not run,
// so what they assign is dropped after them. Only `x = ...` (and a chain
// `x = y = ...`) as a whole statement or the right-hand side of one
// assigns for sure; a local in any other place — an operand, a compound
// assignment, an assignment inside a condition — counts as read.

// assignedSet is the locals assigned on every path; nil when no path
// reaches the point (after next, return, break, continue).
type assignedSet map[*syntax.Var]bool

func (a assignedSet) with(vs ...*syntax.Var) assignedSet {
	c := assignedSet{}
	for v := range a {
		c[v] = true
	}
	for _, v := range vs {
		c[v] = true
	}
	return c
}

// meet is the state where two paths join.
func meet(x, y assignedSet) assignedSet {
	if x == nil {
		return y
	}
	if y == nil {
		return x
	}
	m := assignedSet{}
	for v := range x {
		if y[v] {
			m[v] = true
		}
	}
	return m
}

// readBeforeWritten returns the locals of body that some path may read
// before assigning them.
func readBeforeWritten(body syntax.Stmt) map[*syntax.Var]bool {
	w := assignWalk{}
	w.stmt(body, assignedSet{})
	return w
}

// assignWalk collects the locals read where they may be unassigned.
type assignWalk map[*syntax.Var]bool

func (w assignWalk) stmt(s syntax.Stmt, a assignedSet) assignedSet {
	if a == nil || s == nil {
		return a
	}
	switch s := s.(type) {
	case *syntax.Block:
		for _, x := range s.Stmts {
			a = w.stmt(x, a)
		}
		return a
	case *syntax.ExprStmt:
		return w.expr(s.X, a)
	case *syntax.IfStmt:
		a = w.expr(s.Cond, a)
		return meet(w.stmt(s.Then, a.with()), w.stmt(s.Else, a.with()))
	case *syntax.WhileStmt:
		a = w.expr(s.Cond, a)
		w.stmt(s.Body, a.with())
		return a
	case *syntax.ForStmt:
		a = w.expr(s.Cond, w.expr(s.Init, a))
		w.stmt(s.Body, a.with())
		w.expr(s.Post, a)
		return a
	case *syntax.ForeachStmt:
		for _, x := range append([]syntax.Expr{s.Array, s.Limit}, s.Slice...) {
			w.reads(x, a)
		}
		var bound []*syntax.Var
		for _, k := range s.Keys {
			bound = append(bound, k.Var)
		}
		if s.Value != nil {
			bound = append(bound, s.Value.Var)
		}
		w.stmt(s.Body, a.with(bound...))
		return a
	case *syntax.TryStmt:
		body := w.stmt(s.Body, a.with())
		caught := a.with()
		if s.CatchVar != nil {
			caught = a.with(s.CatchVar.Var)
		}
		return meet(body, w.stmt(s.Catch, caught))
	case *syntax.ReturnStmt:
		w.expr(s.Value, a)
		return nil
	case *syntax.NextStmt, *syntax.BreakStmt, *syntax.ContinueStmt:
		return nil
	}
	w.reads(s, a)
	return a
}

// expr notes the reads of e from state a and returns the state after it.
func (w assignWalk) expr(e syntax.Expr, a assignedSet) assignedSet {
	if e == nil {
		return a
	}
	if as, ok := e.(*syntax.Assign); ok && as.Op == "=" {
		if id, ok := as.LHS.(*syntax.Ident); ok && id.Var != nil && id.Var.Kind == syntax.VarLocal {
			return w.expr(as.RHS, a).with(id.Var)
		}
	}
	w.reads(e, a)
	return a
}

// reads notes every local under n that a leaves unassigned.
func (w assignWalk) reads(n syntax.Node, a assignedSet) {
	syntax.Walk(n, func(x syntax.Node) bool {
		if id, ok := x.(*syntax.Ident); ok && id.Var != nil && id.Var.Kind == syntax.VarLocal && !a[id.Var] {
			w[id.Var] = true
		}
		return true
	})
}
