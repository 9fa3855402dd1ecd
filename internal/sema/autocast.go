package sema

import (
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Autocasts. `t->pid` on an ordinary expression t reads through t's kernel
// type when stap's autocast can tell it: t is a typed pointer (a context
// expression whose probes.Access has a Pointee: a pointer member, &member,
// a member-less @cast such as task_current()'s `& @task(...)`; a char
// array, a pointer to its first char), a local assigned one, a call of a
// script function returning one, an assignment of one, or a ternary with
// such a branch. As in stap, the types flow through locals and
// returns, never through parameters: the tapset's task_* functions cast
// their argument with @task. Types are found by iterating to a fixpoint
// over every body, since a function's return type may come from code
// resolved after its callers; each autocast then resolves as
// @cast(operand, T) would (probes.ResolvePointee) and is recorded in
// Program.Targets like one. An autocast whose operand has no known type
// stays unresolved: the type checker reports stap's "unknown type in
// dereference".

// pointerTypes holds what the fixpoint learned: the pointee type of
// locals (keyed by *syntax.Var) and of functions' returns (*syntax.Func).
type pointerTypes struct {
	e     *elab
	btf   *kernel.BTF // the kernel's: where an Access names none
	known map[any]pointee
}

// pointee is a pointer's target type and the BTF that describes it (a
// module's type IDs mean nothing in the kernel's BTF).
type pointee struct {
	btf *kernel.BTF
	id  kernel.TypeID
}

// resolveAutocasts resolves the autocasts of every body.
// A program without any does not load the kernel's BTF.
func (e *elab) resolveAutocasts() {
	k := e.castKernel()
	if k == nil || !e.hasAutocasts() {
		return
	}
	btf, err := k.BTF()
	if err != nil {
		return
	}
	pt := &pointerTypes{e: e, btf: btf, known: map[any]pointee{}}
	for pt.round() {
	}
}

// hasAutocasts reports whether some probe or function has an autocast.
func (e *elab) hasAutocasts() bool {
	found := false
	for _, b := range e.bodiesByName() {
		syntax.Walk(b, func(n syntax.Node) bool {
			_, cast := n.(*syntax.Autocast)
			found = found || cast
			return !found
		})
	}
	return found
}

// round walks every body once, learning types and resolving the autocasts
// whose operand's type is known; it tells whether it learned anything.
func (pt *pointerTypes) round() bool {
	changed := false
	learn := func(n syntax.Node, fn *syntax.Func) {
		syntax.Walk(n, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Assign:
				if id, ok := n.LHS.(*syntax.Ident); ok && n.Op == "=" && id.Var != nil && id.Var.Kind == syntax.VarLocal {
					changed = pt.learn(id.Var, n.RHS) || changed
				}
			case *syntax.ReturnStmt:
				if fn != nil && n.Value != nil {
					changed = pt.learn(fn, n.Value) || changed
				}
			case *syntax.Autocast:
				changed = pt.resolve(n) || changed
			}
			return true
		})
	}
	for _, p := range pt.e.prog.Probes {
		learn(p.Body, nil)
	}
	for _, f := range pt.e.funcsByName() {
		if f.Decl != nil && f.Decl.Body != nil {
			learn(f.Decl.Body, f)
		}
	}
	return changed
}

// learn records x's pointee type for a local or a function, the first one
// learned, and tells whether it did.
func (pt *pointerTypes) learn(k any, x syntax.Expr) bool {
	if _, known := pt.known[k]; known {
		return false
	}
	t := pt.pointee(x)
	if t.id != 0 {
		pt.known[k] = t
	}
	return t.id != 0
}

// pointee is the type x points to, its id 0 when unknown.
func (pt *pointerTypes) pointee(x syntax.Expr) pointee {
	switch x := x.(type) {
	case *syntax.Ident:
		if x.Var != nil && x.Var.Kind == syntax.VarLocal {
			return pt.known[x.Var]
		}
	case *syntax.Call:
		if x.Func != nil {
			return pt.known[x.Func]
		}
	case *syntax.Assign:
		if x.Op == "=" {
			return pt.pointee(x.RHS)
		}
	case *syntax.Ternary:
		if t := pt.pointee(x.Then); t.id != 0 {
			return t
		}
		return pt.pointee(x.Else)
	case *syntax.TargetVar, *syntax.Cast, *syntax.Autocast, *syntax.AtVar:
		if a := pt.e.prog.Targets[x]; a != nil {
			if a.BTF != nil {
				return pointee{a.BTF, a.Pointee}
			}
			return pointee{pt.btf, a.Pointee}
		}
	}
	return pointee{}
}

// resolve resolves autocast x once its operand's type is known, and tells
// whether it did.
func (pt *pointerTypes) resolve(x *syntax.Autocast) bool {
	if _, done := pt.e.prog.Targets[x]; done {
		return false
	}
	if _, failed := pt.e.contextErrs[x]; failed {
		return false
	}
	t := pt.pointee(x.Operand)
	if t.id == 0 {
		return false
	}
	a, err := probes.ResolvePointee(t.btf, t.id, x.Components, x.AddrOf)
	if err != nil {
		pt.e.contextErrs[x] = err
		return true
	}
	if pt.e.prog.Targets == nil {
		pt.e.prog.Targets = map[syntax.Expr]*probes.Access{}
	}
	pt.e.prog.Targets[x] = a
	x.SetType(a.Type)
	return true
}
