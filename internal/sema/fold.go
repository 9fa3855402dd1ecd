package sema

import (
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
)

// Constant folding, stap's const_folder. Operators whose operands are
// literals become literals, and statements and expressions whose condition is
// a literal keep only the branch taken: `if (0) A else B` is B, `c ? x : y`
// with a literal c is x or y, a for or while loop whose condition is 0 is its
// initializer, a foreach with a literal limit ≤ 0 is nothing. stap folds even
// with -u, before type inference, so code in a dead branch is never typed.
//
// @defined(X) also collapses here (see typedDefined). Like stap, one
// @defined collapses per optimization round, and only in a round where
// nothing else changed.

type folder struct {
	changed, collapse bool
	// castValue is the value of a constant @cast (constcast.go).
	castValue func(syntax.Expr) (int64, bool)
}

// foldAll folds every probe and function body and reports whether anything
// changed; @defined collapses only if collapse is set.
func (e *elab) foldAll(collapse bool) bool {
	f := &folder{collapse: collapse, castValue: e.castValue}
	for _, p := range e.prog.Probes {
		f.block(p.Body)
	}
	for _, fn := range e.funcsByName() {
		if fn.Decl != nil && fn.Decl.Body != nil {
			f.block(fn.Decl.Body)
		}
	}
	return f.changed
}

// typedDefined decides @defined(X) as stap's folder does before type
// inference: X is defined if its node already has a type. Only literals do:
// the initial type pass does not look inside @defined, and a context
// expression ($var, @var, @cast, @entry, autocasts) left here is one no
// probe can resolve (kernel probes decided theirs before, defined.go), so
// @defined of a variable, a call or a context expression is 0.
func typedDefined(x syntax.Expr) bool { return x.Type() != tUnknown }

func isContextExpr(x syntax.Expr) bool {
	switch x.(type) {
	case *syntax.TargetVar, *syntax.Cast, *syntax.AtVar, *syntax.Entry, *syntax.Autocast:
		return true
	}
	return false
}

func (f *folder) block(b *syntax.Block) {
	for i, s := range b.Stmts {
		b.Stmts[i] = f.stmt(s)
	}
}

// stmt folds a statement and returns its replacement.
func (f *folder) stmt(s syntax.Stmt) syntax.Stmt {
	if c := condOf(s); c != nil && *c != nil {
		*c = f.expr(*c)
		if r, ok := settledStmt(s); ok {
			f.changed = true
			return f.stmt(r)
		}
	}
	f.children(s)
	return s
}

// condOf returns the operand that decides which parts of n run: the
// condition of an if, while, for or ternary, the limit of a foreach, the
// left operand of && and ||; nil for other nodes.
func condOf(n syntax.Node) *syntax.Expr {
	switch n := n.(type) {
	case *syntax.IfStmt:
		return &n.Cond
	case *syntax.WhileStmt:
		return &n.Cond
	case *syntax.ForStmt:
		return &n.Cond
	case *syntax.ForeachStmt:
		return &n.Limit
	case *syntax.Ternary:
		return &n.Cond
	case *syntax.Binary:
		if n.Op == "&&" || n.Op == "||" {
			return &n.X
		}
	}
	return nil
}

// settledStmt returns what a statement whose condition (condOf) is a
// literal becomes: the branch taken (not yet folded), a loop that never
// runs nothing, or its for's initializer; ok is false when the condition
// does not decide.
func settledStmt(s syntax.Stmt) (r syntax.Stmt, ok bool) {
	null := &syntax.NullStmt{Pos: s.Position()}
	switch s := s.(type) {
	case *syntax.IfStmt:
		if s.Else == nil {
			return branch[syntax.Stmt](s.Cond, s.Then, null)
		}
		return branch(s.Cond, s.Then, s.Else)
	case *syntax.WhileStmt:
		return null, isFalse(s.Cond)
	case *syntax.ForStmt:
		if !isFalse(s.Cond) {
			return nil, false
		}
		if s.Init == nil {
			return null, true
		}
		return &syntax.ExprStmt{X: s.Init}, true
	case *syntax.ForeachStmt:
		n, ok := s.Limit.(*syntax.NumberLit)
		return null, ok && n.Value <= 0
	}
	return nil, false
}

// settledExpr returns what a ternary whose condition is a literal becomes
// (the branch taken, not yet folded), or the value of a && or || its
// literal left operand decides; ok is false otherwise.
func settledExpr(x syntax.Expr) (syntax.Expr, bool) {
	switch x := x.(type) {
	case *syntax.Ternary:
		return branch(x.Cond, x.Then, x.Else)
	case *syntax.Binary:
		if r := shortCircuit(x); r != nil {
			return r, true
		}
	}
	return nil, false
}

// branch picks then or els by a literal condition; ok is false when cond
// is not a literal.
func branch[T any](cond syntax.Expr, then, els T) (r T, ok bool) {
	n, ok := cond.(*syntax.NumberLit)
	switch {
	case !ok:
		return r, false
	case n.Value != 0:
		return then, true
	}
	return els, true
}

// shortCircuit is the value of `0 && y` or `N || y` (N nonzero), nil for
// other operators and operands.
func shortCircuit(x *syntax.Binary) syntax.Expr {
	n, ok := x.X.(*syntax.NumberLit)
	if ok && (x.Op == "&&" && n.Value == 0 || x.Op == "||" && n.Value != 0) {
		return number(x, boolValue(x.Op == "||"))
	}
	return nil
}

func isFalse(x syntax.Expr) bool {
	n, ok := x.(*syntax.NumberLit)
	return ok && n.Value == 0
}

