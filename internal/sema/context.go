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
// A @cast needs no probe point: in functions and in user-side probes it
// resolves against the kernel of the script's kernel probes (elab.kernel),
// else the running kernel (castKernel), so the tapset's task_* functions
// read through @task(p) wherever they run (user-side probes read kernel
// memory through package kmem). A $var outside kernel probes stays
// unresolved and the type checker reports it.
//
// @defined($p) and @defined(@cast ...) are decided before the body is
// resolved (defined.go). As in stap, a context expression that does not
// resolve is an error only if it survives elision: its error is kept in
// elab.contextErrs and the type checker, which never sees a folded-away
// branch, reports it (stap elides `$nosuch;` with a warning).

// context resolves a context expression and reports whether the walk
// should go on into its operands: a @cast's, and the indexes of its chain
// computed at run time (Access.Indexes), which the walk resolves.
func (s *scope) context(n syntax.Expr) bool {
	if !s.resolvesContext(n) {
		return true
	}
	a, err := s.resolveContext(n)
	if err != nil {
		s.e.contextErrs[n] = err
		return true
	}
	s.record(n, a)
	_, isCast := n.(*syntax.Cast)
	return isCast || len(a.Indexes) > 0
}

// resolvesContext tells whether n can be resolved here: anything in a
// kernel probe, a @cast anywhere a kernel is known.
func (s *scope) resolvesContext(n syntax.Expr) bool {
	_, isCast := n.(*syntax.Cast)
	return s.ctx != nil || isCast && s.e.castKernel() != nil
}

// expandPretty replaces each pretty-printed context expression ($var$,
// $$parms$, ... in a kernel probe; @cast(p, "T")$ wherever a @cast
// resolves) of body by the sprintf of its members that computes it
// (probes.Context.Pretty, probes.PrettyCast); one that cannot be expanded
// is left for resolution to refuse.
func (s *scope) expandPretty(body *syntax.Block) {
	syntax.RewriteExprs(body, func(x syntax.Expr) syntax.Expr {
		var pretty syntax.Expr
		ok := false
		switch x := x.(type) {
		case *syntax.TargetVar:
			if x.Pretty > 0 && s.ctx != nil {
				pretty, ok = s.ctx.Pretty(x)
			}
		case *syntax.Cast:
			if x.Pretty > 0 && s.resolvesContext(x) {
				pretty, ok = probes.PrettyCast(s.e.castKernel(), x)
			}
		}
		if !ok {
			return nil
		}
		return pretty
	})
}

func (s *scope) resolveContext(n syntax.Expr) (*probes.Access, *probes.ContextError) {
	switch n := n.(type) {
	case *syntax.TargetVar:
		return s.ctx.Var(n)
	case *syntax.Cast:
		a, err := probes.ResolveCast(s.e.castKernel(), n)
		if err == nil && a.BTF != nil && a.BTF.User() && s.ctx == nil {
			return nil, &probes.ContextError{Step: -1, Msg: "type '" + n.TypeName + "' of '" + n.Module +
				"' is a program's: bpftap reads it in kernel and user probes, from the memory of the process they fire in"}
		}
		return a, err
	case *syntax.AtVar:
		return s.ctx.AtVar(n)
	}
	return nil, &probes.ContextError{Msg: "unsupported context expression", Step: -1}
}

func (s *scope) record(n syntax.Expr, a *probes.Access) {
	if s.e.prog.Targets == nil {
		s.e.prog.Targets = map[syntax.Expr]*probes.Access{}
	}
	s.e.prog.Targets[n] = a
	n.SetType(a.Type)
	s.readParams(a)
}

// readParams adds the probe arguments an access reads to Probe.Params (a
// @cast in a function reads none).
func (s *scope) readParams(a *probes.Access) {
	if s.probe == nil {
		return
	}
	for _, x := range append([]*probes.Access{a}, a.Args...) {
		if x.Param >= 0 && !slices.Contains(s.probe.Params, x.Param) {
			s.probe.Params = append(s.probe.Params, x.Param)
		}
	}
	slices.Sort(s.probe.Params)
}

// decideDefined returns the literal a @defined of a context expression
// (of @entry of one, where the entries are known: entryCtx) becomes where
// it can be resolved (defined.go): 1 if the expression
// resolves, whose arguments the probe then reads (stap lists them among
// its locals), else 0; nil for another operand, or where it cannot be
// resolved.
func (s *scope) decideDefined(x *syntax.Defined) syntax.Expr {
	en, atEntry := x.X.(*syntax.Entry)
	if atEntry = atEntry && s.entryCtx != nil; atEntry { // @defined(@entry(X)): X at the entries
		ret := s.ctx
		s.ctx = s.entryCtx
		defer func() { s.ctx = ret }()
		x = &syntax.Defined{Typed: x.Typed, X: en.X}
	}
	switch x.X.(type) {
	case *syntax.TargetVar, *syntax.Cast:
	default:
		return nil
	}
	if !s.resolvesContext(x.X) {
		return nil
	}
	a, err := s.resolveContext(x.X)
	if v, ok := x.X.(*syntax.TargetVar); err != nil && ok && s.contextVarDef(v) != nil {
		return number(x, 1) // an alias defines it (contextvars.go)
	}
	if err != nil {
		return number(x, 0)
	}
	if !atEntry { // X's arguments are the entry's, which its probe reads itself
		s.readParams(a)
	}
	return number(x, 1)
}

// contextBlame is the node an error about step (-1: the expression) of a
// context expression points at.
func contextBlame(n syntax.Expr, step int) syntax.Node {
	if comps := contextComponents(n); step >= 0 && step < len(comps) {
		return comps[step]
	}
	return n
}

// contextComponents is the chain of a context expression ($var, @cast,
// an autocast), nil for another expression.
func contextComponents(n syntax.Expr) []*syntax.TargetComponent {
	switch n := n.(type) {
	case *syntax.TargetVar:
		return n.Components
	case *syntax.Cast:
		return n.Components
	case *syntax.Autocast:
		return n.Components
	case *syntax.AtVar:
		return n.Components
	}
	return nil
}
