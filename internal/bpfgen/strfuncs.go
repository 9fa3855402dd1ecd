package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
	"strings"
)

// The string functions whose value a kernel probe computes itself, so that
// it may keep, compare or count by it: strlen, substr, stringat, strpos,
// isinstr and str_replace.
//
// Each walks its strings byte by byte in a loop whose indexes live in
// cells of the scratch area. The verifier never knows a value loaded from
// there, so it checks the loop as it checks a script's (stmt.go, loop): a
// may_goto at the head, states compared from one pass to the next, done
// after a few passes whatever the strings' widths. Before a byte is read
// its index is compared with the width of its slot, which is what tells
// the verifier the read stays in the slot. (A loop counting up to the
// width instead, as strcmp does, is walked once per byte, and a search
// nests two: 128 x 128 passes for a default MAXSTRINGLEN.) The may_goto
// budget is never the limit: a string has at most MAXSTRINGLEN bytes.

// scan emits a loop over the index in scratch cell idx, from its value
// when the loop starts: each pass loads the index into R1, leaves for
// exit when it reaches limit (or the kernel's budget runs out), and runs
// body with the label that moves to the next index (where a body that
// falls through goes too).
func (g *gen) scan(idx, limit int, exit string, body func(next string)) {
	top, next := g.newLabel("scan"), g.newLabel("scan_next")
	end := g.loopHead(top, exit, int64(limit))
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(idx), asm.DWord),
		asm.JGE.Imm(asm.R1, int32(limit), exit),
	)
	body(next)
	g.mark(next)
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(idx), asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(regScratch, int16(idx), asm.R1, asm.DWord),
		asm.Ja.Label(top),
	)
	end()
}

// loadByte loads into dst the byte of string v at the index in r, which
// the caller checked is below v's width.
func (g *gen) loadByte(dst, r asm.Register, v value) {
	g.emit(
		asm.Mov.Reg(dst, regScratch),
		asm.Add.Reg(dst, r),
		asm.LoadMem(dst, dst, int16(v.off), asm.Byte),
	)
}

// setCell stores the constant n in scratch cell c.
func (g *gen) setCell(c int, n int32) {
	g.emit(asm.Mov.Imm(asm.R1, n), asm.StoreMem(regScratch, int16(c), asm.R1, asm.DWord))
}

// strlenOf leaves the length of string v in R0.
func (g *gen) strlenOf(v value) {
	idx := g.allocScratch(8)
	done := g.newLabel("strlen_done")
	g.setCell(idx, 0)
	g.scan(idx, v.width, done, func(string) {
		g.loadByte(asm.R2, asm.R1, v)
		g.emit(asm.JEq.Imm(asm.R2, 0, done))
	})
	g.mark(done)
	g.emit(asm.LoadMem(asm.R0, regScratch, int16(idx), asm.DWord))
}

// strlen compiles strlen(s).
func (g *gen) strlen(c *syntax.Call) {
	mark := g.scratchMark()
	g.strlenOf(g.str(c.Args[0]))
	g.scratchRelease(mark)
}

// longArgs evaluates long arguments into new scratch cells, in order.
func (g *gen) longArgs(args ...syntax.Expr) []int {
	cells := make([]int, len(args))
	for i, a := range args {
		g.long(a)
		cells[i] = g.allocScratch(8)
		g.emit(asm.StoreMem(regScratch, int16(cells[i]), asm.R0, asm.DWord))
	}
	return cells
}

