package bpfgen

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// sprintf, sprint, sprintln, sprintd and sprintdln compile to a formatter
// written in BPF that renders exactly as format.Format.Sprint does, with
// the room of MAXSTRINGLEN (L below).
//
// # Layout
//
// Each call owns a scratch region:
//
//	out    2L+8 bytes: the result in the first L; the rest is room the
//	       verifier needs (see below) and a staging area for %s
//	stage  2*digitRoom bytes: a number's digits, right-aligned in the
//	       first digitRoom, or an escaped %c
//	table  "0123456789abcdef0123456789ABCDEF"
//	cells  longs: the position, the directive's width, precision, the
//	       length of its text, a number's sign and value
//
// The arguments are evaluated first (longs to scratch cells, not to the
// stack, which a pretty-printed $$parms$$ of 60 values would overflow;
// strings to scratch slots, as print does), then the directives run in order, then a
// NUL ends the result at min(position, L-1): a string value holds at most
// L-1 bytes, and a NUL written earlier (%0s, %c of 0, a literal's \0)
// ends it sooner, as it ends the interpreter's string.
//
// # Writing
//
// Every write goes through four primitives, each clipped to the room left
// (L minus the position) exactly as the runtime's writer clips: put (one
// byte), pad (R2 copies of a byte, a bounded loop), copy (R2 bytes from a
// scratch address, bpf_probe_read_kernel) and literal (8-byte immediate
// stores). Widths and precisions are clamped when the directive starts:
// their low 32 bits as a signed int, at least 0, at most the room left.
//
// # Keeping the verifier's work linear
//
// All state between primitives lives in the cells, never in registers or
// on the stack: a value loaded from a map value is a fresh unknown scalar,
// bounded again by a comparison with a constant. So the paths that fork
// inside a primitive (a loop's exit at each iteration, a sign, an escape)
// leave nothing behind that differs, and the verifier prunes them where
// they join. The bounds it proves are a variable position in [0, L] plus
// a variable count in [0, L], hence the 2L bytes of out and the doubled
// digit stage: it does not know that their sum is at most L.
const (
	cellPos   = iota * 8 // bytes written so far, at most L
	cellWidth            // the directive's width, clamped
	cellPrec             // its precision, clamped
	cellLen              // the length of its text: string bytes, digits, %c bytes
	cellSign             // a number's sign character, 0 for none
	cellNum              // a number's magnitude
	cellsSize
)

// digitRoom holds the most digits of a 64-bit number (22, in octal).
const digitRoom = 24

// digitTable is indexed by a digit's value, +16 for upper case.
const digitTable = "0123456789abcdef0123456789ABCDEF"

// sprint is one sprintf call being compiled.
type sprint struct {
	g     *gen
	limit int // MAXSTRINGLEN
	// out is at outReg+out; stage, table and cells at work+stage... (both
	// the scratch area in a formatter, the arguments of a directive's
	// subprogram in one: see numberSubprog).
	outReg, work             asm.Register
	out, stage, table, cells int
	// The directive being compiled: has a width, a precision, the '-' flag;
	// the most padding its width and its precision can ask for (a static
	// one's value, else L): the verifier walks a pad loop as many times.
	hasWidth, hasPrec, isLeft bool
	widthMost, precMost       int
}

// sprintArg is where an evaluated argument is: a string's slot or a
// long's scratch cell (sprintLong).
type sprintArg struct {
	str  value
	cell int16
}

// sprintLong keeps the long in R0, argument at of a formatter, in a
// scratch cell.
func (g *gen) sprintLong(at syntax.Node) sprintArg {
	off := g.allocScratch(8)
	if off+8 > math.MaxInt16 {
		g.fail(at, "a formatter's arguments need scratch space up to offset %d, beyond the %d a BPF instruction reaches (MAXSTRINGLEN is %d)",
			off+8, math.MaxInt16, g.m.maxStr)
		off = 0
	}
	g.emit(asm.StoreMem(regScratch, int16(off), asm.R0, asm.DWord))
	return sprintArg{cell: int16(off)}
}

