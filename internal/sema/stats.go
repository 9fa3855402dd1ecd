package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
)

// Statistics declarations, stap's last pass-2 check: every histogram of a
// statistic (a global, whole or element by element) must have the same shape,
// @hist_log or @hist_linear with the same range and step, because the
// runtime keeps one set of buckets per statistic. Functions are visited by
// name, then the probes.

// histShape is the bucket layout of a histogram.
type histShape struct {
	linear              bool
	start, stop, interv string
}

func (e *elab) checkStats() {
	shapes := map[*syntax.Var]*histShape{}
	visit := func(n syntax.Node) {
		syntax.Walk(n, func(n syntax.Node) bool {
			if h, ok := n.(*syntax.Hist); ok {
				e.histShape(shapes, h)
			}
			return true
		})
	}
	for _, f := range e.funcsByName() {
		if f.Decl != nil && f.Decl.Body != nil {
			visit(f.Decl.Body)
		}
	}
	for _, p := range e.prog.Probes {
		visit(p.Body)
	}
}

func (e *elab) histShape(shapes map[*syntax.Var]*histShape, h *syntax.Hist) {
	v := statVar(h.X)
	if v == nil {
		return
	}
	shape := &histShape{linear: h.Linear}
	if h.Linear {
		shape.start, shape.stop, shape.interv = syntax.ExprString(h.Start), syntax.ExprString(h.Stop), syntax.ExprString(h.Interval)
	}
	old := shapes[v]
	switch {
	case old == nil:
		shapes[v] = shape
	case *old != *shape:
		e.rep.errorAt("histtypes", h, fmt.Sprintf("multiple histogram types declared on '%s'", mangledName(v)))
	}
}

// statVar is the global a statistic operand names (s or s[k]).
func statVar(x syntax.Expr) *syntax.Var {
	if v := lvalueVar(x); v != nil && v.Kind == syntax.VarGlobal {
		return v
	}
	return nil
}

// mangledName is the name stap's translator gives a variable, which some
// of its late messages show.
func mangledName(v *syntax.Var) string {
	if v.Kind == syntax.VarGlobal {
		return "__global_" + v.Name
	}
	return v.Name
}
