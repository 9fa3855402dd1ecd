package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Kernel context. The code of kernel probes, and of every function they
// call, runs as BPF programs. checkKernel refuses there what bpftap's BPF
// back end cannot run (docs/bpf-backend.md lists it), naming the construct
// and its position; promotePerCPU marks the globals that kernel code only
// updates, which the back end may keep per CPU.

// kernelCode calls visit on every node of the kernel probes' bodies and of
// the functions they reach, each function once.
func (e *elab) kernelCode(visit func(syntax.Node) bool) {
	seen := map[*syntax.Func]bool{}
	var walk func(n syntax.Node)
	walk = func(n syntax.Node) {
		syntax.Walk(n, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.Call); ok && c.Func != nil && c.Func.Decl != nil && c.Func.Decl.Body != nil && !seen[c.Func] {
				seen[c.Func] = true
				walk(c.Func.Decl.Body)
			}
			return visit(n)
		})
	}
	for _, p := range e.prog.Probes {
		if p.Kernel {
			walk(p.Body)
		}
	}
}

// checkKernel refuses the constructs kernel probes cannot run.
func (e *elab) checkKernel() {
	e.kernelCode(func(n syntax.Node) bool {
		if what := userOnly(n); what != "" {
			e.rep.errorAt("kernelctx", n, what+" cannot run in a kernel probe (bpftap runs it in user space only)")
		}
		return true
	})
}

// userOnly names the construct n when it cannot run in a kernel probe.
func userOnly(n syntax.Node) string {
	switch n := n.(type) {
	case *syntax.Call:
		if b := tapset.Builtins[n.Name]; b != nil && n.Func != nil && n.Func.Decl == nil && b.UserOnly {
			return fmt.Sprintf("function '%s'", n.Name)
		}
	case *syntax.ForeachStmt:
		if n.SortDir != 0 {
			return "sorted foreach"
		}
	case *syntax.Hist:
		return "histogram (@hist_log, @hist_linear)"
	case *syntax.TryStmt:
		return "try/catch"
	case *syntax.Binary:
		if n.Op == "=~" || n.Op == "!~" {
			return fmt.Sprintf("regular expression matching ('%s')", n.Op)
		}
	case *syntax.DeleteStmt:
		if id, ok := n.Target.(*syntax.Ident); ok && id.Var != nil && id.Var.IsArray {
			return "delete of a whole array"
		}
	}
	return ""
}

// promotePerCPU sets Var.PerCPU on the globals that kernel code updates
// only by ++, --, +=, -= and <<< used as statements, and never reads,
// assigns or deletes; user-side code may do anything with them.
func (e *elab) promotePerCPU() {
	updated, other := map[*syntax.Var]bool{}, map[*syntax.Var]bool{}
	var visit func(n syntax.Node) bool
	visit = func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ExprStmt:
			target, rest := updateOf(n.X)
			if v := globalOf(target); v != nil {
				updated[v] = true
				for _, r := range rest {
					syntax.Walk(r, visit)
				}
				return false
			}
		case *syntax.Ident:
			if n.Var != nil && n.Var.Kind == syntax.VarGlobal {
				other[n.Var] = true
			}
		}
		return true
	}
	e.kernelCode(visit)
	for v := range updated {
		v.PerCPU = !other[v]
	}
}

// updateOf returns the operand an update statement changes and the
// expressions it evaluates besides (the keys, the added value); a nil
// target when x is no update.
func updateOf(x syntax.Expr) (syntax.Expr, []syntax.Expr) {
	switch x := x.(type) {
	case *syntax.IncDec:
		return x.X, keysOf(x.X)
	case *syntax.Assign:
		switch x.Op {
		case "+=", "-=", "<<<":
			return x.LHS, append(keysOf(x.LHS), x.RHS)
		}
	}
	return nil, nil
}

func keysOf(x syntax.Expr) []syntax.Expr {
	if ix, ok := x.(*syntax.Index); ok {
		return ix.Keys
	}
	return nil
}

// globalOf returns the global a (possibly indexed) operand names, or nil.
func globalOf(x syntax.Expr) *syntax.Var {
	if ix, ok := x.(*syntax.Index); ok {
		x = ix.Array
	}
	if id, ok := x.(*syntax.Ident); ok && id.Var != nil && id.Var.Kind == syntax.VarGlobal {
		return id.Var
	}
	return nil
}
