package sema

import (
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
)

// Context variables an alias defines. stap builds some aliases on a kernel
// function whose arguments scripts read ($bio in ioblock.end, on
// bio_endio(bio)); bpftap's alias may sit on several tracepoints, not all
// of which have that argument. The alias's body then defines it with
// __context_var("NAME", VALUE): in a probe whose point lacks $NAME, every
// $NAME of the body — the alias's and the script's — is VALUE (a copy of
// it, evaluated where $NAME is), and $NAME->a->b reads through VALUE's
// kernel type as an autocast does; @defined($NAME) is 1 there. Where the
// point has $NAME, the point's own variable is meant and the definition is
// dropped unread (VALUE may name variables that point lacks). VALUE
// itself is resolved against the point. $$vars and $$parms list the
// point's own variables only. The definitions are collected before the
// body's @defined are decided (defined.go), and the variables replaced
// after, before the body's symbols are resolved.

// contextVarCall is the tapset builtin that defines a context variable.
const contextVarCall = "__context_var"

// contextVarDefs returns the calls of __context_var in a probe's body, by
// the name they define (the first of each name).
func contextVarDefs(body *syntax.Block) map[string]*syntax.Call {
	var defs map[string]*syntax.Call
	syntax.Walk(body, func(n syntax.Node) bool {
		c, ok := n.(*syntax.Call)
		if !ok || c.Name != contextVarCall || len(c.Args) != 2 {
			return true
		}
		if name, ok := c.Args[0].(*syntax.StringLit); ok && defs[name.Value] == nil {
			if defs == nil {
				defs = map[string]*syntax.Call{}
			}
			defs[name.Value] = c
		}
		return false
	})
	return defs
}

// contextVarDef returns the definition x means, nil when x is the point's
// own variable or nothing defines it.
func (s *scope) contextVarDef(x *syntax.TargetVar) *syntax.Call {
	def := s.contextVars[strings.TrimPrefix(x.Name, "$")]
	if def == nil || strings.HasPrefix(x.Name, "$$") {
		return nil
	}
	if _, err := s.ctx.Var(&syntax.TargetVar{Name: x.Name}); err == nil {
		return nil
	}
	return def
}

// substituteContextVars replaces, in a probe's body, each $NAME the point
// lacks and an alias defines by the definition's value, and drops the
// definitions of the variables the point has.
func (s *scope) substituteContextVars(body *syntax.Block) {
	if len(s.contextVars) == 0 {
		return
	}
	for name, def := range s.contextVars {
		if s.contextVarDef(&syntax.TargetVar{Name: "$" + name}) == nil {
			def.Args[1] = &syntax.NumberLit{Typed: syntax.Typed{Pos: def.Args[1].Position()}}
			delete(s.contextVars, name) // the point's own: left as it is below
		}
	}
	rewriteExprs(body, func(x syntax.Expr) (syntax.Expr, bool) {
		switch x := x.(type) {
		case *syntax.Call:
			if x.Name == contextVarCall {
				return x, true // its value is the point's
			}
		case *syntax.TargetVar:
			def := s.contextVars[strings.TrimPrefix(x.Name, "$")]
			if def != nil && !strings.HasPrefix(x.Name, "$$") && x.Pretty == 0 && (len(x.Components) > 0 || !x.AddrOf) {
				return contextVarValue(x, def.Args[1]), true
			}
		}
		return x, false
	})
}

// contextVarValue is what $NAME (x, with its chain) stands for where it
// is value: a copy of value, or an autocast of it.
func contextVarValue(x *syntax.TargetVar, value syntax.Expr) syntax.Expr {
	value = syntax.Clone(value)
	if len(x.Components) == 0 {
		return value
	}
	return &syntax.Autocast{Typed: syntax.Typed{Pos: x.Pos}, Operand: value, Components: x.Components, AddrOf: x.AddrOf}
}
