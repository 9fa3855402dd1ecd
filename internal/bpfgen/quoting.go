package bpfgen

import (
	"strings"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// Quoted strings in kernel probes: string_quoted(s), and the buffers of
// kernel_buffer_quoted(addr, inlen[, outlen]), user_buffer_quoted and
// their _error forms (the tapset builds the quoted readers of strings on
// string_quoted: quoted.stp), quoted as the user side quotes them
// (format.StringQuoted, format.BufferQuoted: the runtime's _stp_text_str).
//
// One walk (quote) serves them all. It reads the bytes of a scratch slot
// with scan (strfuncs.go), a string's up to its NUL, a buffer's up to its
// count, NULs included, and writes each as the runtime does: printable
// ASCII as it is; `\"`, `\\`, \a \b \f \n \r \t \v; a well-formed UTF-8
// sequence of two to four bytes (shortest form, no surrogate, at most
// U+10FFFF) as \uXXXX or \UXXXXXXXX; a buffer's NUL as `\0` in the room
// of an octal escape; every other byte as \ooo. The text gets the room
// between its quotes (MAXSTRINGLEN-3 bytes, or outlen-2, at least 3);
// when the input does not fit, `"...` replaces its last three bytes (or
// the escape sequence they would split), unless the byte that did not
// fit is a NUL. The walk's state lives in scratch cells, compared with
// constants before every write, which is what bounds the writes for the
// verifier.

// textEscapes are the bytes written as a backslash and a letter.
var textEscapes = []struct{ b, letter byte }{
	{'"', '"'}, {'\\', '\\'}, {'\a', 'a'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}, {'\v', 'v'},
}

// quoting is the state of a quoting walk: the result, the index of its
// next byte (out) and the room left (room, which a NUL's escape takes
// more of than it writes), the first escape a cut could split (esc, 0 for
// none, and its room escRoom), the byte being written (last), the input
// index and count (idx, count), a UTF-8 sequence's code point and length
// (code, seq), and the labels of the cut and of the next byte.
type quoting struct {
	dst                           value
	src                           value
	buffer                        bool
	out, room, esc, escRoom, last int
	idx, count, code, seq         int
	cut, next                     string
}

// quoteEnd is the index of dst's closing quote when the text fills the
// most room a quoted string has.
func quoteEnd(dst value) int { return dst.width - 2 }

// quote writes into dst the quoted text of the count bytes (cell count)
// of src, a string's (up to its NUL) or, buffer set, a buffer's, in the
// room (cell room: format's outLen less the quotes) the caller set, then
// jumps to fin.
func (g *gen) quote(dst, src value, count, room int, buffer bool, fin string) {
	q := quoting{dst: dst, src: src, buffer: buffer, count: count, room: room,
		cut: g.newLabel("quoted_cut"), next: g.newLabel("quoted_next")}
	for _, cell := range []*int{&q.out, &q.esc, &q.escRoom, &q.last, &q.idx, &q.code, &q.seq} {
		*cell = g.allocScratch(8)
	}
	g.setCell(q.out, 1)
	g.setCell(q.esc, 0)
	g.setCell(q.idx, 0)
	g.emit(asm.StoreImm(regScratch, int16(dst.off), '"', asm.Byte))
	done := g.newLabel("quoted_done")
	g.scan(q.idx, src.width, done, func(string) {
		g.emit(
			asm.LoadMem(asm.R2, regScratch, int16(count), asm.DWord),
			asm.JGE.Reg(asm.R1, asm.R2, done),
		)
		g.loadByte(asm.R2, asm.R1, src)
		if !buffer {
			g.emit(asm.JEq.Imm(asm.R2, 0, done))
		}
		g.quoteByte(q)
		g.mark(q.next)
	})
	g.mark(q.cut)
	g.quotedCut(q, done, fin)
	g.mark(done)
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(q.out), asm.DWord),
		asm.JGT.Imm(asm.R1, int32(quoteEnd(dst)), fin), // never: the bound the verifier needs
		asm.Add.Reg(asm.R1, regScratch),
		asm.StoreImm(asm.R1, int16(dst.off), '"', asm.Byte),
		asm.StoreImm(asm.R1, int16(dst.off+1), 0, asm.Byte),
		asm.Ja.Label(fin),
	)
}

