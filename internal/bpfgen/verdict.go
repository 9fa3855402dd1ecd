package bpfgen

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// Verdicts (attach.Point.Verdict). A program whose return value decides
// what becomes of the event (a netfilter hook's packet: NF_DROP or
// NF_ACCEPT) keeps the verdict in a stack slot of its own, set to the
// default once the prologue has zeroed the stack. The argument whose
// location is the verdict ($verdict) reads the slot; assigning it stores
// the new value after checking that the hook takes it (else a run-time
// error, and the verdict stays); the exit returns the slot. The exits
// taken before the slot is set (after exit(), the target filter) return
// the default.

// reserveVerdictSlot gives a program on a point with a verdict its slot.
func (g *gen) reserveVerdictSlot(a *attach.Point) {
	if a != nil && a.Verdict != nil {
		g.verdict = a.Verdict
		g.verdictSlot = g.pushSlot()
	}
}

// initVerdict sets the verdict to the default (in the prologue, once the
// stack is zeroed).
func (g *gen) initVerdict() {
	if g.verdict != nil {
		g.emit(asm.Mov.Imm(asm.R0, g.verdict.Default), asm.StoreMem(asm.R10, g.verdictSlot, asm.R0, asm.DWord))
	}
}

// returnVerdict emits the exit of a run: the verdict from its slot after
// labelExit, the default from labelDone on.
func (g *gen) returnVerdict() {
	if g.verdict == nil {
		g.mark(labelDone)
		g.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
		return
	}
	g.emit(asm.LoadMem(asm.R0, asm.R10, g.verdictSlot, asm.DWord),
		asm.JGT.Imm(asm.R0, g.verdict.Max, labelDone), // never taken: the verifier wants the bound
		asm.Return())
	g.mark(labelDone)
	g.emit(asm.Mov.Imm(asm.R0, g.verdict.Default), asm.Return())
}

// loadVerdict leaves the verdict so far in R0.
func (g *gen) loadVerdict() {
	g.emit(asm.LoadMem(asm.R0, asm.R10, g.verdictSlot, asm.DWord))
}

// updateVerdict compiles `$verdict op= rhs` (op "" for a plain store,
// $verdict++ and -- too), leaving the new value in R0.
func (g *gen) updateVerdict(op string, rhs syntax.Expr, at syntax.Pos) {
	g.long(rhs)
	if op != "" {
		g.emit(asm.Mov.Reg(asm.R1, asm.R0))
		g.loadVerdict()
		g.arith(op, at)
	}
	bad := g.errorSite(fmt.Sprintf("verdict out of range: this hook's program returns 0 to %d", g.verdict.Max), at, false)
	g.emit(asm.JGT.Imm(asm.R0, g.verdict.Max, bad), // unsigned: a negative value too
		asm.StoreMem(asm.R10, g.verdictSlot, asm.R0, asm.DWord))
}

// isVerdict tells whether x is the argument whose location is the
// program's verdict.
func (g *gen) isVerdict(x syntax.Expr) bool {
	acc := g.m.prog.Targets[x]
	if g.verdict == nil || acc == nil || acc.Param < 0 || acc.Path != nil {
		return false
	}
	return g.ownProbe().Attach.Args[acc.Param].Loc.Verdict
}
