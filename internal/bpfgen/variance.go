package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// @variance in a kernel probe. Each CPU's partial keeps its Welford terms
// (count, avg_s, variance_s, scaled by 2^shift: stats.go), and the program
// combines them over every possible CPU exactly as user space does
// (format.Stat), so a kernel probe prints what an end probe would:
//
//   - a global statistic as format.Total: the count and sum first (as
//     @count reads them), avg_s = (sum << shift) / count, then a second
//     pass adds each partial's count·(avg_s_i − avg_s)² + (count_i − 1)·
//     variance_s_i, divided by count − 1;
//   - an element of a statistics array as format.Merge folds its partials
//     in CPU order: the first non-empty partial is taken as it is, each
//     next one combined with the total-variance formula.
//
// The result is variance_s >> 2·shift; an empty statistic raises stap's
// empty aggregate error. Partials are read while their CPUs may update
// them, as @count's are (statread.go).

// Words of the pairwise merge's state on the stack: count, sum, avg_s,
// variance_s, then accCPU's word, the CPU.
const (
	mergeCount = 8 * iota
	mergeSum
	mergeAvg
	mergeVar
)

// variance leaves @variance(gl[k]) in R0 (at: the operator).
func (g *gen) variance(gl *Global, k keyAddr, ncpu int, array bool, at syntax.Pos) {
	st := g.pushStack(accSize)
	g.readPartials(gl, func() {
		if array {
			g.mergeVariance(gl, k, ncpu, st)
		} else {
			g.totalVariance(gl, k, ncpu, st)
		}
	})
	g.emit(
		asm.LoadMem(asm.R1, asm.R10, st+mergeCount, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, g.errorSite(tapset.MsgEmptyAggregate, at, false)),
		asm.LoadMem(asm.R0, asm.R10, st+mergeVar, asm.DWord),
		asm.ArSh.Imm(asm.R0, int32(2*gl.Stat.Shift)),
	)
}

// totalVariance leaves in the state at st the count and variance_s of
// gl[k] as format.Total combines its partials.
func (g *gen) totalVariance(gl *Global, k keyAddr, ncpu int, st int16) {
	acc := g.mergeCPUs(gl, k, ncpu)
	ld := func(r asm.Register, base int16, off int16) asm.Instruction {
		return asm.LoadMem(r, asm.R10, base+off, asm.DWord)
	}
	g.emit(
		ld(asm.R1, acc, accCount), asm.StoreMem(asm.R10, st+mergeCount, asm.R1, asm.DWord),
		ld(asm.R1, acc, accSum), asm.StoreMem(asm.R10, st+mergeSum, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R10, st+mergeVar, asm.R1, asm.DWord), // the spread, until divided
		asm.StoreMem(asm.R10, st+accCPU, asm.R1, asm.DWord),
	)
	g.averageOf(st, gl.Stat.Shift)
	top, next := g.newLabel("var_cpu"), g.newLabel("var_next")
	g.mark(top)
	g.percpuLookup(gl.Ref, k, st)
	g.emit(
		asm.JEq.Imm(asm.R0, 0, next),
		asm.LoadMem(asm.R5, asm.R0, statCount, asm.DWord), asm.JEq.Imm(asm.R5, 0, next),
		asm.LoadMem(asm.R1, asm.R0, statAvgS, asm.DWord), ld(asm.R2, st, mergeAvg),
		asm.LoadMem(asm.R4, asm.R0, statVariance, asm.DWord),
	)
	g.spreadTerm(asm.R1, asm.R2, asm.R5, asm.R4)
	g.emit(ld(asm.R2, st, mergeVar), asm.Add.Reg(asm.R1, asm.R2), asm.StoreMem(asm.R10, st+mergeVar, asm.R1, asm.DWord))
	g.mark(next)
	g.nextCPU(st, ncpu, top)
	g.emit(ld(asm.R0, st, mergeVar), ld(asm.R1, st, mergeCount), asm.Sub.Imm(asm.R1, 1))
	g.div64(st + mergeVar)
	g.popStack(accSize) // mergeCPUs's accumulator
}

