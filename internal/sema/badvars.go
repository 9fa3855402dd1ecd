package sema

import "github.com/bpftap/bpftap/internal/syntax"

// skipBadVars is --skip-badvars (Options.SkipBadVars): each context
// variable that did not resolve becomes the literal 0, with stap's
// warning, before elision and type inference would report it. One that
// @defined tests is decided already, and stays quiet, as in stap.
func (e *elab) skipBadVars() {
	for _, b := range e.bodiesByName() {
		syntax.RewriteExprs(b, func(x syntax.Expr) syntax.Expr {
			v, ok := x.(*syntax.TargetVar)
			if !ok || e.prog.Targets[v] != nil {
				return nil
			}
			delete(e.contextErrs, v)
			e.rep.warnAt(v, "Bad $context variable being substituted with literal 0")
			return &syntax.NumberLit{Typed: syntax.Typed{Pos: v.Pos, T: tLong}, Text: "0"}
		})
	}
}
