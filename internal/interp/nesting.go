package interp

import (
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// defaultNesting is stap's MAXNESTING: one more than the deepest chain of
// calls made from function bodies, plus ten when a function is recursive.
// Builtins count as calls, as they are functions in stap's tapset.
//
// stap walks every chain of calls from every function, which takes time
// quadratic in a chain's length (20,000 functions each calling the next)
// and exponential in a function calling another twice, and so on. Here
// each function's depth is computed once, its callees' first: a function
// outside any cycle of calls has the depth stap finds. A set of mutually
// recursive functions (a strongly connected component of the call graph)
// counts as deep as its number of functions, then one more call (back
// into the set, or out of it): the longest chain stap's walk can find
// through it, which it finds for one recursive function and for a cycle;
// for other shapes stap may find a shorter one, and the default here is
// then a little higher.
func defaultNesting(prog *sema.Program) int {
	g := newCallGraph(prog)
	deepest := 0
	for _, f := range g.funcs {
		g.component(f)
		deepest = max(deepest, g.depth(f, false))
	}
	depth := deepest + 1
	if g.recursive {
		depth += 10
	}
	return depth
}

// callGraph holds the calls each script function makes, and what is
// learnt of them: their components (Tarjan's algorithm) and depths.
type callGraph struct {
	funcs []*syntax.Func
	calls map[*syntax.Func][]*syntax.Func // each call made, callee with a body or not
	// Tarjan's algorithm: the order each function was reached in, the
	// least order reachable from it, the stack of the component being
	// formed; comp is each function's component once formed.
	order, low map[*syntax.Func]int
	stack      []*syntax.Func
	onStack    map[*syntax.Func]bool
	comp       map[*syntax.Func]*component
	recursive  bool
}

// component is a strongly connected set of functions; cyclic unless it
// is one function that does not call itself.
type component struct {
	funcs  []*syntax.Func
	cyclic bool
	exits  int // the deepest call out of the set, 1 at least (see defaultNesting)
	done   bool
}

func newCallGraph(prog *sema.Program) *callGraph {
	g := &callGraph{calls: map[*syntax.Func][]*syntax.Func{}, order: map[*syntax.Func]int{},
		low: map[*syntax.Func]int{}, onStack: map[*syntax.Func]bool{}, comp: map[*syntax.Func]*component{}}
	for _, f := range prog.Funcs {
		if hasBody(f) {
			g.funcs = append(g.funcs, f)
			g.calls[f] = callsIn(f.Decl.Body)
		}
	}
	return g
}

func hasBody(f *syntax.Func) bool { return f.Decl != nil && f.Decl.Body != nil }

// callsIn lists the callees of the calls in body, arguments' included.
func callsIn(body syntax.Node) []*syntax.Func {
	var list []*syntax.Func
	syntax.Walk(body, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.Call); ok && c.Func != nil {
			list = append(list, c.Func)
		}
		return true
	})
	return list
}

// component forms the component of f (and of what f reaches), once.
func (g *callGraph) component(f *syntax.Func) {
	if _, seen := g.order[f]; seen {
		return
	}
	g.order[f], g.low[f] = len(g.order), len(g.order)
	g.stack = append(g.stack, f)
	g.onStack[f] = true
	for _, c := range g.calls[f] {
		if !hasBody(c) {
			continue
		}
		if _, seen := g.order[c]; !seen {
			g.component(c)
			g.low[f] = min(g.low[f], g.low[c])
		} else if g.onStack[c] {
			g.low[f] = min(g.low[f], g.order[c])
		}
	}
	if g.low[f] != g.order[f] {
		return
	}
	comp := &component{}
	for {
		top := g.stack[len(g.stack)-1]
		g.stack = g.stack[:len(g.stack)-1]
		g.onStack[top] = false
		g.comp[top] = comp
		comp.funcs = append(comp.funcs, top)
		if top == f {
			break
		}
	}
	comp.cyclic = len(comp.funcs) > 1 || calls(g.calls[f], f)
	g.recursive = g.recursive || comp.cyclic
}

func calls(list []*syntax.Func, f *syntax.Func) bool {
	for _, c := range list {
		if c == f {
			return true
		}
	}
	return false
}

// depth is the deepest chain of calls from f's body: with f among the
// calls being made (entered) or not (f's body walked from the top, as
// stap walks every function's).
func (g *callGraph) depth(f *syntax.Func, entered bool) int {
	comp := g.comp[f]
	if !comp.done {
		g.settle(comp)
	}
	n := len(comp.funcs)
	if entered {
		n--
	}
	if !comp.cyclic {
		n = 0 // exits are the calls of f itself
	}
	return n + comp.exits
}

// settle computes the deepest call out of comp, its callees' first.
func (g *callGraph) settle(comp *component) {
	comp.done = true // a call back into comp is no exit
	comp.exits = 1
	for _, f := range comp.funcs {
		for _, c := range g.calls[f] {
			switch {
			case !hasBody(c):
				comp.exits = max(comp.exits, 1)
			case g.comp[c] != comp:
				comp.exits = max(comp.exits, 1+g.depth(c, true))
			}
		}
	}
	if !comp.cyclic && len(g.calls[comp.funcs[0]]) == 0 {
		comp.exits = 0 // no call at all
	}
}
