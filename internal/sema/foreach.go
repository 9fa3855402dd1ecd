package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
)

// The foreach check, stap's semantic_pass_vars: an array must not change
// while a foreach iterates over it. The walk keeps the arrays of the loops it
// is inside (a loop over @hist_log(s[k]) iterates s), outermost first, and
// reports
//
//   - an element of one of them written in the loop: the target of an
//     assignment (any operator, <<< included), of ++ or --, or of delete;
//   - a call of a function whose own body writes an element of one of them.
//
// That is exactly what stap counts, and no more: deleting a whole array
// (`delete x`) is not a change, and a call is judged by the writes of the
// called function's body alone, not by those of the functions it calls in
// turn. A loop nested in a loop over the same array reports a write once per
// loop. Only the loop's array, keys, value, limit and body are walked, not
// its slice, as stap does.
//
// Functions are checked in name order, then the probes, stap's order.

func (e *elab) checkForeachWrites() {
	if !e.anyGlobal(func(v *syntax.Var) bool { return v.IsArray || statistic(v) }) {
		return // a loop iterates a global array or a statistic's histogram
	}
	funcs := e.funcsByName()
	c := &foreachCheck{e: e, writes: map[*syntax.Func]map[*syntax.Var]bool{}}
	for _, f := range funcs {
		if f.Decl != nil && f.Decl.Body != nil {
			c.writes[f] = arraysWritten(f.Decl.Body)
		}
	}
	for _, f := range funcs {
		if f.Decl != nil && f.Decl.Body != nil {
			syntax.Walk(f.Decl.Body, c.visit)
		}
	}
	for _, p := range e.prog.Probes {
		syntax.Walk(p.Body, c.visit)
	}
}

type foreachCheck struct {
	e *elab
	// writes holds, for each function, the arrays whose elements its body writes.
	writes map[*syntax.Func]map[*syntax.Var]bool
	// iterated are the arrays of the loops being walked, outermost first.
	iterated []*syntax.Var
}

func (c *foreachCheck) visit(n syntax.Node) bool {
	written := elementWritten(n)
	for _, v := range c.iterated {
		if v == written {
			c.e.rep.errorAt("foreachwrite", elementTarget(n), fmt.Sprintf("variable '%s' modified during 'foreach' iteration", v.Name))
		}
	}
	switch n := n.(type) {
	case *syntax.Call:
		for _, v := range c.iterated {
			if c.writes[n.Func][v] {
				c.e.rep.errorAt("foreachcall", n, fmt.Sprintf("function call modifies var '%s' during 'foreach' iteration", v.Name))
			}
		}
	case *syntax.ForeachStmt:
		c.loop(n)
		return false
	}
	return true
}

// loop walks a foreach with its array among the iterated ones.
func (c *foreachCheck) loop(n *syntax.ForeachStmt) {
	v := iteratedArray(n.Array)
	if v != nil {
		c.iterated = append(c.iterated, v)
	}
	syntax.Walk(n.Array, c.visit)
	for _, k := range n.Keys {
		syntax.Walk(k, c.visit)
	}
	syntax.Walk(n.Value, c.visit)
	syntax.Walk(n.Limit, c.visit)
	syntax.Walk(n.Body, c.visit)
	if v != nil {
		c.iterated = c.iterated[:len(c.iterated)-1]
	}
}

// iteratedArray is the global a foreach iterates: the array itself, or the
// statistic a histogram is drawn from.
func iteratedArray(x syntax.Expr) *syntax.Var {
	if h, ok := x.(*syntax.Hist); ok {
		x = h.X
	}
	if ix, ok := x.(*syntax.Index); ok {
		x = ix.Array
	}
	if id, ok := x.(*syntax.Ident); ok {
		return id.Var
	}
	return nil
}

// arraysWritten returns the arrays whose elements n writes.
func arraysWritten(n syntax.Node) map[*syntax.Var]bool {
	written := map[*syntax.Var]bool{}
	syntax.Walk(n, func(x syntax.Node) bool {
		if v := elementWritten(x); v != nil {
			written[v] = true
		}
		return true
	})
	return written
}

// elementWritten returns the array whose element n writes (as an
// assignment, ++, -- or delete), or nil.
func elementWritten(n syntax.Node) *syntax.Var {
	if ix, ok := elementTarget(n).(*syntax.Index); ok {
		if id, ok := ix.Array.(*syntax.Ident); ok {
			return id.Var
		}
	}
	return nil
}

// elementTarget returns what n writes, if n writes: the left side of an
// assignment, the operand of ++ and --, the target of delete.
func elementTarget(n syntax.Node) syntax.Node {
	if d, ok := n.(*syntax.DeleteStmt); ok {
		return d.Target
	}
	return assignTarget(n)
}
