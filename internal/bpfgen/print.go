package bpfgen

import (
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// print compiles printf/print/println/printd/printdln into a RecordPrint:
// the arguments are evaluated first (longs to stack slots, strings to
// scratch slots), then a record is reserved, filled and submitted. A full
// ring skips the output (the drop is counted). An argument that calls a
// Captured builtin (tapset.Captured) sends the call's arguments instead,
// depth first, and user space computes the call when it formats the record;
// a deferred string local (deferred.go) sends its blob.
// The s* forms, used for their side effects only, are formatted (see
// sprintf.go) and dropped.
func (g *gen) print(e *syntax.PrintCall) {
	if e.Name[0] == 's' {
		mark := g.scratchMark()
		g.sprintf(e)
		g.scratchRelease(mark)
		g.emit(asm.Mov.Imm(asm.R0, 0))
		return
	}
	f, err := sema.PrintFormat(e)
	if err != nil {
		g.fail(e, "%v", err)
		return
	}
	g.send(&Output{Call: e, Format: f, Pos: e.Pos, Size: headerSize}, e.Args)
}

// deferred compiles a call of a Deferred builtin (system, log, warn): a
// record of its arguments, which user space calls it with.
func (g *gen) deferred(c *syntax.Call) {
	g.send(&Output{Effect: c, Pos: c.Pos, Size: headerSize}, c.Args)
}

// send evaluates args into the fields of out and sends the record; R0 is
// 0 after it.
func (g *gen) send(out *Output, args []syntax.Expr) {
	mark, stack := g.scratchMark(), g.stack
	var where []int
	for _, a := range args {
		g.printArg(a, out, &where)
	}
	id := len(g.m.Outputs)
	g.m.Outputs = append(g.m.Outputs, out)
	full := g.reserve(out.Size)
	g.emit(
		asm.Mov.Reg(regRec, asm.R0),
		asm.StoreImm(regRec, 0, int64(RecordPrint), asm.Word),
		numbered(asm.StoreImm(regRec, 4, int64(id), asm.Word), relocOutput),
	)
	g.storeRun()
	for i, field := range out.Args {
		if field.Width == 0 {
			g.emit(
				asm.LoadMem(asm.R1, asm.R10, int16(where[i]), asm.DWord),
				asm.StoreMem(regRec, int16(field.Offset), asm.R1, asm.DWord),
			)
			continue
		}
		read := asm.FnProbeReadKernelStr
		if field.Deferred != nil { // a blob, NULs and all
			read = asm.FnProbeReadKernel
		}
		g.emit(
			asm.Mov.Reg(asm.R1, regRec),
			asm.Add.Imm(asm.R1, int32(field.Offset)),
			asm.Mov.Imm(asm.R2, int32(field.Width)),
			asm.Mov.Reg(asm.R3, regScratch),
			asm.Add.Imm(asm.R3, int32(where[i])),
			read.Call(),
		)
	}
	g.submit(out.Size)
	g.mark(full)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.scratchRelease(mark)
	g.stack = stack
}

// printArg evaluates a print argument into a field of the record out: its
// value, or, for a call of a Captured builtin, the values of the call's
// arguments; where gets the slot each value waits in.
func (g *gen) printArg(a syntax.Expr, out *Output, where *[]int) {
	if v := g.deferredVar(a); v != nil {
		g.printDeferred(v, out, where)
		return
	}
	if c, ok := a.(*syntax.Call); ok {
		if b := sema.Builtin(c); b != nil && b.Kernel == tapset.Captured {
			if b.InProcess {
				g.printLong(func() { g.emit(asm.FnGetCurrentPidTgid.Call(), asm.RSh.Imm(asm.R0, 32)) }, out, where)
			}
			for _, x := range c.Args {
				if v, ok := g.wholeStack(c, x); ok {
					g.printStr(v, out, where)
					continue
				}
				g.printArg(x, out, where)
			}
			return
		}
	}
	if a.Type() != syntax.TypeString {
		g.printLong(func() { g.long(a) }, out, where)
		return
	}
	g.printStr(g.str(a), out, where)
}

// printStr adds a string field to the record out: the string v.
func (g *gen) printStr(v value, out *Output, where *[]int) {
	field := ArgField{Offset: out.Size, Width: v.width}
	*where = append(*where, v.off)
	out.Args = append(out.Args, field)
	out.Size += fieldSize(field)
}

// printLong adds a long field to the record out: the value code leaves in
// R0.
func (g *gen) printLong(code func(), out *Output, where *[]int) {
	code()
	slot := g.pushSlot()
	g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	*where = append(*where, int(slot))
	field := ArgField{Offset: out.Size}
	out.Args = append(out.Args, field)
	out.Size += fieldSize(field)
}
