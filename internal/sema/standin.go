package sema

import (
	"fmt"
	"slices"

	"github.com/bpftap/bpftap/internal/syntax"
)

// The dispatch on the call's number, stood in for.
//
// The first dispatch of a merged syscall.* entry (syscalls.go) is most of
// its probe's syntax: a case for each of 360 calls, each assigning
// literals to a few locals (the call's name, the generic argstr's kinds,
// its layout's number), about 7,300 nodes against the rest's 4,300 once
// elided (syscall.* printing argstr). Resolution, the elision's rounds and
// the type passes walk each of them several times, a fifth of pass 2's
// instructions, though all they learn is which locals the cases assign,
// with which types, and which of those locals a script reads. So the
// merged probe holds a stand-in until then: the first case alone, `if
// (__syscall_nr == K) { ... } else next`, its block assigning each local
// the cases assign once for each kind of literal (a string and a number
// given to one local is the type pass's mismatch, as in the whole
// dispatch). Once the types are inferred, callDispatches builds the
// dispatch of every case in its place, each case keeping the assignments
// of the locals whose stand-in assignments the elision kept, typed and
// resolved as those are.

// standIn is the stand-in of the dispatch of cases (sorted by key) on
// SyscallNrVar.
func standIn(cases []dispatchCase, at syntax.Pos) *syntax.IfStmt {
	seen := map[string]bool{}
	block := &syntax.Block{Pos: at}
	for _, c := range cases {
		for _, s := range c.body.Stmts {
			if key := literalKey(s); !seen[key] {
				seen[key] = true
				block.Stmts = append(block.Stmts, syntax.Clone(s))
			}
		}
	}
	leaf := dispatch(cases[:1], SyscallNrVar, at).(*syntax.IfStmt)
	leaf.Then = block
	return leaf
}

// literalKey names the local a case's statement assigns and the kind of
// literal it gives it: "name string".
func literalKey(s syntax.Stmt) string {
	id, value, _ := localAssignment(s)
	return fmt.Sprintf("%s %T", id.Name, value)
}

// callDispatches replaces the stand-in of each merged entry still in the
// program by the dispatch of its cases.
func (e *elab) callDispatches() {
	for _, m := range e.merges {
		if !slices.Contains(e.prog.Probes, m.probe) {
			continue // a probe the elision emptied and dropped
		}
		i := slices.Index(m.probe.Body.Stmts, syntax.Stmt(m.standIn))
		if i < 0 { // no pass moves it: one that did would leave the calls but the first unserved
			e.rep.errorAt("internal", m.standIn, "bpftap's merge of the system calls' entries lost its dispatch on the call's number")
			continue
		}
		m.probe.Body.Stmts[i] = numberDispatch(m.cases, m.standIn)
	}
}

// numberDispatch is the dispatch of cases that stand stood in for: each
// case's assignments of the locals stand still assigns, resolved and typed
// as stand's, and its comparisons of the call's number typed as stand's.
func numberDispatch(cases []dispatchCase, stand *syntax.IfStmt) syntax.Stmt {
	kept := map[string]*syntax.Assign{}
	for _, s := range blockStmts(stand.Then) {
		if id, _, ok := localAssignment(s); ok && id.Var != nil {
			kept[literalKey(s)] = s.(*syntax.ExprStmt).X.(*syntax.Assign)
		}
	}
	for _, c := range cases {
		c.body.Stmts = slices.DeleteFunc(c.body.Stmts, func(s syntax.Stmt) bool {
			like := kept[literalKey(s)]
			if like != nil {
				typedLike(s.(*syntax.ExprStmt).X.(*syntax.Assign), like)
			}
			return like == nil
		})
	}
	d := dispatch(cases, SyscallNrVar, stand.Pos)
	number := stand.Cond.(*syntax.Binary)
	syntax.Walk(d, func(n syntax.Node) bool {
		if b, ok := n.(*syntax.Binary); ok {
			b.SetType(number.Type())
			b.X.(*syntax.Ident).Var = number.X.(*syntax.Ident).Var
			b.X.SetType(number.X.Type())
			b.Y.SetType(number.Y.Type())
		}
		return true
	})
	return d
}

// typedLike gives the assignment a of a literal to a local the resolution
// and the types of like, which assigns a literal of that kind to it.
func typedLike(a, like *syntax.Assign) {
	id, likeID := a.LHS.(*syntax.Ident), like.LHS.(*syntax.Ident)
	id.Var = likeID.Var
	id.SetType(likeID.Type())
	a.RHS.SetType(like.RHS.Type())
	a.SetType(like.Type())
}

// blockStmts is the statements of s, a block or one statement.
func blockStmts(s syntax.Stmt) []syntax.Stmt {
	if b, ok := s.(*syntax.Block); ok {
		return b.Stmts
	}
	return []syntax.Stmt{s}
}