// mergeVariance leaves in the state at st the count and variance_s of
// gl[k] as format.Merge folds its partials in CPU order.
func (g *gen) mergeVariance(gl *Global, k keyAddr, ncpu int, st int16) {
	g.emit(asm.Mov.Imm(asm.R1, 0))
	for off := int16(0); off < accSize; off += 8 {
		g.emit(asm.StoreMem(asm.R10, st+off, asm.R1, asm.DWord))
	}
	part, n1, avg1 := g.pushSlot(), g.pushSlot(), g.pushSlot()
	ld := func(r asm.Register, off int16) asm.Instruction { return asm.LoadMem(r, asm.R10, off, asm.DWord) }
	pw := func(r asm.Register, off int16) asm.Instruction {
		return asm.LoadMem(r, asm.R0, off, asm.DWord)
	}
	top, next, combine := g.newLabel("var_cpu"), g.newLabel("var_next"), g.newLabel("var_combine")
	g.mark(top)
	g.percpuLookup(gl.Ref, k, st)
	g.emit(asm.JEq.Imm(asm.R0, 0, next), pw(asm.R1, statCount), asm.JEq.Imm(asm.R1, 0, next),
		asm.StoreMem(asm.R10, part, asm.R0, asm.DWord),
		ld(asm.R2, st+mergeCount), asm.JNE.Imm(asm.R2, 0, combine))
	for _, w := range []struct{ from, to int16 }{{statCount, mergeCount}, {statSum, mergeSum}, {statAvgS, mergeAvg}, {statVariance, mergeVar}} {
		g.emit(pw(asm.R1, w.from), asm.StoreMem(asm.R10, st+w.to, asm.R1, asm.DWord))
	}
	g.emit(asm.Ja.Label(next))
	g.mark(combine)
	g.emit(
		asm.StoreMem(asm.R10, n1, asm.R2, asm.DWord),
		ld(asm.R3, st+mergeAvg), asm.StoreMem(asm.R10, avg1, asm.R3, asm.DWord),
		asm.Add.Reg(asm.R2, asm.R1), asm.StoreMem(asm.R10, st+mergeCount, asm.R2, asm.DWord),
		pw(asm.R1, statSum), ld(asm.R2, st+mergeSum), asm.Add.Reg(asm.R1, asm.R2), asm.StoreMem(asm.R10, st+mergeSum, asm.R1, asm.DWord),
	)
	g.averageOf(st, gl.Stat.Shift)
	// spread = n1·(avg1 − avg)² + (n1 − 1)·var + pc·(pavg − avg)² + (pc − 1)·pvar
	g.emit(ld(asm.R1, avg1), ld(asm.R2, st+mergeAvg), ld(asm.R5, n1), ld(asm.R4, st+mergeVar))
	g.spreadTerm(asm.R1, asm.R2, asm.R5, asm.R4)
	g.emit(asm.StoreMem(asm.R10, n1, asm.R1, asm.DWord), ld(asm.R0, part),
		pw(asm.R1, statAvgS), ld(asm.R2, st+mergeAvg), pw(asm.R5, statCount), pw(asm.R4, statVariance))
	g.spreadTerm(asm.R1, asm.R2, asm.R5, asm.R4)
	g.emit(ld(asm.R0, n1), asm.Add.Reg(asm.R0, asm.R1), ld(asm.R1, st+mergeCount), asm.Sub.Imm(asm.R1, 1))
	g.div64(st + mergeVar)
	g.mark(next)
	g.nextCPU(st, ncpu, top)
	g.popStack(24)
}

// averageOf stores at st's mergeAvg (sum << shift) / count of the state at
// st (count > 0).
func (g *gen) averageOf(st int16, shift uint) {
	g.emit(
		asm.LoadMem(asm.R0, asm.R10, st+mergeSum, asm.DWord), asm.LSh.Imm(asm.R0, int32(shift)),
		asm.LoadMem(asm.R1, asm.R10, st+mergeCount, asm.DWord),
	)
	g.div64(st + mergeAvg)
}

// spreadTerm leaves in avg n·(avg − total)² + (n − 1)·v. Clobbers total,
// n and v.
func (g *gen) spreadTerm(avg, total, n, v asm.Register) {
	g.emit(
		asm.Sub.Reg(avg, total), asm.Mul.Reg(avg, avg), asm.Mul.Reg(avg, n),
		asm.Sub.Imm(n, 1), asm.Mul.Reg(v, n), asm.Add.Reg(avg, v),
	)
}

// div64 stores at stack offset dst R0 / R1 as format's div64: 0 when R1
// is 0, else the signed quotient.
func (g *gen) div64(dst int16) {
	zero, done := g.newLabel("div64_zero"), g.newLabel("div64_done")
	g.emit(asm.JEq.Imm(asm.R1, 0, zero))
	g.signedDiv(asm.R0, asm.R1, false)
	g.emit(asm.Ja.Label(done))
	g.mark(zero)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.mark(done)
	g.emit(asm.StoreMem(asm.R10, dst, asm.R0, asm.DWord))
}
