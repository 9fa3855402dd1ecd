package sema

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
)

// Splitting a large merged entry in two. The kernel verifies a program on
// one CPU, and the merged entry of syscall.* with argstr, some 35,000
// instructions, took most of the script's start-up there; two programs
// load at once on two CPUs (kernelside loads them in parallel). So, last
// of all, once the program is checked and its code final, a merged entry
// (syscalls.go) whose argument layouts keep at least splitNodes syntax
// nodes and compute strings in the kernel (not only argstr printed,
// which leaves them to user space: computesStrings, from DeferPrinted's
// plan, which DeferPrinted then follows) becomes two probes
// on its tracepoint, each with a run of the
// layouts (halfOfLayouts) and the calls that have them. The first, which
// is attached, dispatches every call, its own as before and the second's
// to a tail call (__syscall_tail) into the second, which dispatches its
// own calls only and is not attached (Probe.TailOf):
//
//	first:  if (__syscall_nr < 60) { ... if (__syscall_nr == 0) { name = "read"; __syscall_layout = 3 } ... }
//	        else { ... if (__syscall_nr == 257) { __syscall_tail(); next } ... }
//	        GUARDS; if (__syscall_layout < 12) { ... (its layouts) }; BODY
//	second: if (__syscall_nr < 290) { ... if (__syscall_nr == 257) { name = "openat"; __syscall_layout = 90 } ... }
//	        GUARDS; if (__syscall_layout < 102) { ... (its layouts) }; BODY
//
// The second shares the first's code (the code generator changes no
// node), and diagnostics, made before, are the same whether or not the
// entry is split. A tail call is a jump
// into the other program: a few nanoseconds, for the second's calls only.
// A probe that joins the merged entry's program (joinSyscallEntries:
// syscall.read beside syscall.*) runs behind a test of its call's number,
// in a section of its own after the merged one's (or before, as the
// script orders them): it joins the second program instead when the
// second serves its call, where the first's tail call never returns (and
// the first would test it for nothing). Under -t the entry stays one
// program (a tail call leaves the first program before its run's time is
// taken), and so does every entry where the kernel takes no tail call
// from a program that calls BPF functions (target.SubprogTailCalls: arm64
// before Linux 6.0).

// splitNodes is the fewest syntax nodes the argument layouts of a merged
// entry keep for it to be split (syscall.* with argstr: about 3,500; with
// name only, none).
const splitNodes = 1000

// mergedEntry is a merged entry of system calls, for splitMerged: its
// probe, the index of its plan in Program.Plans, and what the plan says.
type mergedEntry struct {
	probe          *Probe
	plan           int
	users          string
	calls, layouts int
	// cases are those of the dispatch on the call's number, which the
	// probe holds as standIn until callDispatches (standin.go).
	cases   []dispatchCase
	standIn *syntax.IfStmt
}

// splitMerged splits the merged entries that are large enough, and says
// so in their plans.
func (e *elab) splitMerged() {
	if e.opts.Timing {
		return
	}
	for _, m := range e.merges {
		if !slices.Contains(e.prog.Probes, m.probe) {
			continue
		}
		d := findDispatches(m.probe.Body)
		if d == nil || d.kept < splitNodes {
			continue
		}
		if e.prog.deferral == nil {
			e.prog.deferral = planDeferral(e.prog)
		}
		if !d.computesStrings(e.prog.deferral) {
			e.prog.Plans[m.plan] += "; its argument layouts run as data (the strings it prints are formatted in user space)"
			continue
		}
		if !e.reg.Kernel().Has(target.SubprogTailCalls) {
			e.prog.Plans[m.plan] += fmt.Sprintf("; not two programs: this kernel lacks %s (Linux %s has them)",
				target.SubprogTailCalls.What, target.SubprogTailCalls.Since)
			continue
		}
		served, moved := e.split(m.probe, d)
		e.prog.deferral = nil // the second probe's nodes: DeferPrinted plans again
		e.prog.Plans[m.plan] = fmt.Sprintf("%s: the entries of %d system calls share two programs on %s, verified at once, "+
			"the second entered by a tail call for %d of them (%d argument layouts)", m.users, m.calls, m.probe.Attach.Target(), served, m.layouts)
		switch n := len(moved); {
		case n == 1:
			e.prog.Plans[m.plan] += fmt.Sprintf("; %s joins the second", moved[0])
		case n > 1:
			e.prog.Plans[m.plan] += fmt.Sprintf("; %s and %s join the second", strings.Join(moved[:n-1], ", "), moved[n-1])
		}
	}
}