// longAt is where a formatter reads a long: a scratch cell, or a number
// subprogram's stack slot.
type longAt struct {
	base asm.Register
	off  int16
}

func (a sprintArg) long() longAt { return longAt{regScratch, a.cell} }

func (l longAt) load(dst asm.Register) asm.Instruction {
	return asm.LoadMem(dst, l.base, l.off, asm.DWord)
}

// sprintf compiles a print-family call returning a string into a slot of
// MAXSTRINGLEN bytes.
func (g *gen) sprintf(e *syntax.PrintCall) value { return g.sprintfInto(e, value{}) }

// sprintfInto is sprintf rendering into dst when dst has a formatter's
// room (a local that value.sprintRoom marks), else into a new slot.
func (g *gen) sprintfInto(e *syntax.PrintCall, dst value) value {
	f, err := sema.PrintFormat(e)
	if err != nil {
		g.fail(e, "%v", err)
		return g.strSlot(8)
	}
	if !g.sprintable(e, f) {
		return g.strSlot(8)
	}
	format := func() value {
		return g.formatInto(e, e.Name+"()", f, func() []sprintArg { return g.sprintArgs(e.Args) }, dst)
	}
	if e.OnFault == "" {
		return format()
	}
	return g.onFault(e.OnFault, format)
}

// onFault compiles the string value of compute, or text where an error
// raised in it jumps (a try block of its own: try.go).
func (g *gen) onFault(text string, compute func() value) value {
	t := &tryBlock{catch: g.newLabel("fault")}
	g.tries = append(g.tries, t)
	stack := g.stack
	v := compute()
	g.tries = g.tries[:len(g.tries)-1]
	if t.used {
		done := g.newLabel("end_fault")
		g.emit(asm.Ja.Label(done))
		g.mark(t.catch)
		g.stack = stack
		g.storeLit(v.off, []byte(text))
		g.mark(done)
	}
	return v
}

// format renders f into a new slot of MAXSTRINGLEN bytes with the
// arguments args evaluates (in order, after the slots are laid out); what
// names the construct in errors at n.
func (g *gen) format(n syntax.Node, what string, f *format.Format, args func() []sprintArg) value {
	return g.formatInto(n, what, f, args, value{})
}

// sprintRoom is the bytes a formatter writes in: 2L+8 for MAXSTRINGLEN L
// (see "Keeping the verifier's work linear").
func sprintRoom(limit int) int { return 2*limit + 8 }

// formatInto is format rendering into dst when dst.sprintRoom.
func (g *gen) formatInto(n syntax.Node, what string, f *format.Format, args func() []sprintArg, dst value) value {
	s := &sprint{g: g, limit: g.m.maxStr, outReg: regScratch, work: regScratch}
	if dst.sprintRoom {
		s.out = dst.off
	} else {
		s.out = g.allocScratch(sprintRoom(s.limit))
	}
	s.stage = g.allocScratch(2 * digitRoom)
	s.table = g.allocScratch(len(digitTable))
	s.cells = g.allocScratch(cellsSize)
	if end := s.cells + cellsSize; end > math.MaxInt16 {
		g.fail(n, "%s needs scratch space up to offset %d, beyond the %d a BPF instruction reaches (MAXSTRINGLEN is %d)",
			what, end, math.MaxInt16, s.limit)
	}
	mark, stack := g.scratchMark(), g.stack
	s.run(f, args())
	g.scratchRelease(mark)
	g.stack = stack
	return value{str: true, off: s.out, width: s.limit}
}

// contextString compiles $$name and $$provider (constants, but for the
// points of a set: pointText) and $$parms/$$vars: stap's
// "NAME=%p NAME=%#x ..." of the attach point's arguments, as sema
// described it (Access.Format, one argument per parameter).
func (g *gen) contextString(e syntax.Expr, acc *probes.Access) value {
	if v, ok := e.(*syntax.TargetVar); ok && v.Name == "$$name" {
		return g.pointText(columnName, acc.Name)
	}
	if acc.Format == "" {
		return g.strLit(acc.Name)
	}
	f, err := format.Compile(acc.Format)
	if err != nil {
		g.fail(e, "%s: %v", syntax.ExprString(e), err)
		return g.strSlot(8)
	}
	return g.format(e, syntax.ExprString(e), f, func() []sprintArg {
		var out []sprintArg
		for _, a := range acc.Args {
			g.loadArg(a.Param, e.Position())
			out = append(out, g.sprintLong(e))
		}
		return out
	})
}

