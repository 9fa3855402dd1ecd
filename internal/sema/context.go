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
// $p resolves. A @cast needs no probe point: in functions it resolves
// against the kernel of the script's kernel probes (elab.kernel), so the
// tapset's task_* functions read through @task(p). Elsewhere (user probes,
// functions of scripts without kernel probes) context expressions stay
// unresolved and the type checker reports them as before.
//
// As in stap, a context expression that does not resolve is an error only
// if it survives constant folding: the error is kept (elab.contextErrs)
// and the type checker, which never sees a folded-away branch, reports it
// in place of "unresolved". So @choose_defined(@task(t)->state,
// @task(t)->__state) picks the member this kernel has.

// context resolves a context expression and reports whether the walk
// should go on into its operands.
func (s *scope) context(n syntax.Expr) bool {
	if !s.resolvesContext(n) {
		return true
	}
	a, err := s.resolveContext(n)
	if err != nil {
		s.e.deferContextError(n, err)
	} else {
		s.record(n, a)
	}
	_, isCast := n.(*syntax.Cast)
	return isCast
}

// resolvesContext tells whether n can be resolved here: anything in a
// kernel probe, a @cast wherever the script has kernel probes.
func (s *scope) resolvesContext(n syntax.Expr) bool {
	_, isCast := n.(*syntax.Cast)
	return s.ctx != nil || isCast && s.e.kernel != nil && s.probe == nil
}

func (s *scope) resolveContext(n syntax.Expr) (*probes.Access, *probes.ContextError) {
	switch n := n.(type) {
	case *syntax.TargetVar:
		return s.ctx.Var(n)
	case *syntax.Cast:
		return probes.ResolveCast(s.e.kernel, n)
	}
	return nil, &probes.ContextError{Msg: "unsupported context expression", Step: -1}
}

// contextError is a context expression's resolution error, reported if
// the expression survives folding.
type contextError struct {
	blame syntax.Node
	msg   string
}

// reportContextErrors reports the context expressions that did not
// resolve and survived folding, in the order of the code.
func (e *elab) reportContextErrors() {
	if len(e.contextErrs) == 0 {
		return
	}
	for _, b := range e.bodiesByName() {
		syntax.Walk(b, func(n syntax.Node) bool {
			if x, ok := n.(syntax.Expr); ok {
				if err, ok := e.contextErrs[x]; ok {
					e.rep.errorAt("context", err.blame, err.msg)
				}
			}
			return true
		})
	}
}

func (e *elab) deferContextError(n syntax.Expr, err *probes.ContextError) {
	if e.contextErrs == nil {
		e.contextErrs = map[syntax.Expr]contextError{}
	}
	e.contextErrs[n] = contextError{contextBlame(n, err.Step), err.Msg}
}

func (s *scope) record(n syntax.Expr, a *probes.Access) {
	if s.e.prog.Targets == nil {
		s.e.prog.Targets = map[syntax.Expr]*probes.Access{}
	}
	s.e.prog.Targets[n] = a
	n.SetType(a.Type)
	if s.probe == nil { // a @cast in a function
		return
	}
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
	if !s.resolvesContext(n) {
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
	case *syntax.Autocast:
		comps = n.Components
	}
	if step >= 0 && step < len(comps) {
		return comps[step]
	}
	return n
}
