package sema

import (
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
