package bpfgen

import (
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// Signed division and modulo, and sign-extending loads, are instructions
// of BPF's fourth ISA version (Linux 6.6); older verifiers refuse them
// ("BPF_ALU uses reserved fields", "BPF_LDX uses reserved fields": Debian
// 12's 6.1). There the code divides magnitudes with the unsigned
// instructions and sets the sign by branches (no register beyond the
// operands), and a load is extended by shifts. Where the kernel has them
// (target.V4ISA) the code is what it was.

// hasV4 tells whether the kernel knows the v4 instructions.
func (m *Module) hasV4() bool { return m.has(target.V4ISA) }

// signedDiv computes dst = dst / src (or dst % src when mod), signed, as
// BPF's signed instructions do (the quotient rounds toward zero, the
// remainder has the dividend's sign, MinInt64 / -1 is MinInt64). src is
// not 0 (the caller checked); without the v4 instructions its sign is
// lost (it holds its magnitude after).
func (g *gen) signedDiv(dst, src asm.Register, mod bool) {
	if g.m.hasV4() {
		if mod {
			g.emit(asm.SMod.Reg(dst, src))
		} else {
			g.emit(asm.SDiv.Reg(dst, src))
		}
		return
	}
	done := g.newLabel("sdiv_done")
	if mod { // the sign is the dividend's
		pos := g.newLabel("smod_pos")
		g.emit(asm.JSGE.Imm(src, 0, pos), asm.Neg.Imm(src, 0))
		g.mark(pos)
		g.divByPositive(dst, src, asm.Mod, done)
		g.mark(done)
		return
	}
	pos := g.newLabel("sdiv_pos")
	g.emit(asm.JSGE.Imm(src, 0, pos), asm.Neg.Imm(src, 0), asm.Neg.Imm(dst, 0)) // a / -b = -a / b
	g.mark(pos)
	g.divByPositive(dst, src, asm.Div, done)
	g.mark(done)
}

// signedDivByPositive computes dst = dst / src, signed, for src > 0.
func (g *gen) signedDivByPositive(dst, src asm.Register) {
	if g.m.hasV4() {
		g.emit(asm.SDiv.Reg(dst, src))
		return
	}
	done := g.newLabel("sdiv_done")
	g.divByPositive(dst, src, asm.Div, done)
	g.mark(done)
}

// divByPositive computes dst = dst op src, op Div or Mod, dst signed and
// src taken as unsigned: the magnitude of dst, then its sign back.
func (g *gen) divByPositive(dst, src asm.Register, op asm.ALUOp, done string) {
	neg := g.newLabel("sdiv_neg")
	g.emit(
		asm.JSLT.Imm(dst, 0, neg),
		op.Reg(dst, src),
		asm.Ja.Label(done),
	)
	g.mark(neg)
	g.emit(asm.Neg.Imm(dst, 0), op.Reg(dst, src), asm.Neg.Imm(dst, 0))
}
