package bpfgen

import (
	"encoding/binary"
	"slices"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// Deferred string locals (sema.DeferPrinted). Such a local is a blob in
// the scratch area: the number of the assignment that made it (a u64, 0
// before any: the empty string), then the values of that assignment's
// leaves, each in a field of a print record's shape (a long in 8 bytes, a
// string in MAXSTRINGLEN). An assignment stores its leaves, then its
// number; a print sends the whole blob; Decode turns it back into the
// number and the leaves' values, which the interpreter calls the
// assignment's function on.

// deferredFields is where the leaves of an assignment's function f lie in
// the blob.
func (m *Module) deferredFields(f *syntax.Func) []ArgField {
	fields := make([]ArgField, len(f.Params))
	off := 8
	for i, p := range f.Params {
		fields[i].Offset = off
		if p.Type == syntax.TypeString {
			fields[i].Width = m.maxStr
		}
		off += fieldSize(fields[i])
	}
	return fields
}

// deferredLayouts is the layout of each assignment of the deferred local
// v, and the size of its blob.
func (m *Module) deferredLayouts(v *syntax.Var) ([][]ArgField, int) {
	size := 8
	var layouts [][]ArgField
	for _, f := range m.prog.Deferred[v] {
		fields := m.deferredFields(f)
		if n := len(fields); n > 0 {
			size = max(size, fields[n-1].Offset+fieldSize(fields[n-1]))
		}
		layouts = append(layouts, fields)
	}
	return layouts, size
}

// deferredAssign compiles v = F(leaves...), an assignment of the deferred
// local v.
func (g *gen) deferredAssign(v *syntax.Var, call *syntax.Call) value {
	dst := g.local(v)
	for i, field := range g.m.deferredFields(call.Func) {
		if field.Width == 0 {
			g.long(call.Args[i])
			g.emit(asm.StoreMem(regScratch, int16(dst.off+field.Offset), asm.R0, asm.DWord))
			continue
		}
		g.strInto(value{str: true, off: dst.off + field.Offset, width: field.Width}, call.Args[i])
	}
	id := slices.Index(g.m.prog.Deferred[v], call.Func) + 1
	g.emit(
		asm.Mov.Imm(asm.R0, int32(id)),
		asm.StoreMem(regScratch, int16(dst.off), asm.R0, asm.DWord),
	)
	return dst
}

// deferredVar returns the deferred local e reads, if it is one.
func (g *gen) deferredVar(e syntax.Expr) *syntax.Var {
	if id, ok := e.(*syntax.Ident); ok && g.m.prog.Deferred[id.Var] != nil {
		return id.Var
	}
	return nil
}

// printDeferred adds the blob of the deferred local v to the record out.
func (g *gen) printDeferred(v *syntax.Var, out *Output, where *[]int) {
	layouts, size := g.m.deferredLayouts(v)
	field := ArgField{Offset: out.Size, Width: size, Deferred: layouts}
	*where = append(*where, g.local(v).off)
	out.Args = append(out.Args, field)
	out.Size += fieldSize(field)
}

// decodeDeferred appends to args the number and the leaves' values a
// deferred local's blob holds.
func decodeDeferred(args []format.Arg, blob []byte, layouts [][]ArgField) []format.Arg {
	id := binary.NativeEndian.Uint64(blob)
	args = append(args, format.Long(int64(id)))
	if id == 0 || id > uint64(len(layouts)) {
		return args
	}
	fields := layouts[id-1]
	args = slices.Grow(args, len(fields)) // once per record, not by doubling
	for _, f := range fields {
		args = append(args, decodeArg(blob, f))
	}
	return args
}
