package sema

import (
	"github.com/bpftap/bpftap/internal/syntax"
)

// Probe conditions (`probe POINT if (COND)`), as stap's semantic_pass_conditions
// treats them. A condition may read globals only: no locals, no function
// calls (both refused while resolving), no assignments. stap then inlines it
// as the probe's first statement, `if (!(COND)) next`, so the guard is
// evaluated each time the probe fires and the probe is never elided; when a
// condition reads a global, stap also adds an empty `begin` probe, which its
// runtime uses to set the initial state of probes it can enable and disable.

// inlineConditions moves every probe's condition into its body.
func (e *elab) inlineConditions() {
	reads := false
	for _, p := range e.prog.Probes {
		c := p.Cond
		if c == nil {
			continue
		}
		if writes(c) {
			e.rep.errorAt("condwrite", c, "probe condition must not modify any variables")
		}
		guard := &syntax.IfStmt{Pos: c.Position(), Cond: &syntax.Unary{Typed: syntax.Typed{Pos: c.Position()}, Op: "!", X: c},
			Then: &syntax.NextStmt{Pos: c.Position()}}
		p.Body = &syntax.Block{Pos: p.Body.Pos, Stmts: []syntax.Stmt{guard, p.Body}}
		p.Cond = nil
		reads = reads || readsVariable(c)
	}
	if reads {
		e.prog.Probes = append(e.prog.Probes, conditionBegin(e.prog.Probes[0].Point.Pos))
	}
}

func writes(x syntax.Expr) bool {
	return syntax.Any(x, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.Assign, *syntax.IncDec:
			return true
		}
		return false
	})
}

func readsVariable(x syntax.Expr) bool {
	return syntax.Any(x, func(n syntax.Node) bool {
		id, ok := n.(*syntax.Ident)
		return ok && id.Var != nil
	})
}

// conditionBegin is stap's synthetic `probe begin {}`.
func conditionBegin(pos syntax.Pos) *Probe {
	point := &syntax.ProbePoint{Pos: pos, Components: []*syntax.Component{{Pos: pos, Name: "begin"}}}
	return &Probe{Point: point, User: point, Name: "begin", Family: "begin", Args: map[string]syntax.Expr{},
		Body: &syntax.Block{Pos: pos}}
}

// conditionString renders a resolved condition as stap's -p2 listing shows
// it, with the globals under their translated names.
func conditionString(x syntax.Expr) string {
	x = syntax.Clone(x)
	syntax.Walk(x, func(n syntax.Node) bool {
		if id, ok := n.(*syntax.Ident); ok {
			id.Name = "__global_" + id.Name
		}
		return true
	})
	return syntax.ExprString(x)
}
