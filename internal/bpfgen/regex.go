package bpfgen

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/regexdfa"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// Regular-expression matches (x =~ "re", x !~ "re") run the pattern's
// automaton (package regexdfa, built at compile time) over the string's
// characters.
//
// # Tables
//
// Every pattern of the module has its tables in RegexMap, an ARRAY of one
// value, read-only for programs and frozen once filled: at the pattern's
// base offset,
//
//	classes  128 bytes: twice the class of each ASCII character; the NUL's
//	         is the end of text
//	next     u16 per state and class (end of text last): the byte offset,
//	         from next, of the next state's row
//
// A state is the offset of its row, so a step is one load at
// base+128+row+2*class. Dead is row 0 and Match the row after it; every
// live state's row lies beyond, so one unsigned comparison with Match's
// row ends the search, at a NUL as at an early answer. The value is padded
// so that any u16 row plus any byte class stays inside it: the verifier
// then needs no bound checks against the table's own contents.
//
// # The loop
//
// The first regexUnroll characters are stepped without a loop, at
// constant indexes: that settles most names (execname()'s are at most 15
// bytes, and an anchored pattern's answer often comes at the first
// character) for a few instructions a character. What remains runs in an
// open-coded iterator (bpf_iter_num_new/next/destroy, kfuncs of Linux
// 6.4), which the verifier checks once whatever the number of iterations,
// rather than in a bounded loop, which it walks iteration by iteration:
// there, each character's branches (ASCII or not, answer or not) stay
// pending until the walk reaches the program's end, and a dozen matches
// of 512-byte strings in one probe exceeded the verifier's limit of 8192
// pending branches (TestRegexMany has 61). The iterator's checks converge only when what the
// iterations hand on is no constant: the row and the index live in two
// scratch cells, loaded afresh each iteration. An iteration steps up to
// regexUnroll ASCII characters, or one other:
//
//	R0 = row, R4 = index, R5 = the pattern's tables
//	R4 + regexUnroll <= width: R3 = &s[R4]; regexUnroll times, k = 0, 1, ...:
//	  R2 = R3[k]; >= 0x80: R4 += k, decode, step
//	  R0 = next[R0 + classes[R2]]; R0 <= Match: R4 += k+1, save
//	  (after the last: R4 += regexUnroll, save)
//	else one character: R2 = end of text; R4 >= width: step
//	  R2 = s[R4]; >= 0x80: decode, step; R4++; R2 = classes[R2]
//	step: R0 = next[R0 + R2]
//	save: cells = {R0, R4}; R0 > Match: next iteration
//
// The answer is R0 == Match, inverted for !~.
//
// A byte of 0x80 or more starts a UTF-8 sequence, decoded as
// utf8.DecodeRune decodes it (a byte that starts no valid sequence is one
// U+FFFD), since the interpreter's regexp reads runes: the decoded rune's
// class comes from a chain of comparisons with the pattern's non-ASCII
// intervals (one interval, no comparison, unless the pattern names
// non-ASCII characters). Continuation bytes past the slot's width count as
// missing: the string's NUL lies before them anyway. The loop charges no
// actions, as stap's matcher does not.

// regexUnroll is how many ASCII characters one iteration reads at most.
const regexUnroll = 8

// RegexMap is the name under which programs reference the automata.
const RegexMap = "regex"

// regexPad is what must follow a pattern's next table: any u16 row, a
// class byte and the two bytes loaded.
const regexPad = 0xffff + 0xff + 2

// regexTables returns the base offset in RegexMap of pattern's tables,
// adding them on first use.
func (m *Module) regexTables(pattern string, d *regexdfa.DFA) int {
	if base, ok := m.regexBase[pattern]; ok {
		return base
	}
	if m.regexBase == nil {
		m.regexBase = map[string]int{}
	}
	base := (len(m.regexData) + 7) &^ 7
	data := make([]byte, base-len(m.regexData)+utf8.RuneSelf+2*len(d.Next))
	tab := data[base-len(m.regexData):]
	for c, cls := range d.ASCII {
		tab[c] = 2 * cls
	}
	tab[0] = uint8(2 * d.Classes) // the NUL ends the text
	row := 2 * (d.Classes + 1)
	for i, s := range d.Next {
		binary.NativeEndian.PutUint16(tab[utf8.RuneSelf+2*i:], uint16(int(s)*row))
	}
	m.regexData = append(m.regexData, data...)
	m.regexBase[pattern] = base
	m.regexOrder = append(m.regexOrder, regexEntry{pattern, d})
	return base
}

