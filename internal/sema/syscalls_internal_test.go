package sema

import (
	"math"
	"slices"
	"testing"

	"github.com/bpftap/bpftap/internal/syntax"
)

// A merged syscall probe runs the leading `if (...) next` of the user's
// body before the layouts' prologues, unless the test reads what a
// prologue sets.
func TestSplitGuards(t *testing.T) {
	f, err := syntax.Parse(syntax.NewSource("<input>", `
probe begin { argstr = "x"; fd = 1 }
probe begin {
	if (pid() != target()) next
	if (name == "read") { next }
	if (fd < 0) next
	print(argstr)
}`), syntax.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prologue := f.Decls[0].(*syntax.ProbeDecl).Body
	body := f.Decls[1].(*syntax.ProbeDecl).Body
	guards, rest := splitGuards(body, []dispatchCase{{key: 0, body: prologue}})
	if len(guards) != 2 {
		t.Fatalf("%d guards hoisted, want 2 (the test of fd reads a prologue's local)", len(guards))
	}
	if n := len(rest.(*syntax.Block).Stmts); n != 2 {
		t.Errorf("%d statements left in the body, want 2", n)
	}
}

// tightenCases are the keys of a dispatch and, in key order, whether each
// leaf keeps its comparison once tightened: a leaf keeps it unless the
// comparisons above it leave its key the only value.
var tightenCases = []struct {
	keys     []int
	compared []bool
}{
	{[]int{7}, []bool{true}},
	{[]int{0, 1, 2, 5}, []bool{true, false, true, true}},
	{[]int{0, 1, 2, 3, 4, 5, 6, 7}, []bool{true, false, false, false, false, false, false, true}},
	{[]int{-3, 10, 11, 12, 20}, []bool{true, false, false, true, true}},
}

func TestTightenDispatches(t *testing.T) {
	for _, c := range tightenCases {
		var cases []dispatchCase
		for _, k := range c.keys {
			cases = append(cases, dispatchCase{key: k, body: &syntax.Block{Stmts: []syntax.Stmt{setLocal("name", numberAt(k, syntax.Pos{}), syntax.Pos{})}}})
		}
		tree := tighten(dispatch(cases, SyscallLayoutVar, syntax.Pos{}), math.MinInt64, math.MaxInt64)
		var compared []bool
		var walk func(s syntax.Stmt)
		walk = func(s syntax.Stmt) {
			i, ok := s.(*syntax.IfStmt)
			if !ok {
				compared = append(compared, false)
				return
			}
			if i.Cond.(*syntax.Binary).Op == "==" {
				compared = append(compared, true)
				return
			}
			walk(i.Then)
			walk(i.Else)
		}
		walk(tree)
		if !slices.Equal(compared, c.compared) {
			t.Errorf("keys %v: leaves compared %v, want %v", c.keys, compared, c.compared)
		}
	}
}