// sprintable refuses, at the format's position, the conversions the BPF
// formatter does not do: %b (raw bytes), %m and %M (memory dumps).
func (g *gen) sprintable(e *syntax.PrintCall, f *format.Format) bool {
	for _, d := range f.Directives() {
		switch d.Verb {
		case 'b', 'm', 'M':
			var at syntax.Node = e
			if e.Format != nil {
				at = e.Format
			}
			g.fail(at, "conversion %%%c of %s() cannot be compiled in a kernel probe", d.Verb, e.Name)
			return false
		}
	}
	return true
}

// sprintArgs evaluates the arguments in order.
func (g *gen) sprintArgs(args []syntax.Expr) []sprintArg {
	var out []sprintArg
	for _, a := range args {
		if a.Type() == syntax.TypeString {
			out = append(out, sprintArg{str: g.str(a)})
			continue
		}
		g.long(a)
		out = append(out, g.sprintLong(a))
	}
	return out
}

// run renders the directives, taking their arguments in order.
func (s *sprint) run(f *format.Format, args []sprintArg) {
	s.setCell(cellPos, 0)
	s.loadTable(f)
	next := 0
	take := func() sprintArg {
		next++
		return args[next-1]
	}
	for _, d := range f.Directives() {
		if d.Verb == 0 {
			s.literal(d.Text)
			continue
		}
		s.hasWidth, s.hasPrec = d.WidthArg || d.Width >= 0, d.PrecArg || d.Prec >= 0
		s.isLeft = d.Flags&format.FlagLeft != 0
		s.widthMost, s.precMost = s.staticMost(d.WidthArg, d.Width), s.staticMost(d.PrecArg, d.Prec)
		if s.hasWidth {
			s.clamp(cellWidth, d.WidthArg, d.Width, take)
		}
		if s.hasPrec {
			s.clamp(cellPrec, d.PrecArg, d.Prec, take)
		}
		switch a := take(); d.Verb {
		case 's':
			s.str(d, a.str)
		case 'c':
			s.char(d, a.long())
		default:
			s.numberCall(d, a.long())
		}
	}
	s.terminate()
}

// staticMost is the most padding a width or precision can ask for: its
// value when the format gives it, else L.
func (s *sprint) staticMost(fromArg bool, static int) int {
	if fromArg || static < 0 {
		return s.limit
	}
	return min(static, s.limit)
}

// loadTable stores the digit table when the format converts numbers.
func (s *sprint) loadTable(f *format.Format) {
	for _, d := range f.Directives() {
		if d.Verb != 0 && d.Verb != 's' && d.Verb != 'c' {
			s.storeBytes(regScratch, s.table, []byte(digitTable))
			return
		}
	}
}

// storeBytes stores b at base+off with 8-byte immediate stores (the last
// one padded with zeros).
func (s *sprint) storeBytes(base asm.Register, off int, b []byte) {
	padded := make([]byte, (len(b)+7)&^7)
	copy(padded, b)
	for i := 0; i < len(padded); i += 8 {
		s.g.emit(
			asm.LoadImm(asm.R3, int64(binary.NativeEndian.Uint64(padded[i:])), asm.DWord),
			asm.StoreMem(base, int16(off+i), asm.R3, asm.DWord),
		)
	}
}

// load and store move a cell to and from a register.
func (s *sprint) load(r asm.Register, cell int) {
	s.g.emit(asm.LoadMem(r, s.work, int16(s.cells+cell), asm.DWord))
}

func (s *sprint) store(cell int, r asm.Register) {
	s.g.emit(asm.StoreMem(s.work, int16(s.cells+cell), r, asm.DWord))
}

