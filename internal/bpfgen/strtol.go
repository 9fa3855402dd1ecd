package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// strtol(str, base) in a kernel probe, as the interpreter computes it: an
// optional '-', then with base 0 a "0x" prefix (followed by a hex digit)
// means 16, a leading '0' 8, anything else 10; base 16 skips such a
// prefix too. Digits are read until the first that is not one of base
// (a letter is 10 and up, case aside), the value wrapping as a u64. The
// digits are read by a scan (strfuncs.go), each byte's index checked
// against the string's width.

// strtol compiles strtol(str, base).
func (g *gen) strtol(c *syntax.Call) {
	mark := g.scratchMark()
	s := g.str(c.Args[0])
	base := g.longArgs(c.Args[1])[0]
	idx, acc, neg := g.allocScratch(8), g.allocScratch(8), g.allocScratch(8)
	unsigned, noPrefix, digits, done := g.newLabel("strtol_abs"), g.newLabel("strtol_noprefix"),
		g.newLabel("strtol_digits"), g.newLabel("strtol_done")
	hex, chosen, positive := g.newLabel("strtol_hex"), g.newLabel("strtol_base"), g.newLabel("strtol_positive")
	g.setCell(idx, 0)
	g.setCell(acc, 0)
	g.setCell(neg, 0)
	if s.width > SymTokenLen {
		g.sourceTokenAddress(s, idx, acc, done)
	}
	g.byteAtCell(asm.R2, idx, 0, s)
	g.emit(asm.JNE.Imm(asm.R2, '-', unsigned))
	g.setCell(neg, 1)
	g.setCell(idx, 1)
	g.mark(unsigned)
	g.hexPrefix(s, idx, noPrefix)
	g.emit(
		asm.LoadMem(asm.R3, regScratch, int16(base), asm.DWord),
		asm.JEq.Imm(asm.R3, 0, hex),
		asm.JNE.Imm(asm.R3, 16, digits),
	)
	g.mark(hex)
	g.setCell(base, 16)
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(idx), asm.DWord),
		asm.Add.Imm(asm.R1, 2),
		asm.StoreMem(regScratch, int16(idx), asm.R1, asm.DWord),
		asm.Ja.Label(digits),
	)
	g.mark(noPrefix)
	g.emit(
		asm.LoadMem(asm.R3, regScratch, int16(base), asm.DWord),
		asm.JNE.Imm(asm.R3, 0, digits),
		asm.Mov.Imm(asm.R3, 10),
	)
	g.byteAtCell(asm.R2, idx, 0, s)
	g.emit(asm.JNE.Imm(asm.R2, '0', chosen), asm.Mov.Imm(asm.R3, 8))
	g.mark(chosen)
	g.emit(asm.StoreMem(regScratch, int16(base), asm.R3, asm.DWord))
	g.mark(digits)
	g.scan(idx, s.width, done, func(string) {
		g.loadByte(asm.R2, asm.R1, s)
		g.digitValue(asm.R2)
		g.emit(
			asm.LoadMem(asm.R3, regScratch, int16(base), asm.DWord),
			asm.JSGE.Reg(asm.R2, asm.R3, done),
			asm.LoadMem(asm.R4, regScratch, int16(acc), asm.DWord),
			asm.Mul.Reg(asm.R4, asm.R3),
			asm.Add.Reg(asm.R4, asm.R2),
			asm.StoreMem(regScratch, int16(acc), asm.R4, asm.DWord),
		)
	})
	g.mark(done)
	g.emit(
		asm.LoadMem(asm.R0, regScratch, int16(acc), asm.DWord),
		asm.LoadMem(asm.R1, regScratch, int16(neg), asm.DWord),
		asm.JEq.Imm(asm.R1, 0, positive),
		asm.Neg.Imm(asm.R0, 0),
	)
	g.mark(positive)
	g.scratchRelease(mark)
}

// sourceTokenAddress makes strtol of a symbol token of a source form
// (usymfile, usymline, usymfileline, which user space resolves from the
// file's DWARF and the kernel cannot) the token's address, stap's value
// for an address without source lines: a test of the value in the kernel
// (fileline-profile.stp's strtol(usymfileline(a), 16)) takes the source
// line for unknown and falls back, while the value printed or kept is the
// line. Decoded with idx 0, into acc, then to done.
func (g *gen) sourceTokenAddress(s value, idx, acc int, done string) {
	source, other := g.newLabel("strtol_source_token"), g.newLabel("strtol_no_token")
	g.byteAtCell(asm.R2, idx, 0, s)
	g.emit(asm.JNE.Imm(asm.R2, tokenMark, other))
	g.byteAtCell(asm.R2, idx, 1, s)
	g.emit(
		asm.JEq.Imm(asm.R2, int32(SymFile), source),
		asm.JEq.Imm(asm.R2, int32(SymLine), source),
		asm.JNE.Imm(asm.R2, int32(SymFileLine), other),
	)
	g.mark(source)
	for i := symAddrDigits - 1; i >= 0; i-- { // 6-bit digits offset by '@', low digits first
		g.byteAtCell(asm.R2, idx, symAddrAt+i, s)
		g.emit(
			asm.Sub.Imm(asm.R2, '@'),
			asm.And.Imm(asm.R2, 63),
			asm.LoadMem(asm.R3, regScratch, int16(acc), asm.DWord),
			asm.LSh.Imm(asm.R3, 6),
			asm.Or.Reg(asm.R3, asm.R2),
			asm.StoreMem(regScratch, int16(acc), asm.R3, asm.DWord),
		)
	}
	g.emit(asm.Ja.Label(done))
	g.mark(other)
}

// hexPrefix jumps to none unless string s has "0x" or "0X" and a hex
// digit at the index in scratch cell idx.
func (g *gen) hexPrefix(s value, idx int, none string) {
	g.byteAtCell(asm.R2, idx, 0, s)
	g.emit(asm.JNE.Imm(asm.R2, '0', none))
	g.byteAtCell(asm.R2, idx, 1, s)
	g.emit(asm.Or.Imm(asm.R2, 0x20), asm.JNE.Imm(asm.R2, 'x', none))
	g.byteAtCell(asm.R2, idx, 2, s)
	g.digitValue(asm.R2)
	g.emit(asm.JGE.Imm(asm.R2, 16, none))
}

// byteAtCell loads into dst the byte of string s at the index in scratch
// cell idx plus plus, 0 past s's width. Clobbers R1.
func (g *gen) byteAtCell(dst asm.Register, idx, plus int, s value) {
	past := g.newLabel("byte_past")
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(idx), asm.DWord),
		asm.Add.Imm(asm.R1, int32(plus)),
		asm.Mov.Imm(dst, 0),
		asm.JGE.Imm(asm.R1, int32(s.width), past),
	)
	g.loadByte(dst, asm.R1, s)
	g.mark(past)
}

// digitValue turns the byte in r into its value as a digit: 0-9 for
// '0'-'9', 10 and up for a letter, 99 for anything else.
func (g *gen) digitValue(r asm.Register) {
	letter, done := g.newLabel("digit_letter"), g.newLabel("digit")
	g.emit(
		asm.Sub.Imm(r, '0'),
		asm.JGE.Imm(r, 10, letter),
		asm.Ja.Label(done),
	)
	g.mark(letter)
	g.emit(
		asm.Add.Imm(r, '0'),
		asm.Or.Imm(r, 0x20),
		asm.Sub.Imm(r, 'a'),
		asm.Add.Imm(r, 10),
		asm.JLT.Imm(r, 10+26, done),
		asm.Mov.Imm(r, 99),
	)
	g.mark(done)
}