// regexMapSpec describes RegexMap with its contents.
func (m *Module) regexMapSpec() *ebpf.MapSpec {
	size := (len(m.regexData) + regexPad + 7) &^ 7
	value := make([]byte, size)
	copy(value, m.regexData)
	return &ebpf.MapSpec{Name: "regex", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(size), MaxEntries: 1,
		Flags: unix.BPF_F_RDONLY_PROG, Contents: []ebpf.MapKV{{Key: uint32(0), Value: value}}}
}

// regexMatch compiles x =~ "re" and x !~ "re" into R0 (0 or 1). Uses
// R0-R5 and regRec.
func (g *gen) regexMatch(e *syntax.Binary) {
	lit := e.Y.(*syntax.StringLit) // the parser accepts nothing else
	g.search(e, e.X, lit, e.Op == "!~")
}

// search compiles whether the pattern lit holds matches the subject into
// R0, 0 or 1, inverted when negate; e is blamed when the kernel lacks the
// iterator, lit when the pattern has no automaton.
func (g *gen) search(e, subject syntax.Expr, lit *syntax.StringLit, negate bool) {
	pattern := lit.Value
	d, err := regexdfa.Compile(pattern)
	if err != nil {
		g.fail(lit, "%s", err) // as sema.RefusalNode blames
		return
	}
	if !g.needs(e.Position(), target.IterNum, "regular expression matching in a kernel probe") {
		return
	}
	ids, err := g.m.facts.iterNum()
	if err != nil {
		g.fail(e, "regular expression matching in a kernel probe needs the kernel's numeric iterator (bpf_iter_num_*, Linux 6.4): %v", err)
		return
	}
	mark := g.scratchMark()
	r := &reMatch{dfa: d, base: g.m.regexTables(pattern, d), s: g.str(subject), row: int32(2 * (d.Classes + 1))}
	r.match = r.row * regexdfa.Match
	r.cells = int16(g.allocScratch(16))
	iter := g.pushSlot()
	enter, answer := g.newLabel("re_enter"), g.newLabel("re_answer")
	g.regexFirst(r, enter, answer)
	g.mark(enter)
	g.regexLoop(r, ids, iter)
	g.popStack(8)
	g.scratchRelease(mark)
	g.mark(answer)
	yes, no := int32(1), int32(0)
	if negate {
		yes, no = 0, 1
	}
	done := g.newLabel("re_done")
	g.emit(asm.Mov.Imm(asm.R0, yes), asm.JEq.Imm(asm.R1, r.match, done), asm.Mov.Imm(asm.R0, no))
	g.mark(done)
}

// reMatch is one match being compiled.
type reMatch struct {
	dfa   *regexdfa.DFA
	base  int   // of its tables in RegexMap
	s     value // the subject
	row   int32 // bytes per state
	match int32 // Match's row
	cells int16 // scratch: the row, the index
}

// regexFirst steps through the first regexUnroll characters without a
// loop, with constant indexes, which settles most names (execname()'s
// are at most 15 bytes) without the iterator's three calls. It jumps to
// answer with the row in R1 when the automaton answers, to enter with the
// row in R0 and the index in R4 at the first character it cannot take (a
// non-ASCII one, the slot's end) or after the last.
func (g *gen) regexFirst(r *reMatch, enter, answer string) {
	final := g.newLabel("re_final")
	g.emit(
		asm.Mov.Imm(asm.R0, int32(r.dfa.Start)*r.row),
		numbered(asm.LoadMapValue(asm.R5, 0, uint32(r.base)), relocRegex).WithReference(RegexMap),
	)
	for k := range min(regexUnroll, r.s.width) {
		g.emit(
			asm.Mov.Imm(asm.R4, int32(k)),
			asm.LoadMem(asm.R2, regScratch, int16(r.s.off+k), asm.Byte),
			asm.JGE.Imm(asm.R2, utf8.RuneSelf, enter),
			asm.Mov.Reg(asm.R1, asm.R5),
			asm.Add.Reg(asm.R1, asm.R2),
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Byte),
			asm.Mov.Reg(asm.R1, asm.R5),
			asm.Add.Reg(asm.R1, asm.R0),
			asm.Add.Reg(asm.R1, asm.R2),
			asm.LoadMem(asm.R0, asm.R1, utf8.RuneSelf, asm.Half),
			asm.JLE.Imm(asm.R0, r.match, final),
		)
	}
	g.emit(asm.Mov.Imm(asm.R4, int32(min(regexUnroll, r.s.width))), asm.Ja.Label(enter))
	g.mark(final)
	g.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.Ja.Label(answer))
}

