package sema

import (
	"slices"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Context expressions of kernel probes. While a kernel probe's body is
// resolved, each $var, $$parms/$$vars/$$name and @cast node is resolved
// through the probe point's probes.Context; the result, an *probes.Access,
// is recorded in Program.Targets under the node (every derived probe owns
// its copy of the body, so nodes are never shared) and the node is typed.
// A typed context node is what @defined tests, so @defined($p) is 1 where
// $p resolves. Elsewhere (user probes, functions) context expressions stay
// unresolved and the type checker reports them as before.

// context resolves a context expression of a kernel probe and reports
// whether the walk should go on into its operands.
func (s *scope) context(n syntax.Expr) bool {
	if s.ctx == nil {
		return true
	}
	a, err := s.resolveContext(n)
	if err != nil {
		s.e.rep.errorAt("context", contextBlame(n, err.Step), err.Msg)
		return false
	}
	s.record(n, a)
	_, isCast := n.(*syntax.Cast)
	return isCast
}

func (s *scope) resolveContext(n syntax.Expr) (*probes.Access, *probes.ContextError) {
	switch n := n.(type) {
	case *syntax.TargetVar:
		return s.ctx.Var(n)
	case *syntax.Cast:
		return s.ctx.Cast(n)
	}
	return nil, &probes.ContextError{Msg: "unsupported context expression", Step: -1}
}

func (s *scope) record(n syntax.Expr, a *probes.Access) {
	if s.e.prog.Targets == nil {
		s.e.prog.Targets = map[syntax.Expr]*probes.Access{}
	}
	s.e.prog.Targets[n] = a
	n.SetType(a.Type)
	for _, x := range append([]*probes.Access{a}, a.Args...) {
		if x.Param >= 0 && !slices.Contains(s.probe.Params, x.Param) {
			s.probe.Params = append(s.probe.Params, x.Param)
		}
	}
	slices.Sort(s.probe.Params)
}

// definedContext decides @defined of a context expression in a kernel
// probe: it resolves quietly.
func (s *scope) definedContext(n syntax.Expr) {
	if s.ctx == nil {
		return
	}
	if a, err := s.resolveContext(n); err == nil {
		s.record(n, a)
		if c, ok := n.(*syntax.Cast); ok {
			s.walk(c.Operand)
		}
	}
}

// contextBlame is the node an error about step (-1: the expression) of a
// context expression points at.
func contextBlame(n syntax.Expr, step int) syntax.Node {
	var comps []*syntax.TargetComponent
	switch n := n.(type) {
	case *syntax.TargetVar:
		comps = n.Components
	case *syntax.Cast:
		comps = n.Components
	}
	if step >= 0 && step < len(comps) {
		return comps[step]
	}
	return n
}
