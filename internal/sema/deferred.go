package sema

import (
	"fmt"
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Printed strings computed in user space. A string local of a kernel
// probe that the probe only prints (the syscall tapset's argstr, built by
// sprintf from the call's arguments and the tapset's flag decoders) need
// not be formatted in the kernel: the BPF program can keep, in place of
// the string, which assignment made it and the values that assignment
// read from the event, and user space, which formats the print record
// anyway, computes the string from them. The verifier then checks a few
// loads and copies per assignment instead of the formatting code (for
// syscall.* with argstr, that of 360 calls).
//
// DeferPrinted finds such locals and rewrites each of their assignments
// `v = E` into `v = F(L1, ..., Ln)`: L1..Ln are E's leaves, the largest
// parts of E that only the kernel can compute (context variables, calls
// of builtins that read the event or memory, other locals), in the order
// E evaluates them; F is a function made for the assignment, `return E`
// with each leaf replaced by a parameter, which only user space runs. A
// local qualifies when
//
//   - every mention of it is either such an assignment, as a statement,
//     or a whole argument of a print-family call (print, printf, println,
//     printd, printdln: not of an s* one, whose value the probe uses);
//   - what is left of every assignment's E around its leaves is code user
//     space computes exactly as the kernel would: literals, operators but
//     division and modulo (whose errors stop the probe where they happen),
//     conditionals, concatenation, sprintf and the other s* calls (but
//     %b, %m, %M and the pretty printing of context variables), and calls
//     of script functions made of such code over their own parameters and
//     locals (no globals, loops or builtins);
//   - a leaf under a conditional or a short-circuit operator, which the
//     kernel now evaluates whether or not E would have, is a local
//     (reading one has no effect and cannot fail);
//   - at least one assignment leaves user space some work (it is not
//     `v = LEAF`).
//
// A quoted user string, user_string_quoted(A) (quoted.stp), A a local, a
// literal or a context variable, not under a conditional, is two leaves:
// A and __user_string_raw(A), the string read after a mark byte ("" when
// it cannot be read); the function quotes it (__user_string_quote: the
// string quoted as string_quoted quotes it, or A in hex). The kernel then
// keeps only the read, not the quoting walk, which the verifier checks
// pass after pass: a quarter of what it walked for syscall.* with argstr.
//
// The kernel keeps the local as the number of the assignment that made it
// (0: none yet, the empty string) and the leaves' values (a long in 8
// bytes, a string in MAXSTRINGLEN), and a print sends them; user space
// evaluates the assignment's E on them when it formats the record, as
// the probe's body would (the functions E calls nest as they would
// there), with a MAXACTION of its own: statements that no longer run in
// the kernel no longer count towards the probe's. It runs
// after pass 2's listing (-p2 shows the program as written) and before
// the code generator, once: a second call changes nothing. Pass 2 may
// have planned it already (deferral), which it then follows.
func DeferPrinted(prog *Program) {
	if prog.Deferred != nil { // done already
		return
	}
	plan := prog.deferral
	if plan == nil {
		plan = planDeferral(prog)
	}
	prog.deferral = nil
	for _, v := range plan.order {
		plan.d.deferLocal(prog, v, plan.uses.of[v].sites, plan.leaves[v])
	}
}

// deferral is what DeferPrinted does to a program: the string locals it
// leaves to user space, in order, with the leaves of each one's
// assignments. Pass 2 makes it when it asks which those are (a merged
// entry's split: syscallsplit.go), and DeferPrinted then uses it unless
// the program changed since (a split).
type deferral struct {
	d      *deferrer
	uses   deferredUses
	order  []*syntax.Var
	leaves map[*syntax.Var][][]syntax.Expr
}

func planDeferral(prog *Program) *deferral {
	plan := &deferral{d: newDeferrer(), uses: usesOf(prog), leaves: map[*syntax.Var][][]syntax.Expr{}}
	for _, v := range plan.uses.order {
		if leaves, ok := plan.d.deferrable(plan.uses.of[v]); ok {
			plan.order = append(plan.order, v)
			plan.leaves[v] = leaves
		}
	}
	return plan
}

// defers tells whether the plan leaves v to user space.
func (plan *deferral) defers(v *syntax.Var) bool { return plan.leaves[v] != nil }

func newDeferrer() *deferrer {
	return &deferrer{pure: map[*syntax.Func]bool{}, visiting: map[*syntax.Func]bool{}, quoted: map[syntax.Expr]*syntax.Call{},
		raw: builtinFunc(tapset.Builtins["__user_string_raw"]), quote: builtinFunc(tapset.Builtins["__user_string_quote"])}
}

// deferrer holds DeferPrinted's verdicts on script functions.
type deferrer struct {
	pure     map[*syntax.Func]bool
	visiting map[*syntax.Func]bool
	// quoted maps each user_string_quoted call split into two leaves to
	// its read (quotedRead).
	quoted map[syntax.Expr]*syntax.Call
	// raw and quote are __user_string_raw and __user_string_quote.
	raw, quote *syntax.Func
}

// deferredUses is what the kernel probes do with their string locals, in
// the order of the probes and of their locals (the same program on every
// run). A local may be more than one probe's: the second half of a
// merged entry of system calls (splitMerged) shares its locals, and most
// of its statements, with the first.
type deferredUses struct {
	of    map[*syntax.Var]*deferredUse
	order []*syntax.Var
}

// deferredUse is what the probes do with one string local: the
// assignments that make it, or bad when they use it otherwise.
type deferredUse struct {
	sites []*syntax.Assign
	bad   bool
}

func usesOf(prog *Program) deferredUses {
	uses := deferredUses{of: map[*syntax.Var]*deferredUse{}}
	for _, p := range prog.Probes {
		for _, v := range p.Locals {
			if p.Kernel && v.Type == syntax.TypeString && v.Kind == syntax.VarLocal && uses.of[v] == nil {
				uses.of[v] = &deferredUse{}
				uses.order = append(uses.order, v)
			}
		}
	}
	seen := map[syntax.Stmt]bool{} // a statement two probes share is walked once
	var visit func(n syntax.Node) bool
	visit = func(n syntax.Node) bool {
		if s, ok := n.(syntax.Stmt); ok {
			if seen[s] {
				return false
			}
			seen[s] = true
		}
		switch n := n.(type) {
		case *syntax.ExprStmt:
			if a, v := assignsLocal(n); v != nil && a.Op == "=" && uses.of[v] != nil {
				uses.of[v].sites = append(uses.of[v].sites, a)
				syntax.Walk(a.RHS, visit)
				return false
			}
		case *syntax.PrintCall:
			if n.Name[0] == 's' {
				return true
			}
			for _, a := range n.Args {
				if id, ok := a.(*syntax.Ident); !ok || uses.of[id.Var] == nil {
					syntax.Walk(a, visit)
				}
			}
			return false
		case *syntax.Ident:
			if u := uses.of[n.Var]; u != nil {
				u.bad = true
			}
		}
		return true
	}
	for _, p := range prog.Probes {
		if p.Kernel && len(uses.order) > 0 {
			syntax.Walk(p.Body, visit)
		}
	}
	return uses
}

// assignsLocal returns the assignment a statement is when it assigns a
// local as a whole, with the local.
func assignsLocal(s *syntax.ExprStmt) (*syntax.Assign, *syntax.Var) {
	a, ok := s.X.(*syntax.Assign)
	if !ok {
		return nil, nil
	}
	id, ok := a.LHS.(*syntax.Ident)
	if !ok || id.Var == nil || id.Var.Kind == syntax.VarGlobal {
		return nil, nil
	}
	return a, id.Var
}

// deferrable returns the leaves of each assignment of a local the probes
// use as u says, when every one can be split and one leaves user space
// some work.
func (d *deferrer) deferrable(u *deferredUse) ([][]syntax.Expr, bool) {
	if u.bad || len(u.sites) == 0 {
		return nil, false
	}
	leaves := make([][]syntax.Expr, len(u.sites))
	work := false
	for i, a := range u.sites {
		var ok bool
		if leaves[i], ok = d.split(a.RHS, false, nil); !ok {
			return nil, false
		}
		work = work || len(leaves[i]) != 1 || leaves[i][0] != a.RHS
	}
	return leaves, work
}

// deferLocal rewrites the assignments of v, sites, each into a call of a
// function of its leaves.
func (d *deferrer) deferLocal(prog *Program, v *syntax.Var, sites []*syntax.Assign, leaves [][]syntax.Expr) {
	if prog.Deferred == nil {
		prog.Deferred = map[*syntax.Var][]*syntax.Func{}
	}
	for i, a := range sites {
		f := d.siteFunc(fmt.Sprintf("__deferred_%s_%d", v.Name, i+1), a.RHS, leaves[i])
		prog.Deferred[v] = append(prog.Deferred[v], f)
		a.RHS = &syntax.Call{Typed: syntax.Typed{Pos: a.RHS.Position(), T: syntax.TypeString}, Name: f.Name, Args: leaves[i], Func: f}
	}
}

// siteFunc makes the function of an assignment whose value is e: `return
// e`, each of e's leaves replaced by a parameter, each quoted user string
// split in two by __user_string_quote of its two.
func (d *deferrer) siteFunc(name string, e syntax.Expr, leaves []syntax.Expr) *syntax.Func {
	f := &syntax.Func{Name: name, Result: syntax.TypeString}
	param := map[syntax.Expr]*syntax.Ident{}
	for i, l := range leaves {
		v := &syntax.Var{Name: fmt.Sprintf("leaf%d", i+1), Kind: syntax.VarParam, Pos: l.Position(), Type: l.Type(), Index: i}
		f.Params = append(f.Params, v)
		param[l] = &syntax.Ident{Typed: syntax.Typed{Pos: l.Position(), T: l.Type()}, Name: v.Name, Var: v}
	}
	f.Locals = f.Params
	ret := &syntax.ReturnStmt{Pos: e.Position(), Value: e}
	syntax.RewriteExprs(ret, func(x syntax.Expr) syntax.Expr {
		if id, ok := param[x]; ok {
			return id
		}
		if read := d.quoted[x]; read != nil && param[read] != nil {
			return &syntax.Call{Typed: syntax.Typed{Pos: x.Position(), T: syntax.TypeString}, Name: d.quote.Name,
				Args: []syntax.Expr{param[read.Args[0]], param[read]}, Func: d.quote}
		}
		return nil
	})
	f.Decl = &syntax.FuncDecl{Pos: e.Position(), NamePos: e.Position(), Name: name, Result: syntax.TypeString,
		Body: &syntax.Block{Pos: e.Position(), Stmts: []syntax.Stmt{ret}}}
	return f
}

// split appends to leaves those of e, in evaluation order, and tells
// whether user space can compute the rest of e. cond tells whether e may
// not be evaluated at all (under a conditional or a short-circuit
// operator).
func (d *deferrer) split(e syntax.Expr, cond bool, leaves []syntax.Expr) ([]syntax.Expr, bool) {
	if read := d.quotedRead(e); read != nil && !cond {
		return append(leaves, read.Args[0], read), true
	}
	if kids, ok := d.skeleton(e); ok {
		for _, k := range kids {
			if leaves, ok = d.split(k.x, cond || k.cond, leaves); !ok {
				return nil, false
			}
		}
		return leaves, true
	}
	if t := e.Type(); t != syntax.TypeLong && t != syntax.TypeString {
		return nil, false
	}
	if id, ok := e.(*syntax.Ident); cond && (!ok || id.Var.Kind == syntax.VarGlobal) {
		return nil, false
	}
	return append(leaves, e), true
}

// quotedRead returns the read of the quoted user string e is, made on
// first asking: __user_string_raw(A) when e is the library's
// user_string_quoted(A) and A is a local, a literal or a context variable
// (read twice, to no effect), else nil.
func (d *deferrer) quotedRead(e syntax.Expr) *syntax.Call {
	if read := d.quoted[e]; read != nil {
		return read
	}
	c, ok := e.(*syntax.Call)
	if !ok || c.Func == nil || c.Func.Decl == nil || c.Func.Name != "user_string_quoted" || len(c.Args) != 1 ||
		c.Func.Decl.Pos.Src == nil || !c.Func.Decl.Pos.Src.Library || !plainOperand(c.Args[0]) {
		return nil
	}
	read := &syntax.Call{Typed: syntax.Typed{Pos: c.Pos, T: syntax.TypeString}, Name: d.raw.Name, Args: []syntax.Expr{c.Args[0]}, Func: d.raw}
	d.quoted[e] = read
	return read
}

// plainOperand tells whether reading x twice is reading it once: a local,
// a literal, a context variable without components.
func plainOperand(x syntax.Expr) bool {
	switch x := x.(type) {
	case *syntax.Ident:
		return x.Var != nil && x.Var.Kind != syntax.VarGlobal
	case *syntax.NumberLit:
		return true
	case *syntax.TargetVar:
		return len(x.Components) == 0 && x.Pretty == 0 && !x.AddrOf && !strings.HasPrefix(x.Name, "$$")
	}
	return false
}

// operand is an operand of an expression user space computes; cond marks
// one that may not be evaluated.
type operand struct {
	x    syntax.Expr
	cond bool
}

// skeleton returns the operands of e, in evaluation order, when user
// space computes e from their values as the kernel does.
func (d *deferrer) skeleton(e syntax.Expr) ([]operand, bool) {
	switch e := e.(type) {
	case *syntax.NumberLit, *syntax.StringLit:
		return nil, true
	case *syntax.Unary:
		return []operand{{x: e.X}}, true
	case *syntax.Binary:
		switch e.Op {
		case "/", "%", "=~", "!~":
			return nil, false
		case "&&", "||":
			return []operand{{x: e.X}, {x: e.Y, cond: true}}, true
		}
		return []operand{{x: e.X}, {x: e.Y}}, true
	case *syntax.Ternary:
		return []operand{{x: e.Cond}, {x: e.Then, cond: true}, {x: e.Else, cond: true}}, true
	case *syntax.PrintCall:
		if !userFormats(e) {
			return nil, false
		}
		ops := make([]operand, len(e.Args))
		for i, a := range e.Args {
			ops[i] = operand{x: a}
		}
		return ops, true
	case *syntax.Call:
		if !d.pureFunc(e.Func) {
			return nil, false
		}
		ops := make([]operand, len(e.Args))
		for i, a := range e.Args {
			ops[i] = operand{x: a}
		}
		return ops, true
	}
	return nil, false
}

// userFormats tells whether user space formats the s* call e as the
// kernel does: no pretty printing of context variables, whose faults
// give "ERROR", and no conversion the kernel refuses or that reads
// memory (%b, %m, %M).
func userFormats(e *syntax.PrintCall) bool {
	if e.Name[0] != 's' || e.OnFault != "" {
		return false
	}
	f, err := PrintFormat(e)
	if err != nil {
		return false
	}
	for _, dir := range f.Directives() {
		switch dir.Verb {
		case 'b', 'm', 'M':
			return false
		}
	}
	return true
}

// pureFunc tells whether f is a script function user space computes as
// the kernel does from its arguments alone: its statements assignments of
// its locals, conditionals and returns, its expressions skeletons over its
// own locals and parameters.
func (d *deferrer) pureFunc(f *syntax.Func) bool {
	if f == nil || f.Decl == nil || f.Decl.Body == nil || d.visiting[f] {
		return false
	}
	if pure, ok := d.pure[f]; ok {
		return pure
	}
	d.visiting[f] = true
	pure := d.pureStmt(f.Decl.Body)
	delete(d.visiting, f)
	d.pure[f] = pure
	return pure
}

func (d *deferrer) pureStmt(s syntax.Stmt) bool {
	switch s := s.(type) {
	case nil, *syntax.NullStmt:
		return true
	case *syntax.Block:
		for _, x := range s.Stmts {
			if !d.pureStmt(x) {
				return false
			}
		}
		return true
	case *syntax.IfStmt:
		return d.pureExpr(s.Cond) && d.pureStmt(s.Then) && d.pureStmt(s.Else)
	case *syntax.ReturnStmt:
		return s.Value == nil || d.pureExpr(s.Value)
	case *syntax.ExprStmt:
		a, v := assignsLocal(s)
		if v == nil {
			return false
		}
		switch a.Op {
		case "/=", "%=", "<<<":
			return false
		}
		return d.pureExpr(a.RHS)
	}
	return false
}

// pureExpr tells whether e is a skeleton whose leaves are all locals or
// parameters of the function it is in.
func (d *deferrer) pureExpr(e syntax.Expr) bool {
	if kids, ok := d.skeleton(e); ok {
		for _, k := range kids {
			if !d.pureExpr(k.x) {
				return false
			}
		}
		return true
	}
	id, ok := e.(*syntax.Ident)
	return ok && id.Var != nil && id.Var.Kind != syntax.VarGlobal
}