// quoteByte writes the byte in R2 (at the input index in R1) as its
// escape or itself.
func (g *gen) quoteByte(q quoting) {
	escaped, nul, octal, multi := g.newLabel("quoted_escaped"), g.newLabel("quoted_nul"), g.newLabel("quoted_octal"), g.newLabel("quoted_utf8")
	g.emit(
		asm.StoreMem(regScratch, int16(q.last), asm.R2, asm.DWord),
		asm.LoadMem(asm.R1, regScratch, int16(q.room), asm.DWord),
		asm.JEq.Imm(asm.R1, 0, q.cut),
	)
	g.utf8Sequence(q, multi, octal)
	g.emit(asm.LoadMem(asm.R1, regScratch, int16(q.out), asm.DWord))
	for _, e := range textEscapes {
		g.emit(asm.Mov.Imm(asm.R4, int32(e.letter)), asm.JEq.Imm(asm.R2, int32(e.b), escaped))
	}
	g.emit(asm.JEq.Imm(asm.R2, 0, nul), asm.JLT.Imm(asm.R2, ' ', octal), asm.JGT.Imm(asm.R2, '~', octal))
	g.quotedWrite(q, 1, 1, func() { g.storeBytes(q, asm.R2) })
	g.mark(escaped)
	g.quotedWrite(q, 2, 2, func() { g.emit(backslash()...); g.storeBytes(q, asm.R5, asm.R4) })
	g.mark(nul)
	g.quotedWrite(q, 4, 2, func() { g.emit(append(backslash(), asm.Mov.Imm(asm.R4, '0'))...); g.storeBytes(q, asm.R5, asm.R4) })
	g.mark(octal)
	g.emit(asm.LoadMem(asm.R1, regScratch, int16(q.out), asm.DWord), asm.LoadMem(asm.R2, regScratch, int16(q.last), asm.DWord))
	g.quotedWrite(q, 4, 4, func() { g.emit(octalDigits()...); g.storeBytes(q, asm.R5, asm.R4, asm.R3, asm.R2) })
	g.mark(multi)
	g.utf8Escape(q, 6, 'u', 0xFFFF)
	g.utf8Escape(q, 10, 'U', 0x10FFFF)
}

