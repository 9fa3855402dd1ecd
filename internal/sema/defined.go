package sema

import "github.com/bpftap/bpftap/internal/syntax"

// @defined of context expressions in kernel probes (and of @cast
// everywhere a kernel is known, context.go). Before the symbols
// of such a body are resolved, every @defined($var) or @defined(@cast ...)
// in it that can be resolved there is decided, as stap's variable expander decides it: 1 if the
// expression resolves, 0 if not, and replaced by that literal. A condition
// that held one (of an if, while, for, foreach limit, ternary, && or ||) is
// folded at once; if it folds to a literal, only what it selects is kept and
// the rest is dropped before anything in it is resolved. So
// `@defined($new) ? $new : $old` and `@choose_defined($new, $old)` name a
// variable this kernel may lack without an error, and the probe reads only
// the one it keeps. Conditions without such a @defined fold later, with the
// rest of the program (fold.go), and an expression that failed to resolve is
// reported only if it survives elision (types_expr.go).

// definedPruner rewrites a kernel probe's or a function's body; decided counts the
// @defined it replaced.
type definedPruner struct {
	s       *scope
	decided int
}

func (s *scope) pruneDefined(body *syntax.Block) {
	d := &definedPruner{s: s}
	d.stmt(body)
}

func (d *definedPruner) stmt(s syntax.Stmt) syntax.Stmt {
	if d.settle(s) {
		if r, ok := settledStmt(s); ok {
			return d.stmt(r)
		}
	}
	d.children(s)
	return s
}

func (d *definedPruner) expr(x syntax.Expr) syntax.Expr {
	if d.settle(x) {
		if r, ok := settledExpr(x); ok {
			return d.expr(r)
		}
	}
	if def, ok := x.(*syntax.Defined); ok {
		if v := d.s.decideDefined(def); v != nil {
			d.decided++
			return v
		}
	}
	d.children(x)
	return x
}

// children prunes the children of n but its condition, which settle has
// pruned already: pruning it again at every level of a chain of && or ||
// (the condition of each is the chain below it) took time exponential in
// the chain's length.
func (d *definedPruner) children(n syntax.Node) {
	var cond syntax.Expr
	if c := condOf(n); c != nil {
		cond = *c
	}
	syntax.RewriteChildren(n, func(x syntax.Expr) syntax.Expr {
		if x == cond {
			return x
		}
		return d.expr(x)
	}, d.stmt)
}

// settle prunes the condition of n (condOf) and, if it decided a @defined
// there, folds it and reports true: n may now settle on one branch.
func (d *definedPruner) settle(n syntax.Node) bool {
	c := condOf(n)
	if c == nil || *c == nil {
		return false
	}
	before := d.decided
	*c = d.expr(*c)
	if d.decided == before {
		return false
	}
	*c = (&folder{}).expr(*c)
	return true
}
