package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// foreachRefusal is the message for a foreach a kernel probe cannot run,
// or "". The BPF back end walks a global's hash map in the order the
// foreach asks (bpfgen/foreach.go); it cannot walk a histogram's buckets,
// order by a string value (the bytes after its NUL are not cleared), sort
// a wrapping array (whose ties keep the order its keys were added in), or
// sort on @variance.
func foreachRefusal(n *syntax.ForeachStmt) string {
	id, ok := n.Array.(*syntax.Ident)
	if !ok || id.Var == nil {
		return tapset.UserSpaceOnly("foreach over a histogram")
	}
	v := id.Var
	switch {
	case n.SortDir == 0:
		return ""
	case v.Wrap:
		return tapset.UserSpaceOnly("sorted foreach over a wrapping array (%)")
	case n.SortCol == 0 && v.Type == syntax.TypeString:
		return tapset.UserSpaceOnly("sorted foreach on a string value")
	case n.SortCol == 0 && n.SortAgg == "variance":
		return tapset.UserSpaceOnly("sorted foreach on @variance")
	}
	return ""
}

// starKeys returns the keys of n that kernel probes may write as '*': those
// of a delete's element and of a foreach's slice.
func starKeys(n syntax.Node) []syntax.Expr {
	switch n := n.(type) {
	case *syntax.DeleteStmt:
		if ix, ok := n.Target.(*syntax.Index); ok {
			return ix.Keys
		}
	case *syntax.ForeachStmt:
		return n.Slice
	}
	return nil
}

// refuseTokenForeach refuses, in kernel code, a foreach over an array that
// kernel code keys by a token (usymname(), a stack ...): user space
// gathers the elements whose tokens have the same text into one, so the
// kernel would visit each address's or stack id's element apart.
func (e *elab) refuseTokenForeach(f *tokenFlow) {
	keyedBy := map[*syntax.Var]string{}
	mark := func(array syntax.Expr, keys []syntax.Expr) {
		id, ok := array.(*syntax.Ident)
		if !ok || id.Var == nil {
			return
		}
		for _, k := range keys {
			if b := f.holds(k); b != "" && keyedBy[id.Var] == "" {
				keyedBy[id.Var] = b
			}
		}
	}
	e.kernelCode(func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Index:
			mark(n.Array, n.Keys)
		case *syntax.In:
			mark(n.Array, n.Keys)
		}
		return true
	})
	e.kernelCode(func(n syntax.Node) bool {
		if fe, ok := n.(*syntax.ForeachStmt); ok {
			if id, ok := fe.Array.(*syntax.Ident); ok && keyedBy[id.Var] != "" {
				e.rep.errorAt("kernelctx", fe, fmt.Sprintf("a foreach over '%s', keyed by %s(), cannot run in a kernel probe: "+
					"user space gathers the elements whose keys have the same text, which the kernel holds apart; "+
					"iterate it in a user-side probe", id.Var.Name, keyedBy[id.Var]))
			}
		}
		return true
	})
}