// utf8Sequence decodes, when the byte in R2 leads a well-formed UTF-8
// sequence that the input holds whole, its code point into cell code and
// its length into cell seq, and jumps to multi; a lead byte whose sequence
// is not well formed jumps to octal; any other byte falls through, R2
// kept.
func (g *gen) utf8Sequence(q quoting, multi, octal string) {
	plain := g.newLabel("utf8_plain")
	g.emit(asm.JLT.Imm(asm.R2, 0xC0, plain))
	leads := []struct{ mask, lead, bits, n int32 }{{0xE0, 0xC0, 0x1F, 2}, {0xF0, 0xE0, 0x0F, 3}, {0xF8, 0xF0, 0x07, 4}}
	lengthOf := g.newLabel("utf8_length")
	for _, l := range leads {
		skip := g.newLabel("utf8_lead")
		g.emit(
			asm.Mov.Reg(asm.R3, asm.R2), asm.And.Imm(asm.R3, l.mask), asm.JNE.Imm(asm.R3, l.lead, skip),
			asm.Mov.Reg(asm.R3, asm.R2), asm.And.Imm(asm.R3, l.bits), asm.Mov.Imm(asm.R4, l.n), asm.Ja.Label(lengthOf),
		)
		g.mark(skip)
	}
	g.emit(asm.Ja.Label(plain))
	g.mark(lengthOf)
	g.emit(asm.StoreMem(regScratch, int16(q.seq), asm.R4, asm.DWord))
	for k := int32(1); k < 4; k++ {
		// byte k of the sequence, when it has one: below count and src's width
		g.emit(
			asm.JLE.Imm(asm.R4, k, multi+"_check"),
			asm.LoadMem(asm.R1, regScratch, int16(q.idx), asm.DWord),
			asm.Add.Imm(asm.R1, k),
			asm.LoadMem(asm.R5, regScratch, int16(q.count), asm.DWord),
			asm.JGE.Reg(asm.R1, asm.R5, octal),
			asm.JGE.Imm(asm.R1, int32(q.src.width), octal),
		)
		g.loadByte(asm.R5, asm.R1, q.src)
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R5), asm.And.Imm(asm.R1, 0xC0), asm.JNE.Imm(asm.R1, 0x80, octal),
			asm.LSh.Imm(asm.R3, 6), asm.And.Imm(asm.R5, 0x3F), asm.Or.Reg(asm.R3, asm.R5),
		)
	}
	g.mark(multi + "_check")
	// shortest form, no surrogate, at most U+10FFFF: the smallest code
	// point of each length is 0x80, 0x800, 0x10000
	g.emit(
		asm.JLT.Imm(asm.R3, 0x80, octal),
		asm.JGT.Imm(asm.R3, 0x10FFFF, octal),
		asm.Mov.Reg(asm.R1, asm.R3), asm.And.Imm(asm.R1, ^0x7FF), asm.JEq.Imm(asm.R1, 0xD800, octal),
		asm.JLT.Imm(asm.R4, 3, multi+"_ok"),
		asm.JLT.Imm(asm.R3, 0x800, octal),
		asm.JLT.Imm(asm.R4, 4, multi+"_ok"),
		asm.JLT.Imm(asm.R3, 0x10000, octal),
	)
	g.mark(multi + "_ok")
	g.emit(asm.StoreMem(regScratch, int16(q.code), asm.R3, asm.DWord), asm.Ja.Label(multi))
	g.mark(plain)
}

// utf8Escape writes, when the code point in cell code is at most max, its
// escape of room bytes (\uXXXX or \UXXXXXXXX, uppercase digits) and moves
// the input index past the sequence; a larger one falls through.
func (g *gen) utf8Escape(q quoting, room int, letter byte, max int32) {
	skip := g.newLabel("utf8_wider")
	g.emit(
		asm.LoadMem(asm.R3, regScratch, int16(q.code), asm.DWord),
		asm.JGT.Imm(asm.R3, max, skip),
		asm.LoadMem(asm.R1, regScratch, int16(q.out), asm.DWord),
	)
	g.quotedWrite(q, room, room, func() {
		g.emit(
			asm.LoadMem(asm.R3, regScratch, int16(q.code), asm.DWord),
			asm.LoadMem(asm.R2, regScratch, int16(q.idx), asm.DWord),
			asm.LoadMem(asm.R4, regScratch, int16(q.seq), asm.DWord),
			asm.Add.Reg(asm.R2, asm.R4),
			asm.Sub.Imm(asm.R2, 1), // the scan adds the last 1
			asm.StoreMem(regScratch, int16(q.idx), asm.R2, asm.DWord),
			asm.Mov.Reg(asm.R4, asm.R1),
			asm.Add.Reg(asm.R4, regScratch),
			asm.StoreImm(asm.R4, int16(q.dst.off), '\\', asm.Byte),
			asm.StoreImm(asm.R4, int16(q.dst.off+1), int64(letter), asm.Byte),
		)
		for i := range room - 2 {
			g.emit(asm.Mov.Reg(asm.R2, asm.R3), asm.RSh.Imm(asm.R2, int32(4*(room-3-i))), asm.And.Imm(asm.R2, 15))
			g.upperHexDigit(asm.R2)
			g.emit(asm.StoreMem(asm.R4, int16(q.dst.off+2+i), asm.R2, asm.Byte))
		}
	})
	g.mark(skip)
}

// upperHexDigit turns the nibble in r into its uppercase hex digit.
func (g *gen) upperHexDigit(r asm.Register) {
	digit := g.newLabel("hex_digit")
	g.emit(asm.Add.Imm(r, '0'), asm.JLE.Imm(r, '9', digit), asm.Add.Imm(r, 'A'-'0'-10))
	g.mark(digit)
}

