package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// tokenize(input, delim) in kernel probes.
//
// stap keeps the string being split in its per-CPU probe context between
// calls: a non-empty input replaces it, an empty one goes on where the last
// call stopped, skipping empty tokens. Here that state is a map of the
// program's own (TokenizeMap, per CPU): the string (MAXSTRINGLEN bytes)
// after a word holding the index where the next token starts, negative
// once the string is used up. It is per program, so per probe handler and
// the functions it calls: the kernel never runs a program inside itself,
// so a program that interrupts another on the same CPU (programs nest:
// nesting.go) has its own state and the split it interrupted goes on
// undisturbed. (stap never runs a handler inside another either: it skips
// the nested one.) A sleepable uprobe program that sleeps between two
// calls (a user string faulted in: sleepable.go) may see another task run
// the same program on its CPU meanwhile, as its scratch area may.
//
// A call copies the state's string into the scratch area (or the input,
// which becomes the state's), walks it from the kept index with scan
// (strfuncs.go), testing each byte against a 256-bit set of delim's bytes
// built first (four cells: no loop in a loop for the verifier), and keeps
// the index after the token it returns. The map's zero value is a string
// used up: tokenize("", delim) before any input returns "".

// TokenizeMap is the name under which a program references its tokenize
// state.
const TokenizeMap = "tokenize"

// tokenizeMap is the per-CPU map of a program's tokenize state.
func (g *gen) tokenizeMap() Map {
	return Map{TokenizeMap, perCPUArray(TokenizeMap, uint32(8+g.m.maxStr), 1)}
}

// usesTokenize tells whether insns reference the tokenize state.
func usesTokenize(insns asm.Instructions) bool {
	for _, ins := range insns {
		if ins.Reference() == TokenizeMap {
			return true
		}
	}
	return false
}

// tokenize compiles tokenize(input, delim).
func (g *gen) tokenize(c *syntax.Call) value {
	dst := g.strSlot(g.m.maxStr)
	mark := g.scratchMark()
	in, delim := g.str(c.Args[0]), g.str(c.Args[1])
	set := g.byteSet(delim)
	buf := g.strSlot(g.m.maxStr)
	at, from := g.allocScratch(8), g.allocScratch(8)
	kept, walk := g.newLabel("tokenize_kept"), g.newLabel("tokenize_walk")
	empty, token, done := g.newLabel("tokenize_empty"), g.newLabel("tokenize_token"), g.newLabel("tokenize_done")
	g.emit(asm.LoadMem(asm.R1, regScratch, int16(in.off), asm.Byte), asm.JEq.Imm(asm.R1, 0, kept))
	g.copyStr(buf, in)
	g.setCell(at, 0)
	g.tokenizeState(empty)
	g.emit(
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Add.Imm(asm.R1, 8),
		asm.Mov.Imm(asm.R2, int32(g.m.maxStr)),
		asm.Mov.Reg(asm.R3, regScratch),
		asm.Add.Imm(asm.R3, int32(buf.off)),
		asm.FnProbeReadKernel.Call(),
		asm.Ja.Label(walk),
	)
	g.mark(kept)
	g.tokenizeState(empty)
	g.emit(
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.StoreMem(regScratch, int16(at), asm.R1, asm.DWord),
		asm.JSLT.Imm(asm.R1, 0, empty),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Add.Imm(asm.R3, 8),
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(buf.off)),
		asm.Mov.Imm(asm.R2, int32(g.m.maxStr)),
		asm.FnProbeReadKernel.Call(),
	)
	g.mark(walk)
	g.emit(asm.LoadMem(asm.R1, regScratch, int16(at), asm.DWord), asm.StoreMem(regScratch, int16(from), asm.R1, asm.DWord))
	g.tokenizeWalk(buf, set, at, from, token, empty)
	g.mark(token)
	g.tokenCopy(dst, buf, at, from, empty)
	g.emit(asm.Ja.Label(done))
	g.mark(empty)
	g.emit(asm.StoreImm(regScratch, int16(dst.off), 0, asm.Byte))
	g.mark(done)
	g.scratchRelease(mark)
	return dst
}

