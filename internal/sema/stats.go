package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Statistics declarations, stap's last pass-2 check: every histogram of a
// statistic (a global, whole or element by element) must have the same shape,
// @hist_log or @hist_linear with the same range and step, because the
// runtime keeps one set of buckets per statistic. Functions are visited by
// name, then the probes. The same walk records each statistic's StatShape
// (bucket layout and @variance shift) for the runtimes.

// StatShape is what every aggregate of a statistics variable records: its
// histogram layout (nil without a histogram) and @variance's bit shift. Err
// is set when the program asks for a layout or shift the runtime refuses
// (stap reports those when the module starts).
type StatShape struct {
	Hist  *format.Hist
	Shift uint
	// Variance is set when the program reads @variance of the statistic (or
	// sorts on it): only then must updates keep the Welford terms.
	Variance bool
	Err      error
}

// NewStat returns an empty aggregate of this shape.
func (s *StatShape) NewStat() *format.Stat { return format.NewStat(s.Hist, s.Shift) }

// StatShape returns the shape of statistic v (the zero shape when v has no
// histogram and no @variance shift).
func (p *Program) StatShape(v *syntax.Var) *StatShape {
	if s := p.statShapes[v]; s != nil {
		return s
	}
	return &StatShape{}
}

// histShape is the bucket layout of a histogram.
type histShape struct {
	linear              bool
	start, stop, interv string
}

func (e *elab) checkStats() {
	if !e.anyGlobal(statistic) {
		return // histograms and aggregates are of statistics, globals
	}
	shapes := map[*syntax.Var]*histShape{}
	visit := func(n syntax.Node) {
		syntax.Walk(n, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Hist:
				e.histShape(shapes, n)
				e.noteHist(n)
			case *syntax.StatOp:
				e.noteVariance(n)
			case *syntax.ForeachStmt:
				if id, ok := n.Array.(*syntax.Ident); ok && n.SortAgg == format.OpVariance && id.Var != nil {
					e.shapeOf(id.Var).Variance = true
				}
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
	v := StatVar(h.X)
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

// shapeOf returns the recorded shape of statistic v, creating it.
func (e *elab) shapeOf(v *syntax.Var) *StatShape {
	if e.prog.statShapes == nil {
		e.prog.statShapes = map[*syntax.Var]*StatShape{}
	}
	s := e.prog.statShapes[v]
	if s == nil {
		s = &StatShape{}
		e.prog.statShapes[v] = s
	}
	return s
}

// noteHist records the bucket layout of a statistic's first histogram.
func (e *elab) noteHist(h *syntax.Hist) {
	v := StatVar(h.X)
	if v == nil {
		return
	}
	shape := e.shapeOf(v)
	if shape.Hist != nil || shape.Err != nil {
		return
	}
	if !h.Linear {
		shape.Hist = format.LogHist
		return
	}
	start, ok1 := LiteralLong(h.Start)
	stop, ok2 := LiteralLong(h.Stop)
	step, ok3 := LiteralLong(h.Interval)
	if !ok1 || !ok2 || !ok3 {
		shape.Err = fmt.Errorf("%s: @hist_linear arguments must be literal numbers", h.Pos)
		return
	}
	shape.Hist, shape.Err = format.LinearHist(start, stop, step)
}

// noteVariance records the bit shift of @variance(s, shift).
func (e *elab) noteVariance(s *syntax.StatOp) {
	if s.Op != format.OpVariance {
		return
	}
	v := StatVar(s.X)
	if v == nil {
		return
	}
	shape := e.shapeOf(v)
	shape.Variance = true
	if len(s.Args) == 0 {
		return
	}
	shift, ok := LiteralLong(s.Args[0])
	if !ok || shift < 0 || shift > 62 {
		shape.Err = fmt.Errorf("%s: invalid @variance bit shift", s.Pos)
		return
	}
	shape.Shift = uint(shift)
}

// LiteralLong is the value of a literal number, possibly signed (global
// initialisers, histogram ranges, @variance shifts).
func LiteralLong(e syntax.Expr) (int64, bool) {
	switch e := e.(type) {
	case *syntax.NumberLit:
		return e.Value, true
	case *syntax.Unary:
		v, ok := LiteralLong(e.X)
		if e.Op == "-" {
			v = -v
		}
		return v, ok && (e.Op == "-" || e.Op == "+")
	}
	return 0, false
}

// StatVar is the global a statistic operand names (s or s[k]), nil otherwise.
func StatVar(x syntax.Expr) *syntax.Var {
	if v := lvalueVar(x); v != nil && v.Kind == syntax.VarGlobal {
		return v
	}
	return nil
}

// mangledName is the name stap's translator gives a variable, which some
// of its messages show: __global_NAME for a global, __private_FILE_NAME for
// a private one, FILE being its file's name with every character but
// letters and digits made '_'.
func mangledName(v *syntax.Var) string {
	switch {
	case v.Kind != syntax.VarGlobal:
		return v.Name
	case v.Decl == nil || !v.Decl.Private:
		return "__global_" + v.Name
	}
	file := []byte(v.Decl.Pos.File())
	for i, c := range file {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			file[i] = '_'
		}
	}
	return "__private_" + string(file) + "_" + v.Name
}