// backslash leaves an escape's backslash in R5.
func backslash() asm.Instructions { return asm.Instructions{asm.Mov.Imm(asm.R5, '\\')} }

// octalDigits leaves the escape of the byte in R2, \ooo, in R5, R4, R3, R2.
func octalDigits() asm.Instructions {
	return append(backslash(), asm.Mov.Reg(asm.R4, asm.R2), asm.RSh.Imm(asm.R4, 6), asm.Add.Imm(asm.R4, '0'),
		asm.Mov.Reg(asm.R3, asm.R2), asm.RSh.Imm(asm.R3, 3), asm.And.Imm(asm.R3, 7), asm.Add.Imm(asm.R3, '0'),
		asm.And.Imm(asm.R2, 7), asm.Add.Imm(asm.R2, '0'))
}

// storeBytes stores the bytes in regs at the output index in R1.
func (g *gen) storeBytes(q quoting, regs ...asm.Register) {
	g.emit(asm.Add.Reg(asm.R1, regScratch))
	for i, r := range regs {
		g.emit(asm.StoreMem(asm.R1, int16(q.dst.off+i), r, asm.Byte))
	}
}

// quotedWrite writes an escape of n bytes that takes room bytes of room
// (write stores them at the output index in R1, with R2 to R5) and moves
// on to the next byte; it jumps to the cut instead when they do not fit,
// after noting the first escape a cut could split (one that ends in the
// last three bytes of room). R2 and R4 reach write as they were.
func (g *gen) quotedWrite(q quoting, room, n int, write func()) {
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
		asm.JGT.Imm(asm.R1, int32(q.dst.width-2-n), q.cut), // never: the bound the verifier needs
		asm.Sub.Imm(asm.R0, int32(room)),
		asm.StoreMem(regScratch, int16(q.room), asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R0, asm.R1), asm.Add.Imm(asm.R0, int32(n)),
		asm.StoreMem(regScratch, int16(q.out), asm.R0, asm.DWord),
	)
	write()
	g.emit(asm.Ja.Label(q.next))
}

// quotedCut ends an input that did not fit: at the output index like one
// that did (done) when the byte that did not fit is a NUL, else with `"...`
// over the room's last three bytes, or from the escape they would split.
func (g *gen) quotedCut(q quoting, done, fin string) {
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
		asm.JGT.Imm(asm.R1, int32(quoteEnd(q.dst)-3), fin),
		asm.Add.Reg(asm.R1, regScratch),
	)
	for i, b := range []byte(`"...`) {
		g.emit(asm.StoreImm(asm.R1, int16(q.dst.off+i), int64(b), asm.Byte))
	}
	g.emit(asm.StoreImm(asm.R1, int16(q.dst.off+4), 0, asm.Byte), asm.Ja.Label(fin))
}

// quotedFault gives the address in cell addr, of memory that could not
// be read, in hex (0x%x), as the quoted text.
func (g *gen) quotedFault(c *syntax.Call, dst value, addr int) {
	hex, _ := format.Compile("0x%x")
	g.copyStr(dst, g.format(c, c.Name+"()", hex, func() []sprintArg { return []sprintArg{{cell: int16(addr)}} }))
}

// UnreadMap counts the strings in user memory that kernel probes could
// not read (a page the process has not touched yet, which a BPF program
// cannot fault in, or a bad address) and printed as their address: an
// ARRAY of one u64, reported when the run ends. quoted.stp's readers
// count through __unread_user_address, user_buffer_quoted here.
const UnreadMap = "unread_strings"

// unreadUserAddress compiles __unread_user_address(addr): counted, and
// in hex.
func (g *gen) unreadUserAddress(c *syntax.Call) value {
	dst := g.strSlot(g.m.maxStr)
	mark := g.scratchMark()
	addr := g.longArgs(c.Args[0])[0]
	g.countUnreadAt(addr)
	g.quotedFault(c, dst, addr)
	g.scratchRelease(mark)
	return dst
}

