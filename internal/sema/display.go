package sema

import "github.com/bpftap/bpftap/internal/syntax"

// Which globals stap displays at the end of a run.
//
// stap displays a script's global that is written and whose value nothing
// uses. A plain read uses it; so does a read-modify-write (`++`, `--`,
// `+=`, `.=` ...) whose result the code goes on to use, which stap decides
// by the syntactic context: inside the condition of an if, a for or a
// while (stap parses it as a for), an argument of a function or print
// call, the value of a return, the right side of `=` or `<<<`, an array
// index, the condition of `?:`, a foreach's slice or limit, or a delete.
// Anywhere else (an expression statement, an operand of a binary operator
// there) the result is dropped: `n++` alone, or `arr[k] += 3`, writes n
// and arr without using them, and they are displayed. Function bodies
// start afresh, whatever the context of their call.

// usedGlobals returns the variables whose value the bodies use, in stap's
// sense above.
func usedGlobals(bodies []syntax.Node) map[*syntax.Var]bool {
	u := &useWalker{used: map[*syntax.Var]bool{}}
	for _, n := range bodies {
		u.walk(n, false)
	}
	return u.used
}

type useWalker struct {
	used map[*syntax.Var]bool
}

// walk marks the variables n uses; inUse tells whether the value of an
// expression at n goes on to be used.
func (u *useWalker) walk(n syntax.Node, inUse bool) {
	syntax.Walk(n, func(c syntax.Node) bool { return u.visit(c, inUse) })
}

func (u *useWalker) walkAll(inUse bool, nodes ...syntax.Node) {
	for _, n := range nodes {
		u.walk(n, inUse)
	}
}

// visit marks what n uses and reports whether its children are to be
// walked in the same context.
func (u *useWalker) visit(n syntax.Node, inUse bool) bool {
	switch n := n.(type) {
	case *syntax.Ident:
		u.mark(n.Var)
	case *syntax.IncDec:
		u.target(n.X, inUse)
	case *syntax.Assign:
		if pureWrite(n.Op) { // the target written only: its keys and the value are used
			u.keys(n.LHS)
			u.walk(n.RHS, true)
			return false
		}
		u.target(n.LHS, inUse)
		u.walk(n.RHS, inUse)
	case *syntax.DeleteStmt:
		u.target(n.Target, true)
	case *syntax.IfStmt:
		u.walk(n.Cond, true)
		u.walkAll(false, n.Then, n.Else)
	case *syntax.WhileStmt: // stap parses it as a for
		u.walk(n.Cond, true)
		u.walk(n.Body, false)
	case *syntax.ForStmt:
		u.walk(n.Cond, true)
		u.walkAll(false, n.Init, n.Post, n.Body)
	case *syntax.ForeachStmt: // its keys and value are written only
		u.walkAll(true, n.Array, n.Limit)
		for _, x := range n.Slice {
			u.walk(x, true)
		}
		u.walk(n.Body, false)
	case *syntax.Ternary:
		u.walk(n.Cond, true)
		u.walkAll(inUse, n.Then, n.Else)
	case *syntax.Index:
		u.walk(n.Array, inUse)
		u.keys(n)
	case *syntax.Call, *syntax.PrintCall, *syntax.ReturnStmt:
		u.children(n, true)
	case *syntax.ExprStmt, *syntax.Block, *syntax.TryStmt:
		u.children(n, false)
	default:
		return true
	}
	return false
}

// children walks the children of n in context inUse.
func (u *useWalker) children(n syntax.Node, inUse bool) {
	syntax.Walk(n, func(c syntax.Node) bool {
		if c == n {
			return true
		}
		u.walk(c, inUse)
		return false
	})
}

// target marks the target of a read-modify-write: used when its result
// is, its keys always.
func (u *useWalker) target(x syntax.Expr, inUse bool) {
	u.keys(x)
	if v := lvalueVar(x); v != nil && inUse {
		u.mark(v)
	}
}

// keys marks what the keys of an indexed target use.
func (u *useWalker) keys(x syntax.Expr) {
	if ix, ok := x.(*syntax.Index); ok {
		for _, k := range ix.Keys {
			u.walk(k, true)
		}
	}
}

func (u *useWalker) mark(v *syntax.Var) {
	if v != nil {
		u.used[v] = true
	}
}