// dispatches are the two dispatches of a merged entry's final body: the
// statement indexes of the one on the call's number and of the one on its
// layout, the leaves of each (`if (X == K) CASE else next`, by key), and
// the layout each call's case sets.
type dispatches struct {
	callAt, layoutAt int
	calls, layouts   []*syntax.IfStmt
	layoutOf         map[*syntax.IfStmt]int64
	// sizes are the syntax nodes of each layout's case, kept their sum.
	sizes []int
	kept  int
}

// findDispatches finds the dispatches in body, or returns nil when the
// elaborated code no longer has their shape.
func findDispatches(body *syntax.Block) *dispatches {
	d := &dispatches{callAt: dispatchOn(body, SyscallNrVar), layoutAt: dispatchOn(body, SyscallLayoutVar), layoutOf: map[*syntax.IfStmt]int64{}}
	if d.callAt < 0 || d.layoutAt < d.callAt {
		return nil
	}
	var ok bool
	if d.calls, ok = dispatchLeaves(body.Stmts[d.callAt]); !ok {
		return nil
	}
	if d.layouts, ok = dispatchLeaves(body.Stmts[d.layoutAt]); !ok || len(d.layouts) < 2 {
		return nil
	}
	for _, c := range d.calls {
		k, ok := setsLayout(c.Then)
		if !ok {
			return nil
		}
		d.layoutOf[c] = k
	}
	d.measure()
	return d
}

// computesStrings tells whether the layouts of d assign a string local
// that DeferPrinted leaves in the kernel (plan says which it does not). Only then is the entry worth two programs: without such strings
// the layouts only copy the call's arguments, which the code generator
// makes rows of a table (bpfgen's layouttable.go), a program of some
// 1,000 instructions that one CPU verifies sooner than two programs load.
func (d *dispatches) computesStrings(plan *deferral) bool {
	found := false
	for _, leaf := range d.layouts {
		syntax.Walk(leaf.Then, func(n syntax.Node) bool {
			if a, ok := n.(*syntax.Assign); ok {
				id, ok := a.LHS.(*syntax.Ident)
				found = found || ok && id.Var != nil && id.Var.Type == syntax.TypeString && !plan.defers(id.Var)
			}
			return !found
		})
	}
	return found
}

// dispatchOn is the index of the statement of body that is a dispatch on
// the local name, or -1.
func dispatchOn(body *syntax.Block, name string) int {
	return slices.IndexFunc(body.Stmts, func(s syntax.Stmt) bool {
		d, ok := AsDispatchNode(s)
		return ok && d.Subject == name
	})
}

// DispatchNode is a node of a dispatch: an if whose condition compares
// its subject (a local's name, "" for another expression) with a number,
// the key, by op: `<` (an inner node) or `==` (a leaf).
type DispatchNode struct {
	*syntax.IfStmt
	Op, Subject string
	Key         int64
}

// AsDispatchNode returns s as a node of a dispatch (the merged entries',
// which the code generator compiles too: bpfgen's outline.go and
// calltable.go); false when it is not one.
func AsDispatchNode(s syntax.Stmt) (DispatchNode, bool) {
	i, ok := s.(*syntax.IfStmt)
	if !ok {
		return DispatchNode{}, false
	}
	b, ok := i.Cond.(*syntax.Binary)
	if !ok || b.Op != "<" && b.Op != "==" {
		return DispatchNode{}, false
	}
	k, ok := b.Y.(*syntax.NumberLit)
	if !ok {
		return DispatchNode{}, false
	}
	d := DispatchNode{IfStmt: i, Op: b.Op, Key: k.Value}
	if id, ok := b.X.(*syntax.Ident); ok {
		d.Subject = id.Name
	}
	return d, true
}

// dispatchLeaves lists the leaves of the dispatch s in key order: a tree
// of `if (X < K) ... else ...` whose leaves are `if (X == K) CASE else
// next`; false when s is not one.
func dispatchLeaves(s syntax.Stmt) ([]*syntax.IfStmt, bool) {
	d, ok := AsDispatchNode(s)
	switch {
	case !ok:
		return nil, false
	case d.Op == "==":
		_, next := d.Else.(*syntax.NextStmt)
		return []*syntax.IfStmt{d.IfStmt}, next
	}
	low, ok1 := dispatchLeaves(d.Then)
	high, ok2 := dispatchLeaves(d.Else)
	return append(low, high...), ok1 && ok2
}

// leafKey is the K of a leaf `if (X == K) ...`.
func leafKey(leaf *syntax.IfStmt) int64 {
	return leaf.Cond.(*syntax.Binary).Y.(*syntax.NumberLit).Value
}