// userStringRaw compiles __user_string_raw(addr), the leaf of a quoted
// user string that user space quotes (sema/deferred.go): a mark byte, then
// the string at addr, at most MAXSTRINGLEN-2 bytes (string_quoted looks at
// no more: its room is MAXSTRINGLEN-3 bytes, then the byte that did not
// fit); "" when the string cannot be read, counted as unreadUserAddress
// counts.
func (g *gen) userStringRaw(c *syntax.Call) value {
	dst := g.strSlot(g.m.maxStr)
	mark := g.scratchMark()
	addr := g.longArgs(c.Args[0])[0]
	text := value{str: true, off: dst.off + 1, width: dst.width - 1}
	g.readStr(asm.FnProbeReadUserStr, text, func() { g.emit(asm.LoadMem(asm.R3, regScratch, int16(addr), asm.DWord)) }, text.width)
	read, done := g.newLabel("raw_read"), g.newLabel("raw_done")
	g.emit(asm.JSGE.Imm(asm.R0, 0, read))
	g.countUnreadAt(addr)
	g.emit(asm.Mov.Imm(asm.R1, 0), asm.Ja.Label(done))
	g.mark(read)
	g.emit(asm.Mov.Imm(asm.R1, 'R'))
	g.mark(done)
	g.emit(asm.StoreMem(regScratch, int16(dst.off), asm.R1, asm.Byte))
	g.scratchRelease(mark)
	return dst
}

// countUnreadAt adds one to UnreadMap unless the address in cell addr is
// 0 (a NULL pointer is no string left unread). Clobbers R1-R3.
func (g *gen) countUnreadAt(addr int) {
	null := g.newLabel("unread_null")
	g.m.unread = true
	g.emit(asm.LoadMem(asm.R3, regScratch, int16(addr), asm.DWord), asm.JEq.Imm(asm.R3, 0, null))
	g.countIn(UnreadMap, 0, asm.R1)
	g.mark(null)
}

// setRoom sets cell room to the room between the quotes of a result of
// MAXSTRINGLEN bytes.
func (g *gen) setRoom(dst value) int {
	room := g.allocScratch(8)
	g.setCell(room, int32(quoteEnd(dst)-1))
	return room
}

// bufferQuoted compiles __kernel_buffer_quoted(addr, inlen, outlen)
// (the tapset's kernel_buffer_quoted), kernel_buffer_quoted_error,
// user_buffer_quoted and user_buffer_quoted_error, as the tapset's C:
// outlen is clamped to [0, MAXSTRINGLEN] and 0 gives "" (the _error forms
// raise), the text gets outlen-2 bytes of room (at least 3, at most
// MAXSTRINGLEN-3); memory that cannot be read gives its address in hex,
// cut at outlen-1 bytes (the _error forms raise stap's error instead).
func (g *gen) bufferQuoted(c *syntax.Call) value {
	dst := g.strSlot(g.m.maxStr)
	mark := g.scratchMark()
	end := quoteEnd(dst)
	user, raise := strings.HasPrefix(c.Name, "user_"), strings.HasSuffix(c.Name, "_error")
	faulted, empty, fin := g.newLabel("quoted_fault"), g.newLabel("quoted_empty"), g.newLabel("quoted_end")
	read := asm.FnProbeReadKernel
	if user {
		read = asm.FnProbeReadUser
	}
	if raise {
		faulted = g.errorSite(tapset.BufferReadFault(user), c.Pos, true)
	}
	cells := g.longArgs(c.Args...)
	addr, count, outlen := cells[0], cells[1], cells[2]
	buf := g.readBuffer(addr, count, read, end, end, faulted)
	room := g.allocScratch(8)
	if raise {
		empty = faulted
		g.emit(asm.LoadMem(regRec, regScratch, int16(addr), asm.DWord)) // the error's address
	}
	g.quoteRoom(outlen, room, empty)
	g.quote(dst, buf, count, room, true, fin)
	if !raise {
		g.mark(empty)
		g.emit(asm.StoreImm(regScratch, int16(dst.off), 0, asm.Byte), asm.Ja.Label(fin))
		g.mark(faulted)
		if user {
			g.countUnreadAt(addr)
		}
		g.quotedFault(c, dst, addr)
		g.cutAt(dst, outlen, -1)
	}
	g.mark(fin)
	g.scratchRelease(mark)
	return dst
}

