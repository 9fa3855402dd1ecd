package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// Kernel buffers as strings: kernel_buffer_quoted(addr, inlen[, outlen])
// (quoting.go) and __kernel_buffer_hex(addr, len), the tapset's packet
// contents (stap's netfilter tapset writes the hex with sprintf("%.*M")).
// Each reads the bytes with one bpf_probe_read_kernel (or _user) into a
// scratch buffer, at most as many as the result has room for, then walks
// them with scan (strfuncs.go). The state of the walk lives in scratch
// cells, compared with constants before every write, which is what bounds
// the writes for the verifier and keeps its work linear (sprintf.go says
// why). An inlen <= 0 reads MAXSTRINGLEN-1 bytes to quote, as the runtime
// does.

// readBuffer reads min(len, most) bytes (none, or most, when len <= 0:
// ifNone) with read (bpf_probe_read_kernel or _user) from memory at addr
// (addr and len in their cells) into a new scratch buffer, jumping to
// fault, with the address in regRec, when they cannot be read. It returns
// the buffer; len's cell holds the count read.
func (g *gen) readBuffer(addr, count int, read asm.BuiltinFunc, most, ifNone int, fault string) (buf value) {
	buf = g.strSlot(most)
	positive, clamped, done := g.newLabel("buffer_positive"), g.newLabel("buffer_clamped"), g.newLabel("buffer_read")
	g.emit(
		asm.LoadMem(asm.R2, regScratch, int16(count), asm.DWord),
		asm.JSGT.Imm(asm.R2, 0, positive),
		asm.Mov.Imm(asm.R2, int32(ifNone)),
	)
	g.mark(positive)
	g.emit(
		asm.JSLE.Imm(asm.R2, int32(most), clamped),
		asm.Mov.Imm(asm.R2, int32(most)),
	)
	g.mark(clamped)
	g.emit(
		asm.StoreMem(regScratch, int16(count), asm.R2, asm.DWord),
		asm.JEq.Imm(asm.R2, 0, done),
		asm.LoadMem(asm.R3, regScratch, int16(addr), asm.DWord),
		asm.Mov.Reg(regRec, asm.R3),
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(buf.off)),
		read.Call(),
		asm.JNE.Imm(asm.R0, 0, fault),
	)
	g.mark(done)
	return buf
}

// bufferScan walks the count bytes of buf (readBuffer's) with the index
// in a new cell, leaving each byte in R2 for body, then jumps to done.
func (g *gen) bufferScan(buf value, count int, done string, body func()) {
	idx := g.allocScratch(8)
	g.setCell(idx, 0)
	g.scan(idx, buf.width, done, func(string) {
		g.emit(
			asm.LoadMem(asm.R2, regScratch, int16(count), asm.DWord),
			asm.JGE.Reg(asm.R1, asm.R2, done),
		)
		g.loadByte(asm.R2, asm.R1, buf)
		body()
	})
}

// kernelBufferHex compiles __kernel_buffer_hex(addr, len): two lowercase
// hex digits a byte, as the runtime's %M writes them; a fault raises
// stap's kernel read error.
func (g *gen) kernelBufferHex(c *syntax.Call) value {
	dst := g.strSlot(g.m.maxStr)
	mark := g.scratchMark()
	cells := g.longArgs(c.Args[0], c.Args[1])
	count := cells[1]
	buf := g.readBuffer(cells[0], count, asm.FnProbeReadKernel, (g.m.maxStr-1)/2, 0, g.errorSite(tapset.KernelReadFault, c.Pos, true))
	done, fin := g.newLabel("hex_done"), g.newLabel("hex_end")
	g.bufferScan(buf, count, done, func() {
		g.emit(
			asm.LSh.Imm(asm.R1, 1),
			asm.Add.Reg(asm.R1, regScratch),
			asm.Mov.Reg(asm.R3, asm.R2),
			asm.RSh.Imm(asm.R3, 4),
		)
		g.hexDigit(asm.R3)
		g.emit(asm.StoreMem(asm.R1, int16(dst.off), asm.R3, asm.Byte), asm.And.Imm(asm.R2, 15))
		g.hexDigit(asm.R2)
		g.emit(asm.StoreMem(asm.R1, int16(dst.off+1), asm.R2, asm.Byte))
	})
	g.mark(done)
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(count), asm.DWord),
		asm.LSh.Imm(asm.R1, 1),
		asm.JGT.Imm(asm.R1, int32(dst.width-1), fin), // never: the bound the verifier needs
		asm.Add.Reg(asm.R1, regScratch),
		asm.StoreImm(asm.R1, int16(dst.off), 0, asm.Byte),
	)
	g.mark(fin)
	g.scratchRelease(mark)
	return dst
}

// hexDigit turns the nibble in r into its lowercase hex digit.
func (g *gen) hexDigit(r asm.Register) {
	digit := g.newLabel("hex_digit")
	g.emit(asm.Add.Imm(r, '0'), asm.JLE.Imm(r, '9', digit), asm.Add.Imm(r, 'a'-'0'-10))
	g.mark(digit)
}
