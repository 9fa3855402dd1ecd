package bpfgen

import (
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// Kernel buffers as strings: kernel_buffer_quoted(addr, inlen) and
// __kernel_buffer_hex(addr, len), the tapset's packet contents (stap's
// netfilter tapset writes the hex with sprintf("%.*M")). Each reads the
// bytes with one bpf_probe_read_kernel into a scratch buffer, at most as
// many as the result has room for, then walks them with scan
// (strfuncs.go). The state of the walk lives in scratch cells, compared
// with constants before every write, which is what bounds the writes for
// the verifier and keeps its work linear (sprintf.go says why).
//
// The quoting is format.BufferQuoted's, the runtime's _stp_text_str with
// its buffer flag: printable ASCII as it is, `\"`, `\\`, \a \b \f \n \r \t
// \v, a NUL as `\0` in the room of an octal escape, every other byte as
// \ooo (the runtime writes a valid UTF-8 sequence as \uXXXX: here its
// bytes are octal). The text gets MAXSTRINGLEN-3 bytes between its
// quotes; when the buffer does not fit, `"...` replaces its last three
// (or the escape sequence they would split), unless the byte that did not
// fit is a NUL. An inlen <= 0 reads MAXSTRINGLEN-1 bytes, as the runtime
// does; memory that cannot be read gives its address, 0x%x.

// readBuffer evaluates addr and len and reads min(len, most) bytes (none,
// or most, when len <= 0: ifNone) from kernel memory at addr into a new
// scratch buffer, jumping to fault, with the address in regRec, when they
// cannot be read. It returns the buffer and the cells of the address and
// the count.
func (g *gen) readBuffer(c *syntax.Call, most, ifNone int, fault string) (buf value, addr, count int) {
	cells := g.longArgs(c.Args[0], c.Args[1])
	addr, count = cells[0], cells[1]
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
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, fault),
	)
	g.mark(done)
	return buf, addr, count
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
	buf, _, count := g.readBuffer(c, (g.m.maxStr-1)/2, 0, g.errorSite(tapset.KernelReadFault, c.Pos, true))
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

// textEscapes are the bytes written as a backslash and a letter.
var textEscapes = []struct{ b, letter byte }{
	{'"', '"'}, {'\\', '\\'}, {'\a', 'a'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}, {'\v', 'v'},
}

// quoting is the state of kernel_buffer_quoted's walk: the result, the
// index of its next byte (out) and the room left (room, which a NUL's
// escape takes more of than it writes), the first escape a cut could
// split (esc, 0 for none, and its room escRoom), the byte being written
// (last), and the labels of the cut and of the next byte.
type quoting struct {
	dst                           value
	out, room, esc, escRoom, last int
	cut, next                     string
}

// kernelBufferQuoted compiles kernel_buffer_quoted(addr, inlen).
func (g *gen) kernelBufferQuoted(c *syntax.Call) value {
	dst := g.strSlot(g.m.maxStr)
	mark := g.scratchMark()
	end := dst.width - 2 // the closing quote's index when the text fills the room
	faulted := g.newLabel("quoted_fault")
	buf, addr, count := g.readBuffer(c, end, end, faulted)
	q := quoting{dst: dst, cut: g.newLabel("quoted_cut"), next: g.newLabel("quoted_next")}
	for _, cell := range []*int{&q.out, &q.room, &q.esc, &q.escRoom, &q.last} {
		*cell = g.allocScratch(8)
	}
	g.setCell(q.out, 1)
	g.setCell(q.room, int32(end-1))
	g.setCell(q.esc, 0)
	g.emit(asm.StoreImm(regScratch, int16(dst.off), '"', asm.Byte))
	done, fin := g.newLabel("quoted_done"), g.newLabel("quoted_end")
	g.bufferScan(buf, count, done, func() {
		escaped, nul, octal := g.newLabel("quoted_escaped"), g.newLabel("quoted_nul"), g.newLabel("quoted_octal")
		g.emit(
			asm.StoreMem(regScratch, int16(q.last), asm.R2, asm.DWord),
			asm.LoadMem(asm.R1, regScratch, int16(q.room), asm.DWord),
			asm.JEq.Imm(asm.R1, 0, q.cut),
			asm.LoadMem(asm.R1, regScratch, int16(q.out), asm.DWord),
		)
		for _, e := range textEscapes {
			g.emit(asm.Mov.Imm(asm.R4, int32(e.letter)), asm.JEq.Imm(asm.R2, int32(e.b), escaped))
		}
		g.emit(asm.JEq.Imm(asm.R2, 0, nul), asm.JLT.Imm(asm.R2, ' ', octal), asm.JGT.Imm(asm.R2, '~', octal))
		g.quotedWrite(q, 1, nil, asm.R2)
		g.mark(escaped)
		g.quotedWrite(q, 2, backslash, asm.R5, asm.R4)
		g.mark(nul)
		g.quotedWrite(q, 4, func() asm.Instructions { return append(backslash(), asm.Mov.Imm(asm.R4, '0')) }, asm.R5, asm.R4)
		g.mark(octal)
		g.quotedWrite(q, 4, octalDigits, asm.R5, asm.R4, asm.R3, asm.R2)
		g.mark(q.next)
	})
	g.mark(q.cut)
	g.quotedCut(q, end, done, fin)
	g.mark(done)
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(q.out), asm.DWord),
		asm.JGT.Imm(asm.R1, int32(end), fin), // never: the bound the verifier needs
		asm.Add.Reg(asm.R1, regScratch),
		asm.StoreImm(asm.R1, int16(dst.off), '"', asm.Byte),
		asm.StoreImm(asm.R1, int16(dst.off+1), 0, asm.Byte),
		asm.Ja.Label(fin),
	)
	g.mark(faulted)
	g.quotedFault(c, dst, addr)
	g.mark(fin)
	g.scratchRelease(mark)
	return dst
}

