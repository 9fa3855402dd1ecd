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

// assignedSet is the locals assigned on every path, a bit for each by
// the walk's numbering of them (assignWalk.bit); nil when no path reaches
// the point (after next, return, break, continue). (A map, copied at each
// branch, made the walk of syscall.*'s dispatch a sixth of its
// translation.)
type assignedSet []uint64

func (a assignedSet) has(bit int) bool { return bit/64 < len(a) && a[bit/64]&(1<<(bit%64)) != 0 }

// with is a copy of a with bits added.
func (a assignedSet) with(bits ...int) assignedSet {
	n := len(a)
	for _, b := range bits {
		n = max(n, b/64+1)
	}
	c := make(assignedSet, n)
	copy(c, a)
	for _, b := range bits {
		c[b/64] |= 1 << (b % 64)
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
	m := make(assignedSet, min(len(x), len(y)))
	for i := range m {
		m[i] = x[i] & y[i]
	}
	return m
}

// readBeforeWritten returns the locals of body that some path may read
// before assigning them.
func readBeforeWritten(body syntax.Stmt) map[*syntax.Var]bool {
	w := &assignWalk{read: map[*syntax.Var]bool{}, bits: map[*syntax.Var]int{}}
	w.stmt(body, assignedSet{})
	return w.read
}

// assignWalk collects the locals read where they may be unassigned.
type assignWalk struct {
	read map[*syntax.Var]bool
	bits map[*syntax.Var]int // each local's bit, numbered as met
}

// bit is v's bit in the walk's sets.
func (w *assignWalk) bit(v *syntax.Var) int {
	b, ok := w.bits[v]
	if !ok {
		b = len(w.bits)
		w.bits[v] = b
	}
	return b
}

func (w *assignWalk) stmt(s syntax.Stmt, a assignedSet) assignedSet {
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
		var bound []int
		for _, k := range s.Keys {
			bound = append(bound, w.bit(k.Var))
		}
		if s.Value != nil {
			bound = append(bound, w.bit(s.Value.Var))
		}
		w.stmt(s.Body, a.with(bound...))
		return a
	case *syntax.TryStmt:
		body := w.stmt(s.Body, a.with())
		caught := a.with()
		if s.CatchVar != nil {
			caught = a.with(w.bit(s.CatchVar.Var))
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
func (w *assignWalk) expr(e syntax.Expr, a assignedSet) assignedSet {
	if e == nil {
		return a
	}
	if as, ok := e.(*syntax.Assign); ok && as.Op == "=" {
		if id, ok := as.LHS.(*syntax.Ident); ok && id.Var != nil && id.Var.Kind == syntax.VarLocal {
			return w.expr(as.RHS, a).with(w.bit(id.Var))
		}
	}
	w.reads(e, a)
	return a
}

// reads notes every local under n that a leaves unassigned.
func (w *assignWalk) reads(n syntax.Node, a assignedSet) {
	syntax.Walk(n, func(x syntax.Node) bool {
		if id, ok := x.(*syntax.Ident); ok && id.Var != nil && id.Var.Kind == syntax.VarLocal && !a.has(w.bit(id.Var)) {
			w.read[id.Var] = true
		}
		return true
	})
}
