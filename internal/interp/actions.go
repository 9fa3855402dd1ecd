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
	w := &countWalk{nested: map[*syntax.Func]bool{}, cache: a.cache}
	w.stmt(b)
	r := countResult{n: w.n, finite: !w.infinite}
	a.cache[b] = r
	return r.n, r.finite
}

// countWalk counts a body's statements. The count of a function's body
// is made once (cache) and reused at every call: from within a cycle
// of calls, or from where it reaches one, it is infinite wherever it is
// made; else it is the same wherever it is made.
type countWalk struct {
	n        int64
	infinite bool
	nested   map[*syntax.Func]bool
	cache    map[*syntax.Block]countResult
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
		then := &countWalk{n: w.n, nested: w.nested, cache: w.cache}
		then.stmt(s.Then)
		els := &countWalk{n: w.n, nested: w.nested, cache: w.cache}
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
		r := w.call(c.Func)
		w.n += r.n
		w.infinite = w.infinite || !r.finite
		return !w.infinite
	})
}

// call counts the body of f, called.
func (w *countWalk) call(f *syntax.Func) countResult {
	body := f.Decl.Body
	if r, ok := w.cache[body]; ok {
		return r
	}
	w.nested[f] = true
	callee := &countWalk{nested: w.nested, cache: w.cache}
	callee.stmt(body)
	delete(w.nested, f)
	r := countResult{n: callee.n, finite: !callee.infinite}
	w.cache[body] = r
	return r
}