// regexLoop steps from the row in R0 and the index in R4 to the answer,
// regexUnroll ASCII characters or one other per iteration, and leaves the
// final row in R1.
func (g *gen) regexLoop(r *reMatch, ids iterNumIDs, iter int16) {
	loop, decode, step, save, end := g.newLabel("re_loop"), g.newLabel("re_decode"), g.newLabel("re_step"),
		g.newLabel("re_save"), g.newLabel("re_end")
	g.emit(
		asm.StoreMem(regScratch, r.cells, asm.R0, asm.DWord),
		asm.StoreMem(regScratch, r.cells+8, asm.R4, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(iter)),
		asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Imm(asm.R3, int32(r.s.width+1)),
		kernel.KfuncCall(ids.new),
	)
	g.mark(loop)
	g.emit(
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(iter)),
		kernel.KfuncCall(ids.next),
		asm.JEq.Imm(asm.R0, 0, end),
		asm.LoadMem(asm.R4, regScratch, r.cells+8, asm.DWord),
		asm.LoadMem(asm.R0, regScratch, r.cells, asm.DWord),
		asm.And.Imm(asm.R0, 0xffff),
		numbered(asm.LoadMapValue(asm.R5, 0, uint32(r.base)), relocRegex).WithReference(RegexMap),
	)
	if r.s.width > regexUnroll {
		g.regexRun(r, save, decode)
	}
	// Near the slot's end, one character an iteration, the end of the
	// slot standing for the end of text.
	g.emit(
		asm.Mov.Imm(asm.R2, int32(2*r.dfa.Classes)),
		asm.JGE.Imm(asm.R4, int32(r.s.width), step),
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Reg(asm.R1, asm.R4),
		asm.LoadMem(asm.R2, asm.R1, int16(r.s.off), asm.Byte),
		asm.JGE.Imm(asm.R2, utf8.RuneSelf, decode),
		asm.Add.Imm(asm.R4, 1),
		asm.Mov.Reg(asm.R1, asm.R5),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Byte),
		asm.Ja.Label(step),
	)
	g.mark(decode)
	g.decodeRune(r.s)
	g.classify(r.dfa, step)
	g.mark(step)
	g.emit(
		asm.Mov.Reg(asm.R1, asm.R5),
		asm.Add.Reg(asm.R1, asm.R0),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.LoadMem(asm.R0, asm.R1, utf8.RuneSelf, asm.Half),
	)
	g.mark(save)
	g.emit(
		asm.StoreMem(regScratch, r.cells, asm.R0, asm.DWord),
		asm.StoreMem(regScratch, r.cells+8, asm.R4, asm.DWord),
		asm.JGT.Imm(asm.R0, r.match, loop),
	)
	g.mark(end)
	g.emit(
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(iter)),
		kernel.KfuncCall(ids.destroy),
		asm.LoadMem(asm.R1, regScratch, r.cells, asm.DWord),
	)
}

// regexRun steps through the regexUnroll characters from index R4 when
// they all lie inside the slot, at constant offsets from one pointer:
// eight instructions a character. It goes to save with the index after
// the last character stepped, to decode with the index of a non-ASCII one,
// and falls through when the run does not fit.
func (g *gen) regexRun(r *reMatch, save, decode string) {
	short := g.newLabel("re_short")
	g.emit(
		asm.JGT.Imm(asm.R4, int32(r.s.width-regexUnroll), short),
		asm.Mov.Reg(asm.R3, regScratch),
		asm.Add.Reg(asm.R3, asm.R4),
	)
	var stubs []func()
	for k := range regexUnroll {
		dec, stepped := g.newLabel("re_dec"), g.newLabel("re_stepped")
		g.emit(
			asm.LoadMem(asm.R2, asm.R3, int16(r.s.off+k), asm.Byte),
			asm.JGE.Imm(asm.R2, utf8.RuneSelf, dec),
			asm.Add.Reg(asm.R2, asm.R5),
			asm.LoadMem(asm.R2, asm.R2, 0, asm.Byte),
			asm.Add.Reg(asm.R2, asm.R5),
			asm.Add.Reg(asm.R2, asm.R0),
			asm.LoadMem(asm.R0, asm.R2, utf8.RuneSelf, asm.Half),
			asm.JLE.Imm(asm.R0, r.match, stepped),
		)
		stubs = append(stubs, func() {
			g.mark(dec)
			g.emit(asm.Add.Imm(asm.R4, int32(k)), asm.Ja.Label(decode))
			g.mark(stepped)
			g.emit(asm.Add.Imm(asm.R4, int32(k+1)), asm.Ja.Label(save))
		})
	}
	g.emit(asm.Add.Imm(asm.R4, regexUnroll), asm.Ja.Label(save))
	for _, stub := range stubs {
		stub()
	}
	g.mark(short)
}

