package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// randMax is the widest range randint takes, stap's RANDMAX.
const randMax = 1 << 20

// randint compiles randint(n): bpf_get_prandom_u32() modulo n, in [0, n);
// n above randMax (as an unsigned number) raises stap's "range too wide",
// n = 0 gives 0, as in user-side probes. (The modulo's bias is below
// 2^-12: n is at most 2^20 of 2^32 values.)
func (g *gen) randint(c *syntax.Call) {
	g.long(c.Args[0])
	zero, done := g.newLabel("randint_zero"), g.newLabel("randint_done")
	g.emit(
		asm.JGT.Imm(asm.R0, randMax, g.errorSite("range too wide", c.Pos, false)),
		asm.JEq.Imm(asm.R0, 0, zero),
	)
	slot := g.pushSlot()
	g.emit(
		asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord),
		asm.FnGetPrandomU32.Call(),
		asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord),
		asm.Mod.Reg(asm.R0, asm.R1),
		asm.Ja.Label(done),
	)
	g.popStack(8)
	g.mark(zero)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.mark(done)
}
