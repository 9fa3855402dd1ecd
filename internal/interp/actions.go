package interp

import (
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// actionCounter computes stap's static statement counts (max_action_info):
// the most statements a body can run when it has no loop and no recursion,
// following calls into script functions. Such bodies are charged once on
// entry; the others note their actions as they go.
type actionCounter struct {
	cache map[*syntax.Block]countResult
}

type countResult struct {
	n      int64
	finite bool
}

func newActionCounter(*sema.Program) *actionCounter {
	return &actionCounter{cache: map[*syntax.Block]countResult{}}
}

func (a *actionCounter) count(b *syntax.Block) (int64, bool) {
	if r, ok := a.cache[b]; ok {
		return r.n, r.finite
	}
	w := &countWalk{nested: map[*syntax.Func]bool{}}
	w.stmt(b)
	r := countResult{n: w.n, finite: !w.infinite}
	a.cache[b] = r
	return r.n, r.finite
}

type countWalk struct {
	n        int64
	infinite bool
	nested   map[*syntax.Func]bool
}

func (w *countWalk) stmt(s syntax.Stmt) {
	if w.infinite || s == nil {
		return
	}
	switch s := s.(type) {
	case *syntax.Block:
		for _, x := range s.Stmts {
			w.stmt(x)
		}
	case *syntax.ExprStmt:
		w.n++
		w.expr(s.X)
	case *syntax.IfStmt:
		w.n++
		w.expr(s.Cond)
		then := &countWalk{n: w.n, nested: w.nested}
		then.stmt(s.Then)
		els := &countWalk{n: w.n, nested: w.nested}
		els.stmt(s.Else)
		w.n = max(then.n, els.n)
		w.infinite = then.infinite || els.infinite
	case *syntax.WhileStmt, *syntax.ForStmt, *syntax.ForeachStmt:
		w.infinite = true
	case *syntax.TryStmt:
		w.stmt(s.Body)
		w.stmt(s.Catch)
	default: // null, return, delete, next, break, continue: their expressions are not followed
		w.n++
	}
}

// expr follows the calls of script functions in e.
func (w *countWalk) expr(e syntax.Expr) {
	syntax.Walk(e, func(n syntax.Node) bool {
		c, ok := n.(*syntax.Call)
		if !ok || c.Func == nil || c.Func.Decl == nil || c.Func.Decl.Body == nil {
			return !w.infinite
		}
		if w.nested[c.Func] {
			w.infinite = true
			return false
		}
		w.nested[c.Func] = true
		w.stmt(c.Func.Decl.Body)
		delete(w.nested, c.Func)
		return !w.infinite
	})
}

// defaultNesting is stap's MAXNESTING: one more than the deepest chain of calls
// made from function bodies, plus ten when a function is recursive. Builtins
// count as calls, as they are functions in stap's tapset.
func defaultNesting(prog *sema.Program) int {
	n := &nestingWalk{stack: map[*syntax.Func]bool{}}
	for _, f := range prog.Funcs {
		if f.Decl != nil && f.Decl.Body != nil {
			n.body(f.Decl.Body, 0)
		}
	}
	depth := n.max + 1
	if n.recursive {
		depth += 10
	}
	return depth
}

type nestingWalk struct {
	max       int
	recursive bool
	stack     map[*syntax.Func]bool
}

func (n *nestingWalk) body(b syntax.Node, depth int) {
	syntax.Walk(b, func(node syntax.Node) bool {
		c, ok := node.(*syntax.Call)
		if !ok || c.Func == nil {
			return true
		}
		for _, a := range c.Args {
			n.body(a, depth)
		}
		n.max = max(n.max, depth+1)
		switch {
		case n.stack[c.Func]:
			n.recursive = true
		case c.Func.Decl != nil && c.Func.Decl.Body != nil:
			n.stack[c.Func] = true
			n.body(c.Func.Decl.Body, depth+1)
			delete(n.stack, c.Func)
		}
		return false
	})
}