// atMost bounds r (unsigned) by the constant n.
func (s *sprint) atMost(r asm.Register, n int) {
	s.fixUp(func(fix string) asm.Instruction { return asm.JGT.Imm(r, int32(n), fix) }, asm.Mov.Imm(r, int32(n)))
}

// atMostReg bounds dst (unsigned) by src.
func (s *sprint) atMostReg(dst, src asm.Register) {
	s.fixUp(func(fix string) asm.Instruction { return asm.JGT.Reg(dst, src, fix) }, asm.Mov.Reg(dst, src))
}

// fixUp emits jump to an out-of-line fix that rejoins the code after the
// jump. The verifier walks the fall-through path first, with the widest
// range; the fixed value, inside it, is then pruned where they join
// instead of being explored again (through a pad loop, say).
func (s *sprint) fixUp(jump func(fix string) asm.Instruction, fix ...asm.Instruction) {
	g := s.g
	label, back := g.newLabel("sp_fix"), g.newLabel("sp_back")
	g.emit(jump(label))
	g.mark(back)
	at := g.cur
	g.tails = append(g.tails, func() {
		g.cur = at
		g.mark(label)
		g.emit(fix...)
		g.emit(asm.Ja.Label(back))
	})
}

// loadPos loads the position into r, bounded by L for the verifier.
func (s *sprint) loadPos(r asm.Register) {
	s.load(r, cellPos)
	s.atMost(r, s.limit)
}

// room leaves in dst the room left, L minus the position in pos.
func (s *sprint) room(dst, pos asm.Register) {
	s.g.emit(asm.Mov.Imm(dst, int32(s.limit)), asm.Sub.Reg(dst, pos))
}

// clamp stores in cell a width or precision as the runtime clamps it: the
// argument's (or the static value's) low 32 bits as a signed int, at least
// 0, at most the room left when the directive starts.
func (s *sprint) clamp(cell int, fromArg bool, static int, take func() sprintArg) {
	g := s.g
	if fromArg {
		nonneg := g.newLabel("sp_nonneg")
		g.emit(
			asm.LoadMem(asm.R0, regScratch, take().cell, asm.DWord),
			asm.LSh.Imm(asm.R0, 32),
			asm.ArSh.Imm(asm.R0, 32),
			asm.JSGE.Imm(asm.R0, 0, nonneg),
			asm.Mov.Imm(asm.R0, 0),
		)
		g.mark(nonneg)
	} else {
		g.emit(asm.Mov.Imm(asm.R0, max(int32(static), 0)))
	}
	s.loadPos(asm.R1)
	s.room(asm.R2, asm.R1)
	s.atMostReg(asm.R0, asm.R2)
	s.store(cell, asm.R0)
}

// reserve starts a write of R2 bytes (signed): R2 is cut to most and to
// the room left, the position advanced past it, and R1 left pointing at
// the first byte (out excluded: stores add s.out). When nothing is to be
// written it jumps to done. Uses R4.
func (s *sprint) reserve(most int, done string) {
	g := s.g
	g.emit(asm.JSLE.Imm(asm.R2, 0, done))
	s.atMost(asm.R2, min(most, s.limit))
	s.reserveRoom(done)
}

// reserveRoom is reserve once R2 is known to be in [1, L]: it cuts R2 to
// the room left. (A check the verifier can decide leaves dead code, and
// each stretch of it costs the verifier a pass over the whole program.)
func (s *sprint) reserveRoom(done string) {
	g := s.g
	s.loadPos(asm.R1)
	s.room(asm.R4, asm.R1)
	s.atMostReg(asm.R2, asm.R4)
	g.emit(
		asm.JEq.Imm(asm.R2, 0, done),
		asm.Mov.Reg(asm.R4, asm.R1),
		asm.Add.Reg(asm.R4, asm.R2),
	)
	s.store(cellPos, asm.R4)
	g.emit(asm.Add.Reg(asm.R1, s.outReg))
}

