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

// The dispatch on the call's number built in place of its stand-in keeps
// in each case the assignments of the locals the stand-in still assigns
// (here the elision dropped __syscall_kinds), resolved and typed as the
// stand-in's, and compares the number as the stand-in does.
func TestNumberDispatch(t *testing.T) {
	at := syntax.Pos{}
	var cases []dispatchCase
	for nr, name := range []string{"read", "write", "open"} {
		cases = append(cases, dispatchCase{key: nr, body: &syntax.Block{Stmts: []syntax.Stmt{
			setLocal("name", &syntax.StringLit{Value: name}, at),
			setLocal("__syscall_kinds", numberAt(16*nr, at), at),
			setLocal(SyscallLayoutVar, numberAt(nr, at), at)}}})
	}
	stand := standIn(cases, at)
	vars := map[string]*syntax.Var{}
	syntax.Walk(stand, func(n syntax.Node) bool { // as resolution and the type pass leave them
		switch n := n.(type) {
		case *syntax.Ident:
			if vars[n.Name] == nil {
				vars[n.Name] = &syntax.Var{Name: n.Name}
			}
			n.Var = vars[n.Name]
			n.SetType(tLong)
			if n.Name == "name" {
				n.SetType(tString)
			}
		case *syntax.StringLit:
			n.SetType(tString)
		case *syntax.NumberLit, *syntax.Binary:
			n.(syntax.Expr).SetType(tLong)
		case *syntax.Assign:
			n.SetType(n.RHS.Type())
		}
		return true
	})
	block := stand.Then.(*syntax.Block)
	if len(block.Stmts) != 3 {
		t.Fatalf("stand-in assigns %d locals, want 3", len(block.Stmts))
	}
	block.Stmts = slices.Delete(block.Stmts, 1, 2) // the elision's
	leaves, ok := dispatchLeaves(numberDispatch(cases, stand))
	if !ok || len(leaves) != 3 {
		t.Fatalf("%d leaves, want 3", len(leaves))
	}
	for i, leaf := range leaves {
		nr := leaf.Cond.(*syntax.Binary).X.(*syntax.Ident)
		if nr.Var != vars[SyscallNrVar] || leaf.Cond.Type() != tLong {
			t.Errorf("leaf %d compares %s unresolved or untyped", i, nr.Name)
		}
		var got []string
		for _, s := range leaf.Then.(*syntax.Block).Stmts {
			id, value, _ := localAssignment(s)
			if id.Var != vars[id.Name] || value.Type() == tUnknown || id.Type() != value.Type() {
				t.Errorf("leaf %d: %s unresolved or untyped", i, id.Name)
			}
			got = append(got, id.Name)
		}
		if want := []string{"name", SyscallLayoutVar}; !slices.Equal(got, want) {
			t.Errorf("leaf %d assigns %v, want %v", i, got, want)
		}
	}
}
