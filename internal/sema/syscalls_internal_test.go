package sema

import (
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
