package bpfgen

import (
	"fmt"
	"maps"

	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Outlined layouts: the argument layouts of the merged syscall.* entry as
// static subprograms.
//
// The merged program of syscall.* holds the prologues of a hundred and
// more argument layouts (sema's syscalls.go) behind a dispatch on
// __syscall_layout: some 30,000 instructions in one function. The
// verifier's stack liveness analysis (kernel/bpf/liveness.c, 6.17 and
// later) recomputes the liveness of every stack slot over the whole
// function each time a path it finished explored an instruction that
// touches the stack for the first time: once or more per layout, each
// pass over the whole function, half of the verifier's time. So each
// subtree of that dispatch covering at most layoutsPerOutline layouts
// is compiled as a static subprogram, which the verifier walks in the
// caller's context (its registers keep their exact types) but whose
// liveness it computes over the subprogram's own instructions. (When
// argstr is only printed, the layouts are rows of a table instead:
// layouttable.go; they are outlined where the probe computes argstr, or
// reads more than the table's steps describe, in the kernel.)
//
// The subprogram is int f(ctx, scratch, args): it runs with R6 = ctx and
// R9 = the probe's own scratch element (the probe's locals all live there
// in a merged program, longsInScratch), and copies the call's arguments
// and compat bits (fillSyscallArgs) from the caller's stack into its own,
// at the same offsets, so the layouts' code compiles as it does inline.
// Its temporaries start above the caller's scratch in use. It returns 0;
// outlineNext for a `next`, and the caller ends the probe (its section,
// in a program of several); or 1 when an error ended it (its record
// sent), and the caller ends the program.

// layoutsPerOutline is the most layouts one subprogram holds.
const layoutsPerOutline = 8

// outlineNext is what an outlined subtree returns for a `next`.
const outlineNext = 2

// outline compiles s as a subprogram when it is a subtree of the merged
// entry's layout dispatch of at most layoutsPerOutline layouts, and tells
// whether it did.
func (g *gen) outline(s *syntax.IfStmt) bool {
	if n := layoutCases(s); n == 0 || n > layoutsPerOutline || !g.outlinable() {
		return false
	}
	sp := &subprog{label: fmt.Sprintf("layouts_%d", len(g.subs.order))}
	c := g.staticSubprog(sp, outlineType(sp.label), func(c *gen) func() {
		g.outlineFrame(c)
		c.stmt(s)
		c.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
		if c.jumpsTo(c.exitLabel) {
			c.mark(c.exitLabel)
			c.emit(asm.Mov.Imm(asm.R0, outlineNext), asm.Return())
		}
		return c.outlinePrologue
	})
	g.maxScr = max(g.maxScr, c.maxScr)
	g.emit(
		asm.Mov.Reg(asm.R1, regCtx),
		asm.Mov.Reg(asm.R2, regScratch),
		asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, int32(g.argsSlot)),
		asm.Call.Label(sp.label),
	)
	if g.exitLabel != labelExit {
		g.emit(asm.JEq.Imm(asm.R0, outlineNext, g.exitLabel))
	}
	g.emit(asm.JNE.Imm(asm.R0, 0, labelExit))
	return true
}

// outlinable tells whether the code being compiled may move to a
// subprogram: a probe's own code (not a function's, not in a try block or
// a loop) whose locals all live in the scratch area and whose arguments
// are copied to the stack.
func (g *gen) outlinable() bool {
	return g.longsInScratch && g.argsSlot != 0 && !g.subprog &&
		len(g.inlined) == 0 && len(g.tries) == 0 && len(g.loops) == 0
}

// outlineFrame gives c, the gen of an outlined subtree, the caller's
// locals, scratch in use and loop counter, and in its own frame the
// arguments' copy where the caller has it.
func (g *gen) outlineFrame(c *gen) {
	c.exitLabel = c.newLabel("next")
	c.locals, c.sprinted, c.longsInScratch = maps.Clone(g.locals), g.sprinted, true
	c.counted, c.actions = g.counted, g.actions
	c.scratch, c.maxScr = g.scratch, g.maxScr
	c.reserveCompatSlot(g.probe.Attach)
}

// outlinePrologue zeroes the subprogram's stack but the words it copies
// the call's arguments and compat bits to from the caller's (R3), copies
// them, and sets R6 and R9.
func (c *gen) outlinePrologue() {
	c.emit(asm.Mov.Imm(asm.R0, 0))
	for off := int16(-8); off >= int16(-c.maxStack); off -= 8 {
		if off < c.argsSlot || off > c.compatSlot {
			c.emit(asm.StoreMem(asm.R10, off, asm.R0, asm.DWord))
		}
	}
	c.copyWords(asm.R10, int(c.argsSlot), asm.R3, 0, int(c.compatSlot-c.argsSlot)+8, asm.R0)
	c.emit(asm.Mov.Reg(regCtx, asm.R1), asm.Mov.Reg(regScratch, asm.R2))
}

// layoutCases is the number of layouts the dispatch subtree s covers, 0
// when s is not one. A leaf sema tightened (its case alone, without the
// comparison) is one.
func layoutCases(s syntax.Stmt) int {
	d, ok := sema.AsDispatchNode(s)
	switch {
	case !ok || d.Subject != sema.SyscallLayoutVar:
		return 0
	case d.Op == "==":
		return 1
	}
	return max(layoutCases(d.Then), 1) + max(layoutCases(d.Else), 1)
}

// outlineType is the BTF prototype of an outlined subtree.
func outlineType(name string) *btf.Func {
	ptr := &btf.Pointer{Target: &btf.Void{}}
	return &btf.Func{Name: name, Linkage: btf.StaticFunc, Type: &btf.FuncProto{Return: intType, Params: []btf.FuncParam{
		{Name: "ctx", Type: ptr}, {Name: "scratch", Type: ptr}, {Name: "args", Type: ptr}}}}
}
