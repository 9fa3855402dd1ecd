package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// Kernel buffers as strings: kernel_buffer_quoted(addr, inlen) and
// __kernel_buffer_hex(addr, len), the tapset's packet contents (stap's
// netfilter tapset writes the hex with sprintf("%.*M")). Each reads the
// bytes with one bpf_probe_read_kernel into a scratch buffer, at most as
// many as the result has room for (a fault raises stap's kernel read
// error), then walks them with scan (strfuncs.go), writing at an output
// index kept in a cell and compared with a constant before every write,
// which is what bounds the writes for the verifier.
//
// The quoting is stap's for a buffer (_stp_text_str): printable ASCII as
// it is but `"` and `\`, which are escaped, \a \b \f \n \r \t \v, and
// every other byte, NUL included, as three octal digits \ooo (stap
// writes a valid UTF-8 sequence as \uXXXX; here its bytes are octal).
// The result is cut at MAXSTRINGLEN-1 bytes, ending with `"...` when the
// buffer did not fit.

// readBuffer evaluates addr and len, reads min(len, most) bytes (none
// when len <= 0) from kernel memory at addr into a new scratch buffer,
// and returns it and the cell holding the count.
func (g *gen) readBuffer(c *syntax.Call, most int) (buf value, count int) {
	cells := g.longArgs(c.Args[0], c.Args[1])
	addr, count := cells[0], cells[1]
	buf = g.strSlot(most)
	read, clamped := g.newLabel("buffer_read"), g.newLabel("buffer_clamped")
	g.emit(
		asm.LoadMem(asm.R2, regScratch, int16(count), asm.DWord),
		asm.JSLE.Imm(asm.R2, int32(most), clamped),
		asm.Mov.Imm(asm.R2, int32(most)),
	)
	g.mark(clamped)
	g.emit(
		asm.JSGT.Imm(asm.R2, 0, read),
		asm.Mov.Imm(asm.R2, 0),
		asm.StoreMem(regScratch, int16(count), asm.R2, asm.DWord),
	)
	done := g.newLabel("buffer_done")
	g.emit(asm.Ja.Label(done))
	g.mark(read)
	g.emit(
		asm.StoreMem(regScratch, int16(count), asm.R2, asm.DWord),
		asm.LoadMem(asm.R3, regScratch, int16(addr), asm.DWord),
		asm.Mov.Reg(regRec, asm.R3),
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(buf.off)),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, g.errorSite(tapset.KernelReadFault, c.Pos, true)),
	)
	g.mark(done)
	return buf, count
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
// hex digits a byte, as the runtime's %M writes them.
func (g *gen) kernelBufferHex(c *syntax.Call) value {
	dst := g.strSlot(g.m.maxStr)
	mark := g.scratchMark()
	buf, count := g.readBuffer(c, (g.m.maxStr-1)/2)
	done := g.newLabel("hex_done")
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
	fin := g.newLabel("hex_end")
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

// textEscapes are the bytes written as a backslash and a letter.
var textEscapes = []struct{ b, letter byte }{
	{'"', '"'}, {'\\', '\\'}, {'\a', 'a'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}, {'\v', 'v'},
}

// kernelBufferQuoted compiles kernel_buffer_quoted(addr, inlen).
func (g *gen) kernelBufferQuoted(c *syntax.Call) value {
	dst := g.strSlot(g.m.maxStr)
	mark := g.scratchMark()
	end := dst.width - 2 // the closing quote's index when the text fills the room
	buf, count := g.readBuffer(c, end)
	out := g.allocScratch(8)
	g.setCell(out, 1)
	g.emit(asm.StoreImm(regScratch, int16(dst.off), '"', asm.Byte))
	done, cut, next, fin := g.newLabel("quoted_done"), g.newLabel("quoted_cut"), g.newLabel("quoted_next"), g.newLabel("quoted_end")
	g.bufferScan(buf, count, done, func() {
		escaped, octal := g.newLabel("quoted_escaped"), g.newLabel("quoted_octal")
		g.emit(asm.LoadMem(asm.R1, regScratch, int16(out), asm.DWord))
		for _, e := range textEscapes {
			g.emit(asm.Mov.Imm(asm.R4, int32(e.letter)), asm.JEq.Imm(asm.R2, int32(e.b), escaped))
		}
		g.emit(asm.JLT.Imm(asm.R2, ' ', octal), asm.JGT.Imm(asm.R2, '~', octal))
		g.quotedWrite(dst, out, end, cut, next, asm.R2)
		g.mark(escaped)
		g.emit(asm.Mov.Imm(asm.R5, '\\'))
		g.quotedWrite(dst, out, end, cut, next, asm.R5, asm.R4)
		g.mark(octal)
		g.emit(asm.Mov.Imm(asm.R5, '\\'), asm.Mov.Reg(asm.R4, asm.R2), asm.RSh.Imm(asm.R4, 6), asm.Add.Imm(asm.R4, '0'),
			asm.Mov.Reg(asm.R3, asm.R2), asm.RSh.Imm(asm.R3, 3), asm.And.Imm(asm.R3, 7), asm.Add.Imm(asm.R3, '0'),
			asm.And.Imm(asm.R2, 7), asm.Add.Imm(asm.R2, '0'))
		g.quotedWrite(dst, out, end, cut, next, asm.R5, asm.R4, asm.R3, asm.R2)
		g.mark(next)
	})
	g.mark(cut)
	for i, b := range []byte(`"...`) {
		g.emit(asm.StoreImm(regScratch, int16(dst.off+end-3+i), int64(b), asm.Byte))
	}
	g.emit(asm.StoreImm(regScratch, int16(dst.off+end+1), 0, asm.Byte), asm.Ja.Label(fin))
	g.mark(done)
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(out), asm.DWord),
		asm.JGT.Imm(asm.R1, int32(end), cut), // never: the bound the verifier needs
		asm.Add.Reg(asm.R1, regScratch),
		asm.StoreImm(asm.R1, int16(dst.off), '"', asm.Byte),
		asm.StoreImm(asm.R1, int16(dst.off+1), 0, asm.Byte),
	)
	g.mark(fin)
	g.scratchRelease(mark)
	return dst
}

// quotedWrite writes the bytes in regs at the output index (in R1, from
// cell out) of dst and moves the index past them, then jumps to next;
// it jumps to cut instead when they would pass end.
func (g *gen) quotedWrite(dst value, out, end int, cut, next string, regs ...asm.Register) {
	g.emit(asm.JGT.Imm(asm.R1, int32(end-len(regs)), cut),
		asm.Mov.Reg(asm.R0, asm.R1), asm.Add.Imm(asm.R0, int32(len(regs))),
		asm.StoreMem(regScratch, int16(out), asm.R0, asm.DWord),
		asm.Add.Reg(asm.R1, regScratch))
	for i, r := range regs {
		g.emit(asm.StoreMem(asm.R1, int16(dst.off+i), r, asm.Byte))
	}
	g.emit(asm.Ja.Label(next))
}
