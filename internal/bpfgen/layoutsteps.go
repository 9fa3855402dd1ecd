package bpfgen

import (
	"encoding/binary"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// The code of a layout table (layouttable.go): the lookup of the call's
// row, the places of its steps, kind by kind, and the chain of the cases
// that keep their code.

// emitLayoutTable compiles the dispatch of cases on subject as a lookup
// in a table of its own and the row's steps, the call's
// arguments first copied to args in the scratch area.
func (g *gen) emitLayoutTable(subject syntax.Expr, cases []layoutCase, args int) {
	groups, rowSize := stepGroups(cases)
	rows := map[uint32][]byte{}
	hasCode := false
	for _, c := range cases {
		rows[uint32(c.key)] = layoutRowBytes(c, groups, rowSize)
		hasCode = hasCode || c.code != nil
	}
	size := cases[len(cases)-1].key + 1
	ref := g.m.callTableRef()
	g.m.callTables = append(g.m.callTables, callTableSpec(ref, "layouts", size, rowSize, rows))
	for i := range g.m.regs().SyscallArgs {
		g.emit(asm.LoadMem(asm.R0, asm.R10, g.argsSlot+int16(8*i), asm.DWord),
			asm.StoreMem(regScratch, int16(args+8*i), asm.R0, asm.DWord))
	}
	miss, code, done := g.newLabel("nolayout"), g.newLabel("layoutcode"), g.newLabel("layout")
	g.long(subject)
	key, row := g.pushSlot(), g.pushSlot()
	g.emit(asm.JGE.Imm(asm.R0, int32(size), miss), // unsigned: a negative number too
		asm.StoreMem(asm.R10, key, asm.R0, asm.Word))
	g.emit(emitLookup(ref, key, miss)...)
	g.emit(asm.StoreMem(asm.R10, row, asm.R0, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord), asm.JEq.Imm(asm.R1, layoutNone, miss))
	if hasCode {
		g.emit(asm.JEq.Imm(asm.R1, layoutCode, code))
	}
	for _, gr := range groups {
		g.stepRun(gr, row)
	}
	g.emit(asm.Ja.Label(done))
	if hasCode {
		g.mark(code)
		g.layoutCode(cases, key, done)
	}
	g.mark(miss)
	g.next()
	g.mark(done)
	g.popStack(16)
}

// layoutRowBytes is the row of c: its kind, then each group's steps.
func layoutRowBytes(c layoutCase, groups []stepGroup, size int) []byte {
	row := make([]byte, size)
	binary.NativeEndian.PutUint64(row, layoutRow)
	if c.code != nil {
		binary.NativeEndian.PutUint64(row, layoutCode)
		return row
	}
	for _, gr := range groups {
		at := gr.off
		for _, s := range c.steps {
			if s.kind == gr.kind {
				s.put(row[at : at+layoutStepSize])
				at += layoutStepSize
			}
		}
	}
	return row
}

// layoutCode compiles the cases that have code, each behind a comparison
// of its key with the one in the stack slot key.
func (g *gen) layoutCode(cases []layoutCase, key int16, done string) {
	for _, c := range cases {
		if c.code == nil {
			continue
		}
		other := g.newLabel("layoutcase")
		g.emit(asm.LoadMem(asm.R0, asm.R10, key, asm.Word), asm.JNE.Imm(asm.R0, int32(c.key), other))
		g.stmt(c.code)
		if !terminates(c.code) {
			g.emit(asm.Ja.Label(done))
		}
		g.mark(other)
	}
}

// stepKinds are the kinds of steps in the order they run: the longs a
// row stores first, then the user strings and the user longs (no step
// reads what another stores: readsStored).
var stepKinds = []uint8{stepCopy, stepCut, stepConst, stepUserString, stepUserLong}

// stepGroup is where the steps of a kind lie in every row (off), as many
// as the row with the most has (width), with the greatest offsets in the
// scratch area they read a long at (from) and write at (dst).
type stepGroup struct {
	kind       uint8
	off, width int
	from, dst  int
}

// stepGroups are the groups of the steps of cases, and the size of a row.
func stepGroups(cases []layoutCase) ([]stepGroup, int) {
	var groups []stepGroup
	off := 8 // after the row's kind
	for _, kind := range stepKinds {
		gr := stepGroup{kind: kind, off: off} // from 0: a literal's step reads the long at 0 too
		for _, c := range cases {
			n := 0
			for _, s := range c.steps {
				if s.kind != kind {
					continue
				}
				n++
				gr.dst = max(gr.dst, s.dst)
				if s.from.scratch {
					gr.from = max(gr.from, int(s.from.off))
				}
			}
			gr.width = max(gr.width, n)
		}
		if gr.width > 0 {
			groups = append(groups, gr)
			off += layoutStepSize * gr.width
		}
	}
	return groups, off
}

// stepRun compiles the steps of gr's kind of the row whose address is
// in the stack slot row: the step at each of gr's places in turn, until
// one of kind stepEnd. A step keeps nothing on the stack and its paths
// meet at the next step in one state, which the verifier prunes: it
// walks each step's code once.
func (g *gen) stepRun(gr stepGroup, row int16) {
	end := g.newLabel("steps_end")
	cells := 0 // what a string's read keeps across the helper's call
	if gr.kind == stepUserString {
		cells = g.allocScratch(16)
	}
	for i := range gr.width {
		next := g.newLabel("step_next")
		off := int16(gr.off + layoutStepSize*i)
		g.emit(asm.LoadMem(asm.R1, asm.R10, row, asm.DWord), // R1: the row; the step at off
			asm.LoadMem(asm.R2, asm.R1, off, asm.Byte), asm.JEq.Imm(asm.R2, stepEnd, end))
		if gr.kind == stepConst {
			g.emit(asm.LoadMem(asm.R3, asm.R1, off+12, asm.Word))
		} else {
			g.emit(asm.LoadMem(asm.R3, asm.R1, off+8, asm.Word), asm.JGT.Imm(asm.R3, int32(gr.from), end),
				asm.Add.Reg(asm.R3, regScratch), asm.LoadMem(asm.R3, asm.R3, 0, asm.DWord))
		}
		if gr.kind == stepCut { // R3 << shift, then >> shift, arithmetically when signed
			g.emit(asm.LoadMem(asm.R4, asm.R1, off+2, asm.Byte), asm.And.Imm(asm.R4, 63), asm.LSh.Reg(asm.R3, asm.R4),
				asm.Mov.Reg(asm.R5, asm.R3), asm.ArSh.Reg(asm.R5, asm.R4), asm.RSh.Reg(asm.R3, asm.R4),
				asm.LoadMem(asm.R0, asm.R1, off+3, asm.Byte), asm.Neg.Imm(asm.R0, 0),
				asm.Xor.Reg(asm.R5, asm.R3), asm.And.Reg(asm.R5, asm.R0), asm.Xor.Reg(asm.R3, asm.R5))
		}
		g.emit(asm.LoadMem(asm.R4, asm.R1, off+4, asm.Half), asm.JGT.Imm(asm.R4, int32(gr.dst), end))
		switch gr.kind {
		case stepUserLong:
			g.stepUserLong(off, next)
		case stepUserString:
			g.stepUserString(gr.dst, cells, end)
		default:
			g.emit(asm.Add.Reg(asm.R4, regScratch), asm.StoreMem(asm.R4, 0, asm.R3, asm.DWord))
		}
		g.mark(next)
	}
	g.mark(end)
}

// stepUserLong compiles a step that reads the user long at R3 plus the
// step's add (the step at R1+off) into the long at the offset in R4 of
// the scratch area: 0 when R3 is 0, and when the memory cannot be read
// (the helper zeroes it).
func (g *gen) stepUserLong(off int16, next string) {
	g.emit(asm.Add.Reg(asm.R4, regScratch),
		asm.Mov.Imm(asm.R5, 0), asm.StoreMem(asm.R4, 0, asm.R5, asm.DWord), asm.JEq.Imm(asm.R3, 0, next),
		asm.LoadMem(asm.R5, asm.R1, off+6, asm.Half), asm.Add.Reg(asm.R3, asm.R5),
		asm.Mov.Reg(asm.R1, asm.R4), asm.Mov.Imm(asm.R2, 8), asm.FnProbeReadUser.Call())
}

// stepUserString compiles a step that reads the user string at R3: a
// mark byte at the offset in R4 (at most bound) of the scratch area, the
// text after it, as userStringRaw does. The address and the offset wait
// for the helper in the two longs at cells of the scratch area.
func (g *gen) stepUserString(bound, cells int, end string) {
	read := g.newLabel("step_read")
	g.m.unread = true
	g.emit(asm.StoreMem(regScratch, int16(cells), asm.R3, asm.DWord), asm.StoreMem(regScratch, int16(cells+8), asm.R4, asm.DWord),
		asm.Add.Reg(asm.R4, regScratch),
		asm.Mov.Reg(asm.R1, asm.R4), asm.Add.Imm(asm.R1, 1), asm.Mov.Imm(asm.R2, int32(g.m.maxStr-1)),
		asm.FnProbeReadUserStr.Call(),
		asm.Mov.Imm(asm.R1, 'R'), asm.JSGE.Imm(asm.R0, 0, read),
		asm.Mov.Imm(asm.R1, 0), asm.LoadMem(asm.R3, regScratch, int16(cells), asm.DWord), asm.JEq.Imm(asm.R3, 0, read))
	g.countIn(UnreadMap, 0, asm.R1)
	g.emit(asm.Mov.Imm(asm.R1, 0))
	g.mark(read)
	g.emit(asm.LoadMem(asm.R4, regScratch, int16(cells+8), asm.DWord), asm.JGT.Imm(asm.R4, int32(bound), end),
		asm.Add.Reg(asm.R4, regScratch), asm.StoreMem(asm.R4, 0, asm.R1, asm.Byte))
}