// tokenizeWalk walks buf from the index in cell at: a delimiter after a
// token (which starts at the index in cell from) jumps to token with the
// state's index after the delimiter, one before any (an empty token) moves
// from past it; the string's end jumps to token when a token ends there,
// else to empty, the state's index used up either way.
func (g *gen) tokenizeWalk(buf value, set, at, from int, token, empty string) {
	end, delimiter, keep := g.newLabel("tokenize_end"), g.newLabel("tokenize_delimiter"), g.newLabel("tokenize_keep")
	g.scan(at, buf.width, end, func(next string) {
		g.loadByte(asm.R2, asm.R1, buf)
		g.emit(asm.JEq.Imm(asm.R2, 0, end))
		g.inByteSet(set, delimiter)
		g.emit(asm.Ja.Label(next))
		g.mark(delimiter)
		g.emit(
			asm.LoadMem(asm.R1, regScratch, int16(at), asm.DWord),
			asm.Mov.Reg(asm.R2, asm.R1),
			asm.Add.Imm(asm.R2, 1),
			asm.LoadMem(asm.R3, regScratch, int16(from), asm.DWord),
			asm.JGT.Reg(asm.R1, asm.R3, keep),
			asm.StoreMem(regScratch, int16(from), asm.R2, asm.DWord),
		)
	})
	g.mark(keep)
	g.keepIndex(asm.R2, empty)
	g.emit(asm.Ja.Label(token))
	g.mark(end)
	g.emit(asm.Mov.Imm(asm.R2, -1))
	g.keepIndex(asm.R2, empty)
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(at), asm.DWord),
		asm.LoadMem(asm.R3, regScratch, int16(from), asm.DWord),
		asm.JGT.Reg(asm.R1, asm.R3, token),
		asm.Ja.Label(empty),
	)
}

// keepIndex stores the index in r (R2 to R5) as the state's.
func (g *gen) keepIndex(r asm.Register, miss string) {
	slot := g.pushSlot()
	g.emit(asm.StoreMem(asm.R10, slot, r, asm.DWord))
	g.tokenizeState(miss)
	g.emit(asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord), asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord))
	g.popStack(8)
}

// tokenizeState leaves the address of this CPU's tokenize state in R0
// (jumping to miss, never taken, when the lookup fails).
func (g *gen) tokenizeState(miss string) {
	key := g.pushSlot()
	g.emit(emitLookupIndex(TokenizeMap, key, 0, miss)...)
	g.popStack(8)
}

// tokenCopy copies the token of buf between the indexes in cells from and
// at into dst (the bounds the verifier needs jump to never).
func (g *gen) tokenCopy(dst, buf value, at, from int, never string) {
	g.emit(
		asm.LoadMem(asm.R3, regScratch, int16(from), asm.DWord),
		asm.JGE.Imm(asm.R3, int32(buf.width), never),
		asm.LoadMem(asm.R2, regScratch, int16(at), asm.DWord),
		asm.Sub.Reg(asm.R2, asm.R3),
		asm.JGE.Imm(asm.R2, int32(dst.width), never),
		asm.Add.Imm(asm.R2, 1), // the NUL's byte
		asm.Add.Reg(asm.R3, regScratch),
		asm.Add.Imm(asm.R3, int32(buf.off)),
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(dst.off)),
		asm.FnProbeReadKernelStr.Call(),
	)
}

// byteSet builds in four new cells the set of the bytes of string s, a
// bit for each.
func (g *gen) byteSet(s value) int {
	set, idx := g.allocScratch(32), g.allocScratch(8)
	for i := range 4 {
		g.setCell(set+8*i, 0)
	}
	g.setCell(idx, 0)
	done := g.newLabel("byteset_done")
	g.scan(idx, s.width, done, func(string) {
		g.loadByte(asm.R2, asm.R1, s)
		g.emit(asm.JEq.Imm(asm.R2, 0, done))
		g.byteBit()
		g.emit(
			asm.LoadMem(asm.R4, asm.R3, int16(set), asm.DWord),
			asm.Or.Reg(asm.R4, asm.R5),
			asm.StoreMem(asm.R3, int16(set), asm.R4, asm.DWord),
		)
	})
	g.mark(done)
	return set
}

// inByteSet jumps to member when the byte in R2 is in the set at cell set.
func (g *gen) inByteSet(set int, member string) {
	g.byteBit()
	g.emit(asm.LoadMem(asm.R4, asm.R3, int16(set), asm.DWord), asm.And.Reg(asm.R4, asm.R5), asm.JNE.Imm(asm.R4, 0, member))
}

// byteBit leaves, for the byte in R2, the scratch address of its cell of
// a set (less the set's offset) in R3 and its bit in R5.
func (g *gen) byteBit() {
	g.emit(
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.RSh.Imm(asm.R3, 6),
		asm.LSh.Imm(asm.R3, 3),
		asm.Add.Reg(asm.R3, regScratch),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.And.Imm(asm.R4, 63),
		asm.Mov.Imm(asm.R5, 1),
		asm.LSh.Reg(asm.R5, asm.R4),
	)
}