// backslash leaves an escape's backslash in R5.
func backslash() asm.Instructions { return asm.Instructions{asm.Mov.Imm(asm.R5, '\\')} }

// octalDigits leaves the escape of the byte in R2, \ooo, in R5, R4, R3, R2.
func octalDigits() asm.Instructions {
	return append(backslash(), asm.Mov.Reg(asm.R4, asm.R2), asm.RSh.Imm(asm.R4, 6), asm.Add.Imm(asm.R4, '0'),
		asm.Mov.Reg(asm.R3, asm.R2), asm.RSh.Imm(asm.R3, 3), asm.And.Imm(asm.R3, 7), asm.Add.Imm(asm.R3, '0'),
		asm.And.Imm(asm.R2, 7), asm.Add.Imm(asm.R2, '0'))
}

// quotedWrite writes the bytes in regs (set by bytes, which may use R2 to
// R5, from the byte in R2), an escape that takes room bytes of room, at
// the output index (in R1) and moves on to the next byte; it jumps to the
// cut instead when they do not fit, after noting the first escape a cut
// could split (one that ends in the last three bytes of room).
func (g *gen) quotedWrite(q quoting, room int, bytes func() asm.Instructions, regs ...asm.Register) {
	g.emit(asm.LoadMem(asm.R0, regScratch, int16(q.room), asm.DWord))
	if room > 1 {
		noted := g.newLabel("quoted_noted")
		g.emit(
			asm.JGE.Imm(asm.R0, int32(room+3), noted),
			asm.LoadMem(asm.R3, regScratch, int16(q.esc), asm.DWord),
			asm.JNE.Imm(asm.R3, 0, noted),
			asm.StoreMem(regScratch, int16(q.esc), asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R3, int32(room)),
			asm.StoreMem(regScratch, int16(q.escRoom), asm.R3, asm.DWord),
		)
		g.mark(noted)
	}
	g.emit(
		asm.JLT.Imm(asm.R0, int32(room), q.cut),
		asm.JGT.Imm(asm.R1, int32(q.dst.width-2-len(regs)), q.cut), // never: the bound the verifier needs
	)
	if bytes != nil {
		g.emit(bytes()...)
	}
	g.emit(
		asm.Sub.Imm(asm.R0, int32(room)),
		asm.StoreMem(regScratch, int16(q.room), asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R0, asm.R1), asm.Add.Imm(asm.R0, int32(len(regs))),
		asm.StoreMem(regScratch, int16(q.out), asm.R0, asm.DWord),
		asm.Add.Reg(asm.R1, regScratch))
	for i, r := range regs {
		g.emit(asm.StoreMem(asm.R1, int16(q.dst.off+i), r, asm.Byte))
	}
	g.emit(asm.Ja.Label(q.next))
}

// quotedCut ends a buffer that did not fit: at the output index like one
// that did (done) when the byte that did not fit is a NUL, else with `"...`
// over the room's last three bytes, or from the escape they would split.
func (g *gen) quotedCut(q quoting, end int, done, fin string) {
	at := g.newLabel("quoted_cut_at")
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(q.last), asm.DWord),
		asm.JEq.Imm(asm.R1, 0, done),
		asm.LoadMem(asm.R1, regScratch, int16(q.out), asm.DWord),
		asm.LoadMem(asm.R2, regScratch, int16(q.room), asm.DWord),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.Sub.Imm(asm.R1, 3),
		asm.LoadMem(asm.R2, regScratch, int16(q.esc), asm.DWord),
		asm.JEq.Imm(asm.R2, 0, at),
		asm.JGE.Reg(asm.R2, asm.R1, at),
		asm.LoadMem(asm.R3, regScratch, int16(q.escRoom), asm.DWord),
		asm.Add.Reg(asm.R3, asm.R2),
		asm.JGE.Reg(asm.R1, asm.R3, at),
		asm.Mov.Reg(asm.R1, asm.R2),
	)
	g.mark(at)
	g.emit(
		asm.JSLT.Imm(asm.R1, 1, fin), // never: the bounds the verifier needs
		asm.JGT.Imm(asm.R1, int32(end-3), fin),
		asm.Add.Reg(asm.R1, regScratch),
	)
	for i, b := range []byte(`"...`) {
		g.emit(asm.StoreImm(asm.R1, int16(q.dst.off+i), int64(b), asm.Byte))
	}
	g.emit(asm.StoreImm(asm.R1, int16(q.dst.off+4), 0, asm.Byte), asm.Ja.Label(fin))
}

// quotedFault gives the address of memory that could not be read, in
// hex, for the quoted buffer.
func (g *gen) quotedFault(c *syntax.Call, dst value, addr int) {
	slot := g.pushSlot()
	hex, _ := format.Compile("0x%x")
	g.emit(asm.LoadMem(asm.R1, regScratch, int16(addr), asm.DWord), asm.StoreMem(asm.R10, slot, asm.R1, asm.DWord))
	g.copyStr(dst, g.format(c, c.Name+"()", hex, func() []sprintArg { return []sprintArg{{slot: slot}} }))
	g.popStack(8)
}