// substr compiles substr(str, start, length): the length bytes from start
// (fewer where the string ends), "" when start is outside the string or
// length is not positive. One bpf_probe_read_kernel_str copies them,
// bounded by length+1 and by the result's width.
func (g *gen) substr(c *syntax.Call) value {
	dst := g.strSlot(g.m.maxStr)
	mark := g.scratchMark()
	s := g.str(c.Args[0])
	cells := g.longArgs(c.Args[1], c.Args[2])
	start, length := cells[0], cells[1]
	empty, fits, done := g.newLabel("substr_empty"), g.newLabel("substr_fits"), g.newLabel("substr_done")
	g.strlenOf(s)
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(start), asm.DWord),
		asm.JSLT.Imm(asm.R1, 0, empty),
		asm.JSGE.Reg(asm.R1, asm.R0, empty), // start < strlen < s.width
		asm.LoadMem(asm.R2, regScratch, int16(length), asm.DWord),
		asm.JSLE.Imm(asm.R2, 0, empty),
		asm.JSLT.Imm(asm.R2, int32(dst.width), fits),
		asm.Mov.Imm(asm.R2, int32(dst.width-1)),
	)
	g.mark(fits)
	g.emit(
		asm.Add.Imm(asm.R2, 1), // the NUL's byte: in [2, dst.width]
		asm.Mov.Reg(asm.R3, regScratch),
		asm.Add.Imm(asm.R3, int32(s.off)),
		asm.Add.Reg(asm.R3, asm.R1),
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(dst.off)),
		asm.FnProbeReadKernelStr.Call(),
		asm.Ja.Label(done),
	)
	g.mark(empty)
	g.emit(asm.StoreImm(regScratch, int16(dst.off), 0, asm.Byte))
	g.mark(done)
	g.scratchRelease(mark)
	return dst
}

// stringat compiles stringat(str, pos): the byte at pos, as a signed
// char; stap's error when pos is outside the string.
func (g *gen) stringat(c *syntax.Call) {
	mark := g.scratchMark()
	s := g.str(c.Args[0])
	pos := g.longArgs(c.Args[1])[0]
	bad := g.errorSite(tapset.MsgPositionOutOfBounds, c.Pos, false)
	g.strlenOf(s)
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(pos), asm.DWord),
		asm.JSLT.Imm(asm.R1, 0, bad),
		asm.JSGE.Reg(asm.R1, asm.R0, bad),
		asm.JGE.Imm(asm.R1, int32(s.width), bad), // never: strlen < width
	)
	g.loadByte(asm.R0, asm.R1, s)
	g.emit(asm.LSh.Imm(asm.R0, 56), asm.ArSh.Imm(asm.R0, 56))
	g.scratchRelease(mark)
}

// matchAt compares string sub with str from the index in scratch cell at
// (below str's width): it jumps to match when all of sub is there (an
// empty sub always is), to mismatch when a byte differs or str ends. Its
// own index is in cell j, which holds sub's length after a match.
func (g *gen) matchAt(str, sub value, at, j int, match, mismatch string) {
	g.setCell(j, 0)
	g.scan(j, sub.width, match, func(next string) {
		g.loadByte(asm.R2, asm.R1, sub)
		g.emit(
			asm.JEq.Imm(asm.R2, 0, match),
			asm.LoadMem(asm.R3, regScratch, int16(at), asm.DWord),
			asm.Add.Reg(asm.R3, asm.R1),
			asm.JGE.Imm(asm.R3, int32(str.width), mismatch),
		)
		g.loadByte(asm.R4, asm.R3, str)
		g.emit(asm.JNE.Reg(asm.R2, asm.R4, mismatch))
	})
}

// strposOf leaves in R0 the index of the first occurrence of sub in str,
// or -1.
func (g *gen) strposOf(str, sub value) {
	at, j := g.allocScratch(8), g.allocScratch(8)
	found, none, done := g.newLabel("strpos_found"), g.newLabel("strpos_none"), g.newLabel("strpos_done")
	g.setCell(at, 0)
	g.scan(at, str.width, none, func(string) {
		again := g.newLabel("strpos_again")
		g.matchAt(str, sub, at, j, found, again)
		g.mark(again)
		g.emit(asm.LoadMem(asm.R1, regScratch, int16(at), asm.DWord), asm.JGE.Imm(asm.R1, int32(str.width), none))
		g.loadByte(asm.R2, asm.R1, str)
		g.emit(asm.JEq.Imm(asm.R2, 0, none))
	})
	g.strposResult(at, found, none, done)
}