// put writes one byte, c or (when fromR0) R0's low byte, if there is room.
func (s *sprint) put(c byte, fromR0 bool) {
	done := s.g.newLabel("sp_put")
	s.g.emit(asm.Mov.Imm(asm.R2, 1))
	s.reserveRoom(done)
	if fromR0 {
		s.g.emit(asm.StoreMem(asm.R1, int16(s.out), asm.R0, asm.Byte))
	} else {
		s.g.emit(asm.StoreImm(asm.R1, int16(s.out), int64(c), asm.Byte))
	}
	s.g.mark(done)
}

// pad writes R2 (signed) copies of c, at most most, as many as fit: a
// loop the verifier walks at most most times. The loop is a do-while whose exit is the
// fall-through: the verifier follows the exit first and keeps one pending
// iteration at a time, not one pending exit per iteration (it allows 8192).
func (s *sprint) pad(c byte, most int) {
	g := s.g
	top, done := g.newLabel("sp_pad"), g.newLabel("sp_padded")
	s.reserve(most, done)
	g.mark(top)
	g.emit(
		asm.StoreImm(asm.R1, int16(s.out), int64(c), asm.Byte),
		asm.Add.Imm(asm.R1, 1),
		asm.Sub.Imm(asm.R2, 1),
		asm.JSGT.Imm(asm.R2, 0, top), // not JNE: before 6.7 the verifier learns nothing from != 0 where R2 may be 0 or 1
	)
	g.mark(done)
}

// copy writes R2 (signed) bytes, at most most, from the scratch address
// src leaves in R3 (using only R0 and R3), as many as fit.
func (s *sprint) copy(most int, src func()) {
	done := s.g.newLabel("sp_copied")
	s.reserve(most, done)
	s.g.emit(asm.Add.Imm(asm.R1, int32(s.out)))
	src()
	s.g.emit(asm.FnProbeReadKernel.Call())
	s.g.mark(done)
}

// copyDigits writes the R2 staged digits (signed, at most digitRoom) as
// copy does, without a helper call: three 8-byte loads and stores move
// digitRoom bytes from the first digit, and what lands past the digits is
// overwritten by the next write or lies past the end. (The stage is
// doubled and out holds 2L+8 bytes, so with L at least digitRoom both
// stay in bounds.)
func (s *sprint) copyDigits() {
	done := s.g.newLabel("sp_copied")
	s.reserve(digitRoom, done)
	s.digitsAddr()
	for off := 0; off < digitRoom; off += 8 {
		s.g.emit(
			asm.LoadMem(asm.R0, asm.R3, int16(off), asm.DWord),
			asm.StoreMem(asm.R1, int16(s.out+off), asm.R0, asm.DWord),
		)
	}
	s.g.mark(done)
}

// literal writes text: 8-byte stores of its first L bytes (past L they
// could not show), the position advanced by its length up to L.
func (s *sprint) literal(text string) {
	g := s.g
	b := []byte(text)
	if len(b) > s.limit {
		b = b[:s.limit]
	}
	s.loadPos(asm.R1)
	// R2 = len + R1, not R1 + len: a copy plus a constant links the two
	// registers, and 6.12's verifier, having deduced R1 from R2's bound on
	// the fix-up path, makes R1 + R9 below a scalar.
	g.emit(asm.Mov.Imm(asm.R2, int32(len(b))), asm.Add.Reg(asm.R2, asm.R1))
	s.atMost(asm.R2, s.limit)
	s.store(cellPos, asm.R2)
	g.emit(asm.Add.Reg(asm.R1, regScratch))
	s.storeBytes(asm.R1, s.out, b)
}

// terminate ends the string at min(position, L-1).
func (s *sprint) terminate() {
	s.load(asm.R1, cellPos)
	s.atMost(asm.R1, s.limit-1)
	s.g.emit(
		asm.Add.Reg(asm.R1, regScratch),
		asm.StoreImm(asm.R1, int16(s.out), 0, asm.Byte),
	)
}

// minusLen subtracts the text's length from R2.
func (s *sprint) minusLen() {
	s.load(asm.R0, cellLen)
	s.g.emit(asm.Sub.Reg(asm.R2, asm.R0))
}