// castConst is the value of a constant @cast (constcast.go); ok is
// false for another, or in a folder that does not know them.
func (f *folder) castConst(x *syntax.Cast) (int64, bool) {
	if f.castValue == nil {
		return 0, false
	}
	return f.castValue(x)
}

func (f *folder) exprOpt(x syntax.Expr) syntax.Expr {
	if x == nil {
		return nil
	}
	return f.expr(x)
}

// expr folds an expression (its operands first) and returns its replacement.
func (f *folder) expr(x syntax.Expr) syntax.Expr {
	switch x := x.(type) {
	case *syntax.Ternary:
		x.Cond = f.expr(x.Cond)
		if r, ok := settledExpr(x); ok {
			f.changed = true
			return f.expr(r)
		}
	case *syntax.Defined:
		return f.defined(x)
	case *syntax.Cast:
		if v, ok := f.castConst(x); ok {
			f.changed = true
			return number(x, v)
		}
	case *syntax.Binary:
		x.X, x.Y = f.expr(x.X), f.expr(x.Y)
		if r := f.binary(x); r != nil {
			f.changed = true
			return r
		}
		return x
	case *syntax.Unary:
		x.X = f.expr(x.X)
		if n, ok := x.X.(*syntax.NumberLit); ok {
			f.changed = true
			return number(x, unaryValue(x.Op, n.Value))
		}
		return x
	}
	f.children(x)
	return x
}

func (f *folder) defined(x *syntax.Defined) syntax.Expr {
	if !f.collapse || f.changed {
		return x
	}
	f.changed = true
	if typedDefined(x.X) {
		return number(x, 1)
	}
	return number(x, 0)
}

// binary folds an operator with literal operands; nil if it cannot.
func (f *folder) binary(x *syntax.Binary) syntax.Expr {
	ln, lnum := x.X.(*syntax.NumberLit)
	rn, rnum := x.Y.(*syntax.NumberLit)
	ls, lstr := x.X.(*syntax.StringLit)
	rs, rstr := x.Y.(*syntax.StringLit)
	if r := shortCircuit(x); r != nil {
		return r
	}
	switch {
	case lnum && rnum:
		v, ok := numericValue(x.Op, ln.Value, rn.Value)
		if !ok {
			return nil
		}
		return number(x, v)
	case lstr && rstr && x.Op == ".":
		return &syntax.StringLit{Typed: syntax.Typed{Pos: x.Pos, T: tString}, Value: ls.Value + rs.Value}
	case lstr && rstr:
		if v, ok := compare(x.Op, strings.Compare(ls.Value, rs.Value)); ok {
			return number(x, v)
		}
	}
	return nil
}

func compare(op string, c int) (int64, bool) {
	switch op {
	case "==":
		return boolValue(c == 0), true
	case "!=":
		return boolValue(c != 0), true
	case "<":
		return boolValue(c < 0), true
	case ">":
		return boolValue(c > 0), true
	case "<=":
		return boolValue(c <= 0), true
	case ">=":
		return boolValue(c >= 0), true
	}
	return 0, false
}

// numericValue computes a binary operator on two numbers as stap's folder
// does (a division by a literal 0 is left for run time).
func numericValue(op string, a, b int64) (int64, bool) {
	if v, ok := compare(op, compareInts(a, b)); ok {
		return v, true
	}
	// stap clamps the count to [0, 64] and its C++ shift then takes it
	// modulo 64, as x86 does: 1 << 64 folds to 1.
	shift := uint(min(max(b, 0), 64)) % 64
	switch op {
	case "+":
		return a + b, true
	case "-":
		return a - b, true
	case "*":
		return a * b, true
	case "&":
		return a & b, true
	case "|":
		return a | b, true
	case "^":
		return a ^ b, true
	case ">>":
		return a >> shift, true
	case "<<":
		return a << shift, true
	case "&&":
		return boolValue(a != 0 && b != 0), true
	case "||":
		return boolValue(a != 0 || b != 0), true
	case "/", "%":
		return divide(op, a, b)
	}
	return 0, false
}

func compareInts(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func divide(op string, a, b int64) (int64, bool) {
	switch {
	case b == 0:
		return 0, false
	case b == -1 && op == "/":
		return -a, true // wraps for the most negative number, as stap's folder does
	case b == -1:
		return 0, true
	case op == "/":
		return a / b, true
	}
	return a % b, true
}

func unaryValue(op string, v int64) int64 {
	switch op {
	case "-":
		return -v
	case "!":
		return boolValue(v == 0)
	case "~":
		return ^v
	}
	return v
}

func boolValue(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// number is the literal that replaces folded node x (stap keeps the
// operator's token).
func number(x syntax.Expr, v int64) *syntax.NumberLit {
	return &syntax.NumberLit{Typed: syntax.Typed{Pos: x.Position(), T: tLong}, Value: v, Text: strconv.FormatInt(v, 10)}
}

// children folds the direct expression and statement children of n.
func (f *folder) children(n syntax.Node) { syntax.RewriteChildren(n, f.expr, f.stmt) }

// rewriteExprs replaces, in n and below it, each expression for which
// replace reports a replacement (done), whose operands it leaves alone.
func rewriteExprs(n syntax.Node, replace func(syntax.Expr) (syntax.Expr, bool)) {
	var expr func(syntax.Expr) syntax.Expr
	var stmt func(syntax.Stmt) syntax.Stmt
	stmt = func(st syntax.Stmt) syntax.Stmt {
		syntax.RewriteChildren(st, expr, stmt)
		return st
	}
	expr = func(x syntax.Expr) syntax.Expr {
		if y, done := replace(x); done {
			return y
		}
		syntax.RewriteChildren(x, expr, stmt)
		return x
	}
	syntax.RewriteChildren(n, expr, stmt)
}
