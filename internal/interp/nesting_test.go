package interp

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bpftap/bpftap/internal/growth"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// callProgram is a program of n script functions f0 ... fn-1 whose bodies
// call the functions calls[i] lists (-1: a builtin), one call a statement,
// each inside an if (the statement counts follow both branches).
func callProgram(n int, calls [][]int) *sema.Program {
	builtin := &syntax.Func{Name: "builtin"}
	funcs := make([]*syntax.Func, n)
	for i := range funcs {
		funcs[i] = &syntax.Func{Name: fmt.Sprintf("f%d", i), Decl: &syntax.FuncDecl{Body: &syntax.Block{}}}
	}
	for i, list := range calls {
		body := funcs[i].Decl.Body
		for _, c := range list {
			callee := builtin
			if c >= 0 {
				callee = funcs[c]
			}
			call := &syntax.ExprStmt{X: &syntax.Call{Name: callee.Name, Func: callee}}
			body.Stmts = append(body.Stmts, &syntax.IfStmt{Cond: &syntax.NumberLit{}, Then: call})
		}
	}
	return &sema.Program{Funcs: funcs}
}

// stapNesting is stap's computation of MAXNESTING: every chain of calls
// from every function's body walked (exponential; a reference for small
// programs).
func stapNesting(prog *sema.Program) int {
	deepest, recursive := 0, false
	stack := map[*syntax.Func]bool{}
	var walk func(f *syntax.Func, depth int)
	walk = func(f *syntax.Func, depth int) {
		syntax.Walk(f.Decl.Body, func(n syntax.Node) bool {
			c, ok := n.(*syntax.Call)
			if !ok {
				return true
			}
			deepest = max(deepest, depth+1)
			switch {
			case stack[c.Func]:
				recursive = true
			case hasBody(c.Func):
				stack[c.Func] = true
				walk(c.Func, depth+1)
				delete(stack, c.Func)
			}
			return false
		})
	}
	for _, f := range prog.Funcs {
		walk(f, 0)
	}
	if recursive {
		return deepest + 11
	}
	return deepest + 1
}

// TestDefaultNesting: the default MAXNESTING is stap's where no function
// is in a cycle of calls, or where a cycle is the only way round (one
// recursive function, a ring), and never lower elsewhere.
func TestDefaultNesting(t *testing.T) {
	exact := []struct {
		name  string
		calls [][]int
	}{
		{"no calls", [][]int{{}, {}}},
		{"a builtin", [][]int{{-1}}},
		{"a chain", [][]int{{1}, {2}, {3}, {-1}}},
		{"a diamond", [][]int{{1, 2}, {3}, {3, -1}, {-1}}},
		{"one recursive function", [][]int{{0, -1}}},
		{"fibonacci and a chain", [][]int{{0, 0, 1}, {2}, {-1}}},
		{"a ring", [][]int{{1}, {2}, {0}}},
		{"a ring with a way out", [][]int{{1}, {2, 3}, {0}, {4}, {-1}}},
		{"two rings in a row", [][]int{{1}, {0, 2}, {3}, {2}}},
	}
	for _, c := range exact {
		prog := callProgram(len(c.calls), c.calls)
		if got, want := defaultNesting(prog), stapNesting(prog); got != want {
			t.Errorf("%s: %d, stap's %d", c.name, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rng.IntN(6)
		calls := make([][]int, n)
		for i := range calls {
			for range rng.IntN(3) {
				calls[i] = append(calls[i], rng.IntN(n+1)-1)
			}
		}
		prog := callProgram(n, calls)
		if got, want := defaultNesting(prog), stapNesting(prog); got < want {
			t.Fatalf("calls %v: %d, below stap's %d", calls, got, want)
		}
	}
}

// chainProgram is n functions each calling the next (calls times), the
// last a builtin: calls^n chains of calls, n+1 deep.
func chainProgram(n, calls int) *sema.Program {
	list := make([][]int, n)
	for i := range list {
		for range calls {
			list[i] = append(list[i], i+1)
		}
	}
	list[n-1] = []int{-1}
	return callProgram(n, list)
}

// TestCallCountsCost: the default MAXNESTING and the statement counts of
// bodies grow linearly with a chain of calls (20,000 functions each
// returning the next one's value did not start in 10 minutes), and are
// right.
func TestCallCountsCost(t *testing.T) {
	growth.Linear(t, []int{1000, 2000, 4000, 8000}, 2, func(n int) float64 {
		twice, once := chainProgram(n, 2), chainProgram(n, 1)
		return growth.Allocated(func() {
			if got := defaultNesting(twice); got != n+1 {
				t.Fatalf("MAXNESTING of %d functions in a chain: %d, want %d", n, got, n+1)
			}
			// each function: an if and the call in it; a run counts
			// each function's body as it enters it
			counter := newActionCounter(once)
			for i, f := range once.Funcs {
				count, finite := counter.count(f.Decl.Body)
				if want := int64(2 * (n - i)); count != want || !finite {
					t.Fatalf("statements of %d functions in a chain: %d, %v, want %d", n-i, count, finite, want)
				}
			}
		})
	})
}