// field writes the cellLen bytes at the address src leaves in R3, at most
// most, padded with spaces to the width: on the left, or on the right
// under '-' (the layout of %s and %c).
func (s *sprint) field(most int, src func()) {
	spaces := func() {
		s.load(asm.R2, cellWidth)
		s.minusLen()
		s.pad(' ', s.widthMost)
	}
	if s.hasWidth && !s.isLeft {
		spaces()
	}
	s.load(asm.R2, cellLen)
	s.copy(most, src)
	if s.hasWidth && s.isLeft {
		spaces()
	}
}

// str writes a %s: its length is what bpf_probe_read_kernel_str copies
// into the staging half of out, cut to the precision; under '0' a NUL
// follows (and ends the result).
func (s *sprint) str(d format.Directive, v value) {
	if !s.hasWidth && !s.hasPrec && d.Flags == 0 {
		s.plainStr(v)
		return
	}
	g := s.g
	g.emit(
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(s.out+s.limit)),
		asm.Mov.Imm(asm.R2, int32(min(v.width, s.limit))),
	)
	s.g.scratchAddr(v.off)()
	positive := g.newLabel("sp_len")
	g.emit(
		asm.FnProbeReadKernelStr.Call(),
		asm.JSGT.Imm(asm.R0, 0, positive),
		asm.Mov.Imm(asm.R0, 1),
	)
	g.mark(positive)
	g.emit(asm.Sub.Imm(asm.R0, 1))
	if s.hasPrec {
		s.load(asm.R1, cellPrec)
		s.atMostReg(asm.R0, asm.R1)
	}
	s.store(cellLen, asm.R0)
	s.field(v.width, s.g.scratchAddr(v.off))
	if d.Flags&format.FlagZero != 0 {
		s.put(0, false)
	}
}

// plainStr writes a %s with no width, precision or flag (argstr's
// usual one): bpf_probe_read_kernel_str copies the string straight to the
// position, at most the room left and its NUL, and the position advances
// by the length copied; one helper call where a field takes two. The
// destination lies in [out, out+L] and the size in [1, L+1]: within the
// 2L+8 bytes of out, as the verifier needs.
func (s *sprint) plainStr(v value) {
	g := s.g
	done := g.newLabel("sp_plain")
	s.loadPos(asm.R1)
	s.room(asm.R2, asm.R1)
	g.emit(
		asm.Add.Imm(asm.R2, 1),
		asm.Add.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(s.out)),
		asm.Mov.Reg(asm.R3, regScratch),
		asm.Add.Imm(asm.R3, int32(v.off)),
		asm.FnProbeReadKernelStr.Call(),
		asm.JSLE.Imm(asm.R0, 1, done),
		asm.Sub.Imm(asm.R0, 1),
	)
	s.loadPos(asm.R1)
	g.emit(asm.Add.Reg(asm.R1, asm.R0))
	s.atMost(asm.R1, s.limit)
	s.store(cellPos, asm.R1)
	g.mark(done)
}

// char writes a %c: the argument's low byte, or under '#' its C escape
// (the runtime's rules: \' \\ and the letter escapes of control
// characters, \ooo for the other bytes outside printable ASCII).
func (s *sprint) char(d format.Directive, v longAt) {
	g := s.g
	g.emit(
		v.load(asm.R0),
		asm.And.Imm(asm.R0, 0xff),
	)
	if d.Flags&format.FlagSpecial != 0 {
		s.escape()
	} else {
		g.emit(asm.StoreMem(regScratch, int16(s.stage), asm.R0, asm.Byte))
		s.setLen(1)
	}
	s.field(4, s.g.scratchAddr(s.stage))
}

// setLen stores a constant text length.
func (s *sprint) setLen(n int) { s.setCell(cellLen, int32(n)) }

// setCell stores a constant in a cell, through R5.
func (s *sprint) setCell(cell int, v int32) {
	s.g.emit(asm.Mov.Imm(asm.R5, v))
	s.store(cell, asm.R5)
}