// maxLiteralSearch is the longest literal strposOfLiteral looks for; a
// longer one is searched for as any string is.
const maxLiteralSearch = 64

// strposOfLiteral is strposOf where sub is a literal of 1 to
// maxLiteralSearch bytes, none a NUL: at each index before str ends, the
// literal's bytes are xored with str's there and or-ed together, one test
// of the result instead of a loop over sub with three tests a byte. Where
// the verifier walks each iteration of a loop (no may_goto, Linux < 6.9)
// the inner loop's tests were branches left to explore, more than the
// verifier's 8192 for a search of a 512-byte string (isinstr(filename,
// "x") refused on every such kernel); here three tests an index remain. A
// match never reaches past str's end: its bytes are those of the literal,
// and the literal has no NUL.
func (g *gen) strposOfLiteral(str value, lit string) {
	if len(lit) >= str.width {
		g.emit(asm.Mov.Imm(asm.R0, -1)) // str holds width-1 bytes at most
		return
	}
	at := g.allocScratch(8)
	found, none, done := g.newLabel("strpos_found"), g.newLabel("strpos_none"), g.newLabel("strpos_done")
	g.setCell(at, 0)
	// the index stays below width-len+1, so that the literal's last byte is in str's slot
	g.scan(at, str.width-len(lit)+1, none, func(next string) {
		g.emit(
			asm.Mov.Reg(asm.R3, regScratch),
			asm.Add.Reg(asm.R3, asm.R1),
			asm.LoadMem(asm.R2, asm.R3, int16(str.off), asm.Byte),
			asm.JEq.Imm(asm.R2, 0, none),
			asm.Mov.Imm(asm.R4, 0),
		)
		for k := range len(lit) {
			g.emit(
				asm.LoadMem(asm.R2, asm.R3, int16(str.off+k), asm.Byte),
				asm.Xor.Imm(asm.R2, int32(lit[k])),
				asm.Or.Reg(asm.R4, asm.R2),
			)
		}
		g.emit(asm.JNE.Imm(asm.R4, 0, next), asm.Ja.Label(found))
	})
	g.strposResult(at, found, none, done)
}

// strposResult ends a search: at found, R0 = the index in cell at; at
// none, R0 = -1; both go on at done.
func (g *gen) strposResult(at int, found, none, done string) {
	g.mark(found)
	g.emit(asm.LoadMem(asm.R0, regScratch, int16(at), asm.DWord), asm.Ja.Label(done))
	g.mark(none)
	g.emit(asm.Mov.Imm(asm.R0, -1))
	g.mark(done)
}

// searchableLiteral tells whether e is a literal strposOfLiteral looks for.
func searchableLiteral(e syntax.Expr) (string, bool) {
	lit, ok := e.(*syntax.StringLit)
	if !ok || lit.Value == "" || len(lit.Value) > maxLiteralSearch || strings.IndexByte(lit.Value, 0) >= 0 {
		return "", false
	}
	return lit.Value, true
}

// strpos compiles strpos(s1, s2) and isinstr(s1, s2).
func (g *gen) strpos(c *syntax.Call) {
	mark := g.scratchMark()
	if lit, ok := searchableLiteral(c.Args[1]); ok {
		g.strposOfLiteral(g.str(c.Args[0]), lit)
	} else {
		g.strposOf(g.str(c.Args[0]), g.str(c.Args[1]))
	}
	g.scratchRelease(mark)
	if c.Name == "isinstr" {
		g.emit(asm.RSh.Imm(asm.R0, 63), asm.Xor.Imm(asm.R0, 1))
	}
}

