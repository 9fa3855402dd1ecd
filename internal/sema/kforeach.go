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
// a wrapping array where ties are possible (they keep the order its keys
// were added in), or sort on @variance.
func foreachRefusal(n *syntax.ForeachStmt) string {
	id, ok := n.Array.(*syntax.Ident)
	if !ok || id.Var == nil {
		return tapset.UserSpaceOnly("foreach over a histogram")
	}
	v := id.Var
	switch {
	case n.SortDir == 0:
		return ""
	case v.Wrap && !sortsOnOneKey(n):
		return tapset.UserSpaceOnly("sorted foreach over a wrapping array (%) with ties (sort on one key and fix the others with a slice)")
	case n.SortCol == 0 && v.Type == syntax.TypeString:
		return tapset.UserSpaceOnly("sorted foreach on a string value")
	case n.SortCol == 0 && n.SortAgg == "variance":
		return tapset.UserSpaceOnly("sorted foreach on @variance")
	}
	return ""
}

// sortsOnOneKey tells whether n's order leaves no ties: it sorts on a key
// column, and its slice fixes every other column. The kernel breaks ties
// by the keys, the interpreter, over a wrapping array, by the order the
// elements were added (speculative.stp's commit sorts [id, n] on n).
func sortsOnOneKey(n *syntax.ForeachStmt) bool {
	if n.SortCol == 0 || len(n.Slice) == 0 {
		return false
	}
	for i, k := range n.Slice {
		if _, star := k.(*syntax.Star); star && i+1 != n.SortCol {
			return false
		}
	}
	return true
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

// tokenLoops gathers, in checkTokens' walk of kernel code, the arrays
// kernel code keys by a token (usymname(), a stack ...) and the foreach
// statements, to refuse those over such an array once the walk has seen
// every key: user space gathers the elements whose tokens have the same
// text into one, so the kernel would visit each address's or stack id's
// element apart.
type tokenLoops struct {
	keyedBy map[*syntax.Var]string // the array, by the builtin of its first token key
	loops   []*syntax.ForeachStmt
}

// visit notes n's token keys and n when it is a foreach.
func (t *tokenLoops) visit(f *tokenFlow, n syntax.Node) {
	switch n := n.(type) {
	case *syntax.Index:
		t.mark(f, n.Array, n.Keys)
	case *syntax.In:
		t.mark(f, n.Array, n.Keys)
	case *syntax.ForeachStmt:
		t.loops = append(t.loops, n)
	}
}

func (t *tokenLoops) mark(f *tokenFlow, array syntax.Expr, keys []syntax.Expr) {
	id, ok := array.(*syntax.Ident)
	if !ok || id.Var == nil || t.keyedBy[id.Var] != "" {
		return
	}
	for _, k := range keys {
		if b := f.holds(k); b != "" {
			t.keyedBy[id.Var] = b
			return
		}
	}
}

// refuse refuses the foreach statements over an array keyed by a token.
func (t *tokenLoops) refuse(e *elab) {
	for _, fe := range t.loops {
		if id, ok := fe.Array.(*syntax.Ident); ok && t.keyedBy[id.Var] != "" {
			e.rep.errorAt("kernelctx", fe, fmt.Sprintf("a foreach over '%s', keyed by %s(), cannot run in a kernel probe: "+
				"user space gathers the elements whose keys have the same text, which the kernel holds apart; "+
				"iterate it in a user-side probe", id.Var.Name, t.keyedBy[id.Var]))
		}
	}
}