// letterEscapes are the bytes %#c writes as a backslash and a letter.
var letterEscapes = []struct{ c, letter byte }{
	{'\a', 'a'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'},
	{'\t', 't'}, {'\v', 'v'}, {'\'', '\''}, {'\\', '\\'},
}

// escape stages the escape of the byte in R0 and its length.
func (s *sprint) escape() {
	g := s.g
	done, octal := g.newLabel("sp_esc"), g.newLabel("sp_octal")
	var letters []string
	for _, e := range letterEscapes {
		l := g.newLabel("sp_letter")
		letters = append(letters, l)
		g.emit(asm.JEq.Imm(asm.R0, int32(e.c), l))
	}
	g.emit(
		asm.JLT.Imm(asm.R0, ' ', octal),
		asm.JGT.Imm(asm.R0, '~', octal),
		asm.StoreMem(regScratch, int16(s.stage), asm.R0, asm.Byte),
	)
	s.setLen(1)
	g.emit(asm.Ja.Label(done))
	for i, e := range letterEscapes {
		g.mark(letters[i])
		g.emit(
			asm.StoreImm(regScratch, int16(s.stage), '\\', asm.Byte),
			asm.StoreImm(regScratch, int16(s.stage+1), int64(e.letter), asm.Byte),
		)
		s.setLen(2)
		g.emit(asm.Ja.Label(done))
	}
	g.mark(octal)
	g.emit(asm.StoreImm(regScratch, int16(s.stage), '\\', asm.Byte))
	for i, shift := range []int32{6, 3, 0} {
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.RSh.Imm(asm.R1, shift),
			asm.And.Imm(asm.R1, 7),
			asm.Add.Imm(asm.R1, '0'),
			asm.StoreMem(regScratch, int16(s.stage+1+i), asm.R1, asm.Byte),
		)
	}
	s.setLen(4)
	g.mark(done)
}

// base is the radix of an integer conversion.
func base(verb byte) int {
	switch verb {
	case 'o':
		return 8
	case 'x', 'X', 'p':
		return 16
	}
	return 10
}

