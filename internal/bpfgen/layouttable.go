package bpfgen

import (
	"encoding/binary"
	"maps"
	"slices"

	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// The merged syscall.* entry's dispatch on the argument layout as data.
//
// After its dispatch on the call (calltable.go), the merged entry runs
// the rest of the call's prologue, which calls with the same argument
// layout share: a second tree of comparisons on __syscall_layout, a
// hundred and more cases (sema's syscalls.go). Once the printed strings
// are left to user space (sema.DeferPrinted), most cases only copy
// arguments: a local takes a system call argument cut to its C type
// (`fd = $__syscall_arg1_u32`, `__int32(...)`, `... & 0xffffffff`), and
// the deferred argstr takes its leaves, each a long (such an argument, a
// local), a quoted user string's read (__user_string_raw) or a long of a
// structure in user memory (__user_long_of), then its assignment's
// number. Compiled, each case is a path of 20 to 60 instructions that the
// verifier walks, thousands in all. As data, each case is a row of an
// ARRAY map ("layouts") indexed by the layout, a list of steps of 16
// bytes:
//
//	kind, 0, shift, signed, dst (u16), add (u16), at (u32), imm (u32)
//
// A step's value is the long at `at` in the scratch area (a local, or the
// copy of the call's arguments made before the steps), or imm; a step
// stores it in the long at dst (stepCopy), cut to its type first by
// shifting it left and back right by shift, arithmetically when signed
// (stepCut), or stores imm (stepConst), or reads the user string the
// value points to into the string at dst (a mark byte, then the text:
// userStringRaw's), or reads the user long at the value plus add into
// the long at dst (0 when the value is 0 or the memory cannot be read:
// __user_long_of's). A row holds its steps grouped by kind, as many
// places for a kind as the row with the most of it has; the program runs
// the places of each kind in turn, each compiled once for every row
// (stepRun), until a place of kind 0. The verifier walks the places'
// code, a few hundred instructions, not every case: syscall.* printing
// argstr is one program of 1,594 instructions of which the verifier
// processes 2,240, where two programs of 3,645 and 3,602 took it 4,451
// and 4,233 (the split, sema/syscallsplit.go, is no longer worth its
// second program). Each call costs about what its case's code did: the
// steps of lseek's row take as long as its code (193 and 198 ns added per
// call, bench/argstr.sh), faccessat's path is read into the record
// without the copy the code made (246 against 430). A case whose
// statements no step describes (the socket addresses, pipe's conditional
// reads) keeps its code, behind a row of kind layoutCode. A local that
// only its case's argstr reads is not stored at all (unstoredLocals): the
// leaf takes what the case assigned it.

// A layout table's row kinds (its first word).
const (
	layoutNone = 0 // no such layout: next
	layoutRow  = 1 // the row's steps
	layoutCode = 2 // the case's compiled code
)

// A step's kinds; the first three store a long.
const (
	stepEnd        = 0
	stepCopy       = 1 // the long at `at` into the long at dst
	stepCut        = 2 // the long at `at`, cut, into the long at dst
	stepConst      = 3 // imm into the long at dst
	stepUserString = 4 // __user_string_raw(the long at `at`) into the string at dst
	stepUserLong   = 5 // the user long at (the long at `at`)+add into the long at dst
)

// layoutStepSize is the size of a step in a row.
const layoutStepSize = 16

// layoutTableMin is the fewest cases a dispatch compiles to a table.
const layoutTableMin = 16

// operand is where a step's value comes from: the long at off in the
// scratch area (scratch), or off itself; cut to size bytes.
type operand struct {
	scratch bool
	off     uint32
	size    int
	signed  bool
}

// narrowed is o cut to size bytes (sign-extended when signed), when one
// shift pair does both cuts.
func (o operand) narrowed(size int, signed bool) (operand, bool) {
	switch {
	case o.size >= size:
		o.size, o.signed = size, signed
		return o, true
	case !o.signed || signed:
		return o, true // the narrower cut already holds
	}
	return o, false // sign-extended, then cut wider unsigned
}

// layoutStep is a step of a row.
type layoutStep struct {
	kind uint8
	from operand
	dst  int
	add  int
}

// stores tells whether the step stores a long it computed.
func (s layoutStep) stores() bool { return s.kind <= stepConst }

// storeStep is the step that stores from in the long at dst.
func storeStep(from operand, dst int) layoutStep {
	switch {
	case !from.scratch:
		return layoutStep{kind: stepConst, from: from, dst: dst}
	case from.size < 8:
		return layoutStep{kind: stepCut, from: from, dst: dst}
	}
	return layoutStep{kind: stepCopy, from: from, dst: dst}
}

// put writes the step's bytes in b.
func (s layoutStep) put(b []byte) {
	b[0] = s.kind
	if s.from.scratch {
		binary.NativeEndian.PutUint32(b[8:], s.from.off)
	} else {
		binary.NativeEndian.PutUint32(b[12:], s.from.off)
	}
	b[2] = uint8(64 - 8*s.from.size)
	if s.from.signed {
		b[3] = 1
	}
	binary.NativeEndian.PutUint16(b[4:], uint16(s.dst))
	binary.NativeEndian.PutUint16(b[6:], uint16(s.add))
}

// layoutCase is a case of the dispatch: its key and its steps, or code
// when no steps describe it.
type layoutCase struct {
	key   int64
	steps []layoutStep
	code  syntax.Stmt
}

// layoutTable compiles s as a table when it is the merged entry's
// dispatch on the layout, a statement of the probe's body, in a program
// whose locals live in the scratch area and whose call's arguments are
// copied to the stack, and steps describe all but at most
// layoutsPerOutline of its cases (not so when the probe computes argstr
// in the kernel: the cases are then outlined, outline.go); it tells
// whether it did.
func (g *gen) layoutTable(s *syntax.IfStmt) bool {
	d, ok := sema.AsDispatchNode(s)
	if !ok || d.Subject != sema.SyscallLayoutVar || !slices.Contains(g.probe.Body.Stmts, syntax.Stmt(s)) ||
		!g.outlinable() || g.faultsIn() {
		return false
	}
	var leaves []layoutCase
	if !dispatchCases(s, sema.SyscallLayoutVar, 0, callTableMaxKey, func(key int64, c syntax.Stmt) bool {
		leaves = append(leaves, layoutCase{key: key, code: c})
		return true
	}) || len(leaves) < layoutTableMin {
		return false
	}
	args := g.allocScratch(8 * len(g.m.regs().SyscallArgs))
	b := &layoutBuilder{g: g, args: args, dropped: g.unstoredLocals(leaves)}
	code := 0
	for i := range leaves {
		if steps, ok := b.steps(leaves[i].code); ok {
			leaves[i].steps, leaves[i].code = steps, nil
		} else {
			code++
		}
	}
	if code > layoutsPerOutline { // argstr computed in the kernel: outlined subtrees
		return false
	}
	g.emitLayoutTable(s.Cond.(*syntax.Binary).X, leaves, args)
	return true
}

// layoutBuilder turns cases into steps.
type layoutBuilder struct {
	g *gen
	// args is where the loop's prologue copies the call's arguments in
	// the scratch area.
	args int
	// dropped are the locals no step stores (unstoredLocals).
	dropped map[*syntax.Var]bool
	// assigned is what each local the case assigned so far holds.
	assigned map[*syntax.Var]operand
}

// steps returns the steps of the case c, false when some statement of it
// is not an assignment steps describe.
func (b *layoutBuilder) steps(c syntax.Stmt) ([]layoutStep, bool) {
	b.assigned = map[*syntax.Var]operand{}
	stmts := []syntax.Stmt{c}
	if block, ok := c.(*syntax.Block); ok {
		stmts = block.Stmts
	}
	var steps []layoutStep
	for _, st := range stmts {
		a, v := localAssign(st)
		if v == nil {
			return nil, false
		}
		if call, ok := a.RHS.(*syntax.Call); ok && b.g.m.prog.Deferred[v] != nil {
			if steps, ok = b.deferredSteps(steps, v, call); !ok {
				return nil, false
			}
			continue
		}
		from, ok := b.operand(a.RHS)
		if !ok || v.Type != syntax.TypeLong {
			return nil, false
		}
		if !b.dropped[v] {
			dst := b.g.local(v).off
			steps = append(steps, storeStep(from, dst))
			maps.DeleteFunc(b.assigned, func(_ *syntax.Var, o operand) bool { return o.scratch && o.off == uint32(dst) })
		}
		b.assigned[v] = from
	}
	return steps, !readsStored(steps)
}

// readsStored tells whether a step reads a long a step of the same row
// stores: the steps run by kind (stepKinds), not in the order of the
// statements.
func readsStored(steps []layoutStep) bool {
	stored := map[uint32]bool{}
	for _, s := range steps {
		if s.stores() {
			stored[uint32(s.dst)] = true
		}
	}
	return slices.ContainsFunc(steps, func(s layoutStep) bool { return s.from.scratch && stored[s.from.off] })
}

// deferredSteps appends the steps of v = call, an assignment of the
// deferred local v (deferredAssign): its leaves, then its number.
func (b *layoutBuilder) deferredSteps(steps []layoutStep, v *syntax.Var, call *syntax.Call) ([]layoutStep, bool) {
	id := slices.Index(b.g.m.prog.Deferred[v], call.Func) + 1
	if id == 0 {
		return nil, false
	}
	dst := b.g.local(v)
	for i, field := range b.g.m.deferredFields(call.Func) {
		step, ok := b.leafStep(call.Args[i], field.Width != 0)
		if !ok {
			return nil, false
		}
		step.dst = dst.off + field.Offset
		steps = append(steps, step)
	}
	return append(steps, storeStep(operand{off: uint32(id), size: 8}, dst.off)), true
}

// leafStep is the step of a leaf (without its dst): a string leaf must be
// a quoted user string's read, a long one a long operand or a long of a
// structure in user memory.
func (b *layoutBuilder) leafStep(leaf syntax.Expr, str bool) (layoutStep, bool) {
	c, call := leaf.(*syntax.Call)
	switch {
	case str:
		if !call || c.Name != "__user_string_raw" || sema.Builtin(c) == nil {
			return layoutStep{}, false
		}
		from, ok := b.address(c.Args[0])
		return layoutStep{kind: stepUserString, from: from}, ok
	case call && libraryFunc(c, "__user_long_of", 3):
		return b.userLongStep(c)
	}
	from, ok := b.operand(leaf)
	return storeStep(from, 0), ok
}

// address is the operand of a step that reads user memory: a long of the
// scratch area, not cut.
func (b *layoutBuilder) address(e syntax.Expr) (operand, bool) {
	from, ok := b.operand(e)
	return from, ok && from.scratch && from.size == 8
}

// userLongStep is the step of __user_long_of(uaddr, n, i), n and i
// literals: long i of the n structures of two longs at uaddr, 0 when n or
// i is out of range (the tapset's function).
func (b *layoutBuilder) userLongStep(c *syntax.Call) (layoutStep, bool) {
	n, okN := c.Args[1].(*syntax.NumberLit)
	i, okI := c.Args[2].(*syntax.NumberLit)
	if !okN || !okI || i.Value < 0 {
		return layoutStep{}, false
	}
	if n.Value < 1 || n.Value > 2 || i.Value >= 2*n.Value {
		return storeStep(operand{size: 8}, 0), true
	}
	from, ok := b.address(c.Args[0])
	return layoutStep{kind: stepUserLong, from: from, add: int(8 * i.Value)}, ok
}

// operand tells where the long e comes from, when a step can take it: a
// literal that fits 32 bits, a local (what the case assigned it, or its
// slot), a system call's argument (from the loop's copy), or one of these
// cut to fewer bytes by __int32 or a mask.
func (b *layoutBuilder) operand(e syntax.Expr) (operand, bool) {
	switch e := e.(type) {
	case *syntax.NumberLit:
		return operand{off: uint32(e.Value), size: 8}, e.Value >= 0 && e.Value <= 0xffffffff
	case *syntax.Ident:
		if from, ok := b.assigned[e.Var]; ok {
			return from, true
		}
		if e.Var == nil || e.Var.Kind != syntax.VarLocal || e.Var.Type != syntax.TypeLong ||
			b.g.m.prog.Deferred[e.Var] != nil || b.dropped[e.Var] {
			return operand{}, false
		}
		return operand{scratch: true, off: uint32(b.g.local(e.Var).off), size: 8}, true
	case *syntax.TargetVar:
		return b.argument(e)
	case *syntax.Call:
		if !libraryFunc(e, "__int32", 1) {
			return operand{}, false
		}
		if from, ok := b.operand(e.Args[0]); ok {
			return from.narrowed(4, true)
		}
	case *syntax.Binary:
		mask, ok := e.Y.(*syntax.NumberLit)
		if !ok || e.Op != "&" {
			return operand{}, false
		}
		size := slices.Index([]int64{0xff, 0xffff, 0, 0xffffffff}, mask.Value) + 1
		if from, ok := b.operand(e.X); ok && size > 0 {
			return from.narrowed(size, false)
		}
	}
	return operand{}, false
}

// argument is the operand of a system call's argument the probe's
// context holds in a register (attach.Loc.Compat: compatRegister), but a
// signed long, which a compat call sign-extends from its 32 bits.
func (b *layoutBuilder) argument(e *syntax.TargetVar) (operand, bool) {
	acc := b.g.m.prog.Targets[e]
	if acc == nil || acc.Param < 0 || acc.Type != syntax.TypeLong || acc.Path != nil && len(acc.Path.Offsets) > 0 {
		return operand{}, false
	}
	loc := b.g.ownProbe().Attach.Args[acc.Param].Loc
	i := slices.Index(b.g.m.regs().SyscallArgs, loc.Offset)
	if !loc.Compat || loc.Verdict || loc.Const || loc.User != nil || loc.Address || loc.DataLoc || i < 0 ||
		loc.Size == 8 && loc.Signed {
		return operand{}, false
	}
	return operand{scratch: true, off: uint32(b.args + 8*i), size: loc.Size, signed: loc.Signed}, true
}

// libraryFunc tells whether c calls the library's function name with n
// arguments.
func libraryFunc(c *syntax.Call, name string, n int) bool {
	f := c.Func
	return f != nil && f.Name == name && len(c.Args) == n && f.Decl != nil && f.Decl.Pos.Src != nil && f.Decl.Pos.Src.Library
}

// localAssign returns the assignment s is and its local when s is
// `v = E`, v a local.
func localAssign(s syntax.Stmt) (*syntax.Assign, *syntax.Var) {
	e, ok := s.(*syntax.ExprStmt)
	if !ok {
		return nil, nil
	}
	a, ok := e.X.(*syntax.Assign)
	if !ok || a.Op != "=" {
		return nil, nil
	}
	id, ok := a.LHS.(*syntax.Ident)
	if !ok || id.Var == nil || id.Var.Kind != syntax.VarLocal {
		return nil, nil
	}
	return a, id.Var
}

// unstoredLocals are the locals whose every read, in every kernel probe,
// is a leaf of a deferred assignment in a case of the dispatch that
// assigned the local before it: a step takes what the case assigned, and
// no step stores the local.
func (g *gen) unstoredLocals(cases []layoutCase) map[*syntax.Var]bool {
	covered := map[*syntax.Ident]bool{}
	for _, c := range cases {
		stmts := []syntax.Stmt{c.code}
		if block, ok := c.code.(*syntax.Block); ok {
			stmts = block.Stmts
		}
		assigned := map[*syntax.Var]bool{}
		for _, st := range stmts {
			a, v := localAssign(st)
			if v == nil {
				continue
			}
			if call, ok := a.RHS.(*syntax.Call); ok && g.m.prog.Deferred[v] != nil {
				for _, leaf := range call.Args {
					if id, ok := leaf.(*syntax.Ident); ok && assigned[id.Var] {
						covered[id] = true
					}
				}
			}
			assigned[v] = true
		}
	}
	unstored := map[*syntax.Var]bool{}
	read := map[*syntax.Var]bool{} // by a read not covered
	seen := map[syntax.Stmt]bool{} // statements two probes share are walked once
	var visit func(n syntax.Node) bool
	visit = func(n syntax.Node) bool {
		if s, ok := n.(syntax.Stmt); ok {
			if seen[s] {
				return false
			}
			seen[s] = true
		}
		switch n := n.(type) {
		case *syntax.Assign:
			if id, ok := n.LHS.(*syntax.Ident); ok && n.Op == "=" {
				unstored[id.Var] = unstored[id.Var] || id.Var != nil && id.Var.Kind == syntax.VarLocal
				syntax.Walk(n.RHS, visit)
				return false
			}
		case *syntax.Ident:
			read[n.Var] = read[n.Var] || !covered[n]
		}
		return true
	}
	for _, p := range g.m.prog.Probes {
		if p.Kernel {
			syntax.Walk(p.Body, visit)
		}
	}
	for v := range unstored {
		if read[v] {
			delete(unstored, v)
		}
	}
	return unstored
}