// quoteRoom sets cell room to the room between the quotes of a result of
// at most outlen (in its cell) bytes, clamped to [0, MAXSTRINGLEN] and
// stored back; an outlen of 0 jumps to empty.
func (g *gen) quoteRoom(outlen, room int, empty string) {
	limit := int32(g.m.maxStr - 1)
	short, fits, set := g.newLabel("room_short"), g.newLabel("room_fits"), g.newLabel("room_set")
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(outlen), asm.DWord),
		asm.JSLE.Imm(asm.R1, 0, empty),
		asm.JSLE.Imm(asm.R1, limit+1, fits),
		asm.Mov.Imm(asm.R1, limit+1),
	)
	g.mark(fits)
	g.emit(
		asm.StoreMem(regScratch, int16(outlen), asm.R1, asm.DWord),
		asm.JSLE.Imm(asm.R1, limit, short),
		asm.Mov.Imm(asm.R1, limit),
	)
	g.mark(short)
	g.emit(
		asm.JSGE.Imm(asm.R1, 5, set),
		asm.Mov.Imm(asm.R1, 5),
	)
	g.mark(set)
	g.emit(asm.Sub.Imm(asm.R1, 2), asm.StoreMem(regScratch, int16(room), asm.R1, asm.DWord))
}

// cutAt ends the string in dst after the number of bytes in cell n, plus
// delta (snprintf's room of n bytes holds n-1 and the NUL).
func (g *gen) cutAt(dst value, n int, delta int32) {
	slot := g.pushSlot()
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(n), asm.DWord),
		asm.Add.Imm(asm.R1, delta),
		asm.StoreMem(asm.R10, slot, asm.R1, asm.DWord),
	)
	g.cutString(dst, slot)
	g.popStack(8)
}

// stringQuoted compiles string_quoted(s): escaped by the walk where the
// kernel has may_goto (Linux 6.9); before, the verifier walks each of the
// walk's passes with its branches, which no kernel before 6.9 accepts
// ("the sequence of 8193 jumps is too complex" on Debian 12's 6.1), so
// there the string is put between quotes as it is (plainQuoted).
func (g *gen) stringQuoted(c *syntax.Call) value {
	dst := g.strSlot(g.m.maxStr)
	mark := g.scratchMark()
	s := g.str(c.Args[0])
	if !g.m.hasMayGoto() {
		g.plainQuoted(dst, s)
		g.scratchRelease(mark)
		return dst
	}
	count := g.allocScratch(8)
	g.setCell(count, int32(s.width))
	fin := g.newLabel("quoted_end")
	g.quote(dst, s, count, g.setRoom(dst), false, fin)
	g.mark(fin)
	g.scratchRelease(mark)
	return dst
}

// plainQuoted writes s between double quotes into dst, its bytes as they
// are, cut to the room between the quotes without the "... mark.
func (g *gen) plainQuoted(dst, s value) {
	fin := g.newLabel("quoted_plain")
	g.emit(
		asm.StoreImm(regScratch, int16(dst.off), '"', asm.Byte),
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(dst.off+1)),
		asm.Mov.Imm(asm.R2, int32(dst.width-2)),
	)
	g.scratchAddr(s.off)()
	g.emit(asm.FnProbeReadKernelStr.Call())
	g.atLeastOne()
	g.emit(
		asm.JGT.Imm(asm.R0, int32(dst.width-2), fin), // never: the bound the verifier needs
		asm.Add.Reg(asm.R0, regScratch),
		asm.StoreImm(asm.R0, int16(dst.off), '"', asm.Byte),
		asm.StoreImm(asm.R0, int16(dst.off+1), 0, asm.Byte),
	)
	g.mark(fin)
}
