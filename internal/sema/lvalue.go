package sema

import (
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Assignment targets, checked where stap checks them: in the dead-assignment
// step of its first optimization round, so after the never-assigned warnings
// and not at all with -u. The left side of an assignment must be a variable,
// an array element or a context expression ($var, @cast, ...). stap throws
// at the first other one, so it is the only error: probes first, then
// functions by name, an assignment's operands before the assignment itself.
// The error names the assignment and the token of the target stap blames
// (the operator of `(a+b)`, the '@hist_log' of a histogram bucket).

// checkAssignTargets reports the first assignment to something that cannot
// be assigned; it tells whether there was none.
func (e *elab) checkAssignTargets() bool {
	for _, b := range e.bodiesByName() {
		if a, blame := badAssignment(b); a != nil {
			msg := "Expecting lvalue for assignment"
			if x, ok := blame.(*syntax.Binary); ok && x.Op == "." {
				msg += ", try -> instead" // `$p.f = 1` meant $p->f
			}
			e.rep.errorAt("lvalue", a, msg, note(blame, ""))
			return false
		}
	}
	return true
}

// badAssignment finds the first assignment under n whose target cannot be
// assigned, and the node stap blames in that target.
func badAssignment(n syntax.Node) (bad *syntax.Assign, blame syntax.Node) {
	syntax.Walk(n, func(x syntax.Node) bool {
		a, ok := x.(*syntax.Assign)
		if !ok || bad != nil {
			return bad == nil
		}
		if bad, blame = badAssignment(a.LHS); bad == nil {
			bad, blame = badAssignment(a.RHS)
		}
		if bad == nil {
			if blame = nonLvalue(a.LHS); blame != nil {
				bad = a
			}
		}
		return false
	})
	return bad, blame
}

// nonLvalue returns the node stap blames when x is assigned to, nil if x
// can be.
func nonLvalue(x syntax.Expr) syntax.Node {
	if ix, ok := x.(*syntax.Index); ok {
		if h, ok := ix.Array.(*syntax.Hist); ok {
			return h // a histogram's buckets are read-only
		}
	}
	if assignable(x) {
		return nil
	}
	return x
}

// assignable tells whether x names storage: a variable, an array element,
// a context expression.
func assignable(x syntax.Expr) bool {
	switch x.(type) {
	case *syntax.Ident, *syntax.Index, *syntax.TargetVar, *syntax.Cast, *syntax.AtVar, *syntax.Autocast:
		return true
	}
	return false
}

// checkContextWrites reports each assignment to a context variable that
// the probe point refuses in pass 2, at the variable (probes.Context.Assign:
// all but a netfilter hook's $verdict with -g). stap refuses them unless
// -g, when its kernel module writes the kernel's memory or registers;
// bpftap never does (a BPF program cannot), so it refuses them either
// way: with stap's words without -g, with the reason with it.
func (e *elab) checkContextWrites(ctx *probes.Context, body *syntax.Block) {
	syntax.Walk(body, func(n syntax.Node) bool {
		if v, ok := assignTarget(n).(*syntax.TargetVar); ok {
			if why := ctx.Assign(v.Name, e.opts.Guru); why != "" {
				e.rep.errorAt("lvalue", v, why)
			}
		}
		return true
	})
}

// checkCastWrites reports each assignment through a @cast or an autocast,
// which stap refuses in pass 2 without -g (at the @cast, at an autocast's
// first '->') and makes with it; bpftap never writes the kernel's memory,
// so it refuses them either way, with the reason under -g.
func (e *elab) checkCastWrites() {
	for _, b := range e.bodiesByName() {
		syntax.Walk(b, func(n syntax.Node) bool {
			switch x := assignTarget(n).(type) {
			case *syntax.Cast:
				e.rep.errorAt("lvalue", x, probes.RefuseWrite("write to @cast context variable not permitted", e.opts.Guru))
			case *syntax.Autocast:
				e.rep.errorAt("lvalue", x, probes.RefuseWrite("write not permitted", e.opts.Guru))
			}
			return true
		})
	}
}