// setsLayout returns the layout a call's case sets (its last statement,
// `__syscall_layout = K`).
func setsLayout(s syntax.Stmt) (int64, bool) {
	b, ok := s.(*syntax.Block)
	if !ok || len(b.Stmts) == 0 {
		return 0, false
	}
	id, value, ok := localAssignment(b.Stmts[len(b.Stmts)-1])
	k, isNum := value.(*syntax.NumberLit)
	if !ok || !isNum || id.Name != SyscallLayoutVar {
		return 0, false
	}
	return k.Value, true
}

// measure counts the syntax nodes of each layout's case, and of all.
func (d *dispatches) measure() {
	d.sizes = make([]int, len(d.layouts))
	for i, l := range d.layouts {
		syntax.Walk(l.Then, func(syntax.Node) bool { d.sizes[i]++; return true })
		d.kept += d.sizes[i]
	}
}

// halfOfLayouts is where the layouts split in two: after the first half
// of their nodes. The first program also dispatches every call, but in a
// lookup of a few instructions (bpfgen's calltable.go): with half the
// layouts each, the verifier walks 5,838 and 5,411 instructions of the
// programs of syscall.* with argstr. (When the dispatch was a tree of 360
// comparisons, a third of the layouts balanced the two.)
func (d *dispatches) halfOfLayouts() int {
	sum := 0
	for i, n := range d.sizes {
		if sum += n; 2*sum >= d.kept {
			return min(i+1, len(d.sizes)-1)
		}
	}
	return len(d.sizes) / 2
}

// split makes p the first half and puts the second after it; it returns
// the number of calls the second serves and the points of the probes that
// join the second.
func (e *elab) split(p *Probe, d *dispatches) (int, []string) {
	half := d.halfOfLayouts()
	second := map[int64]bool{}
	for _, l := range d.layouts[half:] {
		second[leafKey(l)] = true
	}
	var served []*syntax.IfStmt
	servedCalls := map[int64]bool{}
	for _, c := range d.calls {
		if second[d.layoutOf[c]] {
			served = append(served, &syntax.IfStmt{Pos: c.Pos, Cond: c.Cond, Then: c.Then, Else: c.Else})
			servedCalls[leafKey(c)] = true
			c.Then = e.tailCallCase(c.Pos)
		}
	}
	tail := *p
	tail.Body, tail.TailOf = &syntax.Block{Pos: p.Body.Pos, Stmts: slices.Clone(p.Body.Stmts)}, p
	tail.Body.Stmts[d.callAt] = typedDispatch(served)
	tail.Body.Stmts[d.layoutAt] = typedDispatch(d.layouts[half:])
	p.Body.Stmts[d.layoutAt] = typedDispatch(d.layouts[:half])
	i := slices.Index(e.prog.Probes, p)
	e.prog.Probes = slices.Insert(e.prog.Probes, i+1, &tail)
	var moved []string
	for _, q := range e.prog.Probes {
		if q.Joins == p && servedCalls[int64(q.joinedCall)] {
			q.Joins = &tail
			moved = append(moved, syntax.ProbePointString(q.User))
		}
	}
	return len(served), moved
}

// typedDispatch is the balanced tree of comparisons over leaves (in key
// order, already elaborated): `if (X < K) LOW else HIGH`, typed as the
// elaborator leaves its code.
func typedDispatch(leaves []*syntax.IfStmt) syntax.Stmt {
	if len(leaves) == 1 {
		return leaves[0]
	}
	mid := len(leaves) / 2
	eq := leaves[mid].Cond.(*syntax.Binary)
	at := leaves[mid].Pos
	cond := &syntax.Binary{Typed: syntax.Typed{Pos: eq.Pos, T: eq.T}, Op: "<", X: syntax.Clone(eq.X), Y: syntax.Clone(eq.Y)}
	return &syntax.IfStmt{Pos: at, Cond: cond, Then: typedDispatch(leaves[:mid]), Else: typedDispatch(leaves[mid:])}
}

// tailCallCase is `{ __syscall_tail(); next }`, elaborated: the first
// half's case of a call the second serves (next, should the tail call
// fail).
func (e *elab) tailCallCase(at syntax.Pos) *syntax.Block {
	f := e.builtin("__syscall_tail")
	call := &syntax.Call{Typed: syntax.Typed{Pos: at, T: f.Result}, Name: f.Name, Func: f}
	return &syntax.Block{Pos: at, Stmts: []syntax.Stmt{&syntax.ExprStmt{X: call}, &syntax.NextStmt{Pos: at}}}
}