// number writes an integer conversion as the runtime's number() does
// (format.appendNumber): [spaces] [sign] [0x or 0 under '#'] [zeros to the
// width under '0'] [zeros to the precision] digits [spaces under '-'].
func (s *sprint) number(d format.Directive, v longAt) {
	flags := d.Flags
	if s.isLeft {
		flags &^= format.FlagZero
	}
	s.digits(d, v)
	b := base(d.Verb)
	var prefix []byte
	if flags&format.FlagSpecial != 0 && b != 10 {
		prefix = []byte{'0'}
		if b == 16 {
			prefix = append(prefix, "xX"[boolInt(flags&format.FlagLarge != 0)])
		}
	}
	size := func() {
		s.load(asm.R2, cellWidth)
		s.numberSize(flags, len(prefix))
	}
	if s.hasWidth && flags&(format.FlagZero|format.FlagLeft) == 0 {
		size()
		s.pad(' ', s.widthMost)
	}
	if flags&format.FlagSign != 0 {
		s.putSign()
	}
	for _, c := range prefix {
		s.put(c, false)
	}
	if s.hasWidth && flags&format.FlagZero != 0 {
		size()
		s.pad('0', s.widthMost)
	}
	if s.hasPrec {
		s.load(asm.R2, cellPrec)
		s.minusLen()
		s.pad('0', s.precMost)
	}
	s.load(asm.R2, cellLen)
	if s.limit >= digitRoom {
		s.copyDigits()
	} else {
		s.copy(digitRoom, s.digitsAddr)
	}
	if s.hasWidth && s.isLeft {
		size()
		s.pad(' ', s.widthMost)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// numberSize subtracts from R2 what a number writes besides its padding:
// the sign, the prefix and max(precision, digits).
func (s *sprint) numberSize(flags format.Flags, prefix int) {
	g := s.g
	if flags&format.FlagSign != 0 {
		unsigned := g.newLabel("sp_nosign")
		s.load(asm.R0, cellSign)
		g.emit(asm.JEq.Imm(asm.R0, 0, unsigned), asm.Sub.Imm(asm.R2, 1))
		g.mark(unsigned)
	}
	g.emit(asm.Sub.Imm(asm.R2, int32(prefix)))
	s.load(asm.R0, cellLen)
	if s.hasPrec {
		more := g.newLabel("sp_digits")
		s.load(asm.R1, cellPrec)
		g.emit(asm.JSGE.Reg(asm.R0, asm.R1, more), asm.Mov.Reg(asm.R0, asm.R1))
		g.mark(more)
	}
	g.emit(asm.Sub.Reg(asm.R2, asm.R0))
}

// putSign writes the sign character, if any.
func (s *sprint) putSign() {
	none := s.g.newLabel("sp_unsigned")
	s.load(asm.R0, cellSign)
	s.g.emit(asm.JEq.Imm(asm.R0, 0, none))
	s.put(0, true)
	s.g.mark(none)
}

// digits stages the digits of the argument: its sign and magnitude (for
// %d and %i) go to the cells, then a loop of at most 22 divisions writes
// the digits right to left, ending the stage's first digitRoom bytes, and
// their count to cellLen.
func (s *sprint) digits(d format.Directive, v longAt) {
	g := s.g
	g.emit(v.load(asm.R1))
	s.store(cellNum, asm.R1)
	if d.Flags&format.FlagSign != 0 {
		var sign int32
		switch {
		case d.Flags&format.FlagPlus != 0:
			sign = '+'
		case d.Flags&format.FlagSpace != 0:
			sign = ' '
		}
		positive := g.newLabel("sp_positive")
		s.setCell(cellSign, sign)
		g.emit(
			asm.JSGE.Imm(asm.R1, 0, positive),
			asm.Mov.Imm(asm.R2, 0),
			asm.Sub.Reg(asm.R2, asm.R1),
		)
		s.store(cellNum, asm.R2)
		s.setCell(cellSign, '-')
		g.mark(positive)
	}
	b := int32(base(d.Verb))
	table := s.table
	if d.Flags&format.FlagLarge != 0 {
		table += 16
	}
	top, more, done := g.newLabel("sp_digit"), g.newLabel("sp_more"), g.newLabel("sp_digits_done")
	s.load(asm.R1, cellNum)
	g.emit(
		asm.Mov.Reg(asm.R2, s.work),
		asm.Add.Imm(asm.R2, int32(s.stage+digitRoom)),
		asm.Mov.Imm(asm.R3, 0),
	)
	g.mark(top)
	g.emit(asm.Mov.Reg(asm.R4, asm.R1))
	if shift := bits.TrailingZeros32(uint32(b)); b&(b-1) == 0 { // octal, hex: no division
		g.emit(asm.And.Imm(asm.R4, b-1), asm.RSh.Imm(asm.R1, int32(shift)))
	} else { // one division a digit: the remainder is n - (n/b)*b
		g.emit(
			asm.Div.Imm(asm.R1, b),
			asm.Mov.Reg(asm.R5, asm.R1),
			asm.Mul.Imm(asm.R5, b),
			asm.Sub.Reg(asm.R4, asm.R5),
			asm.And.Imm(asm.R4, 15),
		)
	}
	g.emit(
		asm.Mov.Reg(asm.R5, s.work),
		asm.Add.Reg(asm.R5, asm.R4),
		asm.LoadMem(asm.R4, asm.R5, int16(table), asm.Byte),
		asm.Sub.Imm(asm.R2, 1),
		asm.StoreMem(asm.R2, 0, asm.R4, asm.Byte),
		asm.Add.Imm(asm.R3, 1),
		asm.JNE.Imm(asm.R1, 0, more),
		asm.Ja.Label(done),
	)
	g.mark(more)
	g.emit(asm.JLT.Imm(asm.R3, digitRoom-2, top))
	g.mark(done)
	s.store(cellLen, asm.R3)
}

// digitsAddr leaves in R3 the address of the staged digits.
func (s *sprint) digitsAddr() {
	s.load(asm.R0, cellLen)
	s.atMost(asm.R0, digitRoom)
	s.g.emit(
		asm.Mov.Imm(asm.R3, digitRoom),
		asm.Sub.Reg(asm.R3, asm.R0),
		asm.Add.Reg(asm.R3, s.work),
		asm.Add.Imm(asm.R3, int32(s.stage)),
	)
}