// decodeRune decodes the UTF-8 sequence whose first byte (0x80 or more)
// is in R2 at string index R4, as utf8.DecodeRune does: the rune in R3,
// R4 advanced past it. Uses R1 and regRec.
func (g *gen) decodeRune(s value) {
	invalid, ok1, rune2, classify := g.newLabel("utf8_bad"), g.newLabel("utf8_ok1"),
		g.newLabel("utf8_2"), g.newLabel("utf8_rune")
	// cont loads continuation byte k into regRec, or jumps to invalid when
	// it lies past the slot or is no continuation byte in [lo, hi].
	cont := func(k int32, lo, hi int32) {
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R4),
			asm.Add.Imm(asm.R1, k),
			asm.JGE.Imm(asm.R1, int32(s.width), invalid),
			asm.Add.Reg(asm.R1, regScratch),
			asm.LoadMem(regRec, asm.R1, int16(s.off), asm.Byte),
			asm.JLT.Imm(regRec, lo, invalid),
			asm.JGT.Imm(regRec, hi, invalid),
			asm.And.Imm(regRec, 0x3f),
			asm.LSh.Imm(asm.R3, 6),
			asm.Or.Reg(asm.R3, regRec),
		)
	}
	g.emit(
		asm.JLT.Imm(asm.R2, 0xc2, invalid),
		asm.JGT.Imm(asm.R2, 0xf4, invalid),
		// The first byte's payload bits: 5, 4 or 3 of them.
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.And.Imm(asm.R3, 0x1f),
		asm.JLT.Imm(asm.R2, 0xe0, ok1),
		asm.And.Imm(asm.R3, 0x0f),
		asm.JLT.Imm(asm.R2, 0xf0, ok1),
		asm.And.Imm(asm.R3, 0x07),
	)
	g.mark(ok1)
	// The second byte's range depends on the first (no overlong forms, no
	// surrogates, nothing past U+10FFFF).
	second := func(first, lo, hi int32) {
		skip := g.newLabel("utf8_lead")
		g.emit(asm.JNE.Imm(asm.R2, first, skip))
		cont(1, lo, hi)
		g.emit(asm.Ja.Label(rune2))
		g.mark(skip)
	}
	second(0xe0, 0xa0, 0xbf)
	second(0xed, 0x80, 0x9f)
	second(0xf0, 0x90, 0xbf)
	second(0xf4, 0x80, 0x8f)
	cont(1, 0x80, 0xbf)
	g.mark(rune2)
	done2 := g.newLabel("utf8_done")
	g.emit(asm.Mov.Imm(regRec, 2), asm.JLT.Imm(asm.R2, 0xe0, done2))
	cont(2, 0x80, 0xbf)
	g.emit(asm.Mov.Imm(regRec, 3), asm.JLT.Imm(asm.R2, 0xf0, done2))
	cont(3, 0x80, 0xbf)
	g.emit(asm.Mov.Imm(regRec, 4))
	g.mark(done2)
	g.emit(asm.Add.Reg(asm.R4, regRec), asm.Ja.Label(classify))
	g.mark(invalid)
	g.emit(asm.Mov.Imm(asm.R3, utf8.RuneError), asm.Add.Imm(asm.R4, 1))
	g.mark(classify)
}

// classify sets R2 to twice the class of the non-ASCII rune in R3 and
// jumps to step.
func (g *gen) classify(d *regexdfa.DFA, step string) {
	for _, iv := range d.Upper[:len(d.Upper)-1] {
		next := g.newLabel("re_class")
		g.emit(
			asm.JGT.Imm(asm.R3, int32(iv.Hi), next),
			asm.Mov.Imm(asm.R2, 2*int32(iv.Class)),
			asm.Ja.Label(step),
		)
		g.mark(next)
	}
	g.emit(asm.Mov.Imm(asm.R2, 2*int32(d.Upper[len(d.Upper)-1].Class)), asm.Ja.Label(step))
}