// strReplace compiles str_replace(prnt_str, srch_str, rplc_str): every
// occurrence of srch_str in prnt_str, left to right, replaced by rplc_str,
// the result cut at MAXSTRINGLEN; prnt_str itself when srch_str is "".
// Bytes are written at an output index in a cell; a replacement is one
// bpf_probe_read_kernel_str copy to that index.
func (g *gen) strReplace(c *syntax.Call) value {
	// Twice the width, as concat's: the verifier bounds a copy at an
	// output index by the largest index plus the largest size.
	dst := value{str: true, off: g.allocScratch(2 * g.m.maxStr), width: g.m.maxStr}
	mark := g.scratchMark()
	p, s, r := g.str(c.Args[0]), g.str(c.Args[1]), g.str(c.Args[2])
	at, j, out := g.allocScratch(8), g.allocScratch(8), g.allocScratch(8)
	done, end, plain := g.newLabel("replace_done"), g.newLabel("replace_end"), g.newLabel("replace_plain")
	g.emit(asm.LoadMem(asm.R1, regScratch, int16(s.off), asm.Byte), asm.JEq.Imm(asm.R1, 0, plain))
	g.setCell(at, 0)
	g.setCell(out, 0)
	g.scan(at, p.width, end, func(next string) {
		match, keep := g.newLabel("replace_match"), g.newLabel("replace_keep")
		g.matchAt(p, s, at, j, match, keep)
		g.mark(match)
		g.replaceAt(dst, r, at, j, out, end)
		g.emit(asm.Ja.Label(next))
		g.mark(keep)
		g.keepByte(dst, p, at, out, end)
	})
	g.mark(end)
	g.emit(asm.LoadMem(asm.R1, regScratch, int16(out), asm.DWord), asm.JGE.Imm(asm.R1, int32(dst.width), done))
	g.emit(asm.Add.Reg(asm.R1, regScratch), asm.StoreImm(asm.R1, int16(dst.off), 0, asm.Byte), asm.Ja.Label(done))
	g.mark(plain)
	g.copyStr(dst, p)
	g.mark(done)
	g.scratchRelease(mark)
	return dst
}

// replaceAt copies r to the output index (cell out) of dst, moves it past
// r and the input index (cell at) past the match, whose length is in cell
// j; at the last output byte it jumps to end (what was written is cut
// there). The copy leaves the loop's next step to add the last 1.
func (g *gen) replaceAt(dst, r value, at, j, out int, end string) {
	g.emit(
		asm.LoadMem(asm.R0, regScratch, int16(out), asm.DWord),
		asm.JGE.Imm(asm.R0, int32(dst.width-1), end),
		asm.Add.Imm(asm.R0, 1), // the bytes held, as appendAt takes them
	)
	g.appendAt(dst, r)
	g.atLeastOne()
	g.emit(
		asm.Sub.Imm(asm.R0, 1),
		asm.LoadMem(asm.R1, regScratch, int16(out), asm.DWord),
		asm.Add.Reg(asm.R1, asm.R0),
		asm.StoreMem(regScratch, int16(out), asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, regScratch, int16(at), asm.DWord),
		asm.LoadMem(asm.R2, regScratch, int16(j), asm.DWord),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.Sub.Imm(asm.R1, 1),
		asm.StoreMem(regScratch, int16(at), asm.R1, asm.DWord),
	)
}

// keepByte copies the input's byte at the index in cell at to the output
// index (cell out) and moves that on; the input's NUL, or the output's
// last byte, jumps to end.
func (g *gen) keepByte(dst, p value, at, out int, end string) {
	g.emit(asm.LoadMem(asm.R1, regScratch, int16(at), asm.DWord), asm.JGE.Imm(asm.R1, int32(p.width), end))
	g.loadByte(asm.R2, asm.R1, p)
	g.emit(
		asm.JEq.Imm(asm.R2, 0, end),
		asm.LoadMem(asm.R1, regScratch, int16(out), asm.DWord),
		asm.JGE.Imm(asm.R1, int32(dst.width-1), end),
		asm.Mov.Reg(asm.R3, asm.R1),
		asm.Add.Imm(asm.R3, 1),
		asm.StoreMem(regScratch, int16(out), asm.R3, asm.DWord),
		asm.Add.Reg(asm.R1, regScratch),
		asm.StoreMem(asm.R1, int16(dst.off), asm.R2, asm.Byte),
	)
}
