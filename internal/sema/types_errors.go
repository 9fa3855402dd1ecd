package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
)

// Type errors: how the typer reports what it cannot settle, as stap does.
// Without -v the reporting pass reports only the most complex kind of
// mismatch it meets (the levels below), so one mistake yields one message.

// Levels of mismatch_complexity: the kinds of mismatch, simplest first.
const (
	kindUnresolved = iota
	kindSides
	kindExpected
	kindDecl
)

// thrown is an error stap throws from the middle of a type pass.
type thrown struct{ d *Diagnostic }

func (t *typer) throw(origin string, n syntax.Node, msg string) {
	panic(thrown{&Diagnostic{Msg: msg, Tok: describe(n), Pos: n.Position(), origin: origin}})
}

// varToken is the token stap blames for a variable: its declaration or first use.
func varToken(v *syntax.Var) syntax.Node {
	if v.Decl != nil {
		return v.Decl
	}
	return &syntax.Ident{Typed: syntax.Typed{Pos: v.Pos}, Name: v.Name}
}

func (t *typer) checkLocals(locals []*syntax.Var) {
	for _, v := range locals {
		switch v.Type {
		case tUnknown:
			t.unresolvedAt(varToken(v))
		case tStats:
			t.report("statlocal", varToken(v), "stat locals not supported, missing global declaration? ")
		}
	}
}

// report counts an unresolved type and, in the reporting pass, prints msg.
func (t *typer) report(origin string, at syntax.Node, msg string) {
	t.unresolved++
	if t.assert {
		t.e.rep.errorAt(origin, at, msg)
	}
}

func (t *typer) unresolvedAt(at syntax.Node) {
	t.unresolved++
	if t.assert && t.complexity <= kindUnresolved {
		t.e.rep.errorAt("unresolved", at, "unresolved type ")
	}
}

func (t *typer) invalid(at syntax.Node, ty syntax.Type) {
	msg := "invalid type " + ty.String()
	if isOperator(at) {
		msg = "invalid operator"
	}
	t.report("invalid", at, msg)
}

func isOperator(n syntax.Node) bool {
	d := describe(n)
	return len(d) > 8 && d[:8] == "operator"
}

// mismatchable reports whether a mismatch of this kind is printed now, or
// records that one was met.
func (t *typer) mismatchable(kind int) bool {
	t.unresolved++
	if t.assert {
		return t.complexity <= kind
	}
	t.complexity = max(t.complexity, kind)
	return false
}

func (t *typer) mismatchSides(x syntax.Expr, l, r syntax.Type) {
	if t.mismatchable(kindSides) {
		t.e.rep.errorAt("sides", x, fmt.Sprintf("type mismatch: left and right sides don't agree (%s vs %s)", l, r))
	}
}

func (t *typer) mismatch(at syntax.Node, want, got syntax.Type) {
	if !t.mismatchable(kindExpected) {
		return
	}
	msg := "type mismatch: expected " + want.String()
	if got != tUnknown {
		msg += " but found " + got.String()
	}
	t.e.rep.errorAt("expected", at, msg)
}

// mismatchDecl reports a type meeting a symbol typed otherwise, pointing at
// where the symbol's type was first inferred.
func (t *typer) mismatchDecl(at syntax.Node, ty syntax.Type, decl any, index int, declType syntax.Type) {
	if !t.mismatchable(kindDecl) {
		return
	}
	if t.fn != nil && index < 0 {
		for i, p := range t.fn.Params {
			if p == decl {
				index = i
			}
		}
	}
	first := t.firstAt[declKey{decl, index}]
	if first == nil {
		t.e.rep.errorAt("declbasic", at, fmt.Sprintf("type mismatch: expected %s but found %s", ty, declType))
		return
	}
	msg, chain := fmt.Sprintf("type mismatch (%s)", ty), "type"
	if index >= 0 {
		msg = fmt.Sprintf("index %d %s", index, msg)
		chain += fmt.Sprintf(" of index %d", index)
	}
	n := note(first, chain+fmt.Sprintf(" was first inferred here (%s)", declType))
	n.origin = "declfirst"
	t.e.rep.errorAt("decl", at, msg, n)
}

// resolved counts progress and remembers where a symbol's type was settled.
func (t *typer) resolved(at syntax.Node, decl any, index int) {
	t.newly++
	if decl != nil {
		t.firstAt[declKey{decl, index}] = at
		t.sched.changed(decl)
	}
}
