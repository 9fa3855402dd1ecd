package bpfgen

import (
	"encoding/binary"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// Strings live in slots of the scratch area: a string value is a slot
// (offset and width) known at compile time, NUL-terminated within it.
// Copies go through bpf_probe_read_kernel_str, which stops at the NUL and
// never overflows the destination; comparisons are a bounded byte loop.

// str compiles a string expression and returns its slot. Temporaries stay
// allocated until the caller releases the scratch mark.
func (g *gen) str(e syntax.Expr) value {
	defer g.at(g.at(e.Position()))
	switch e := e.(type) {
	case *syntax.StringLit:
		return g.strLit(e.Value)
	case *syntax.Ident:
		if e.Var.Kind != syntax.VarGlobal {
			return g.local(e.Var)
		}
		return g.strGlobal(e.Var, nil)
	case *syntax.Index:
		return g.strGlobal(indexVar(e), e.Keys)
	case *syntax.Binary:
		if e.Op == "." {
			return g.concat(e)
		}
	case *syntax.Assign:
		return g.assignString(e)
	case *syntax.Call:
		return g.strCall(e)
	case *syntax.TargetVar:
		if acc := g.m.prog.Targets[e]; acc != nil && acc.Type == syntax.TypeString {
			return g.contextString(e, acc)
		}
	case *syntax.PrintCall:
		return g.sprintf(e)
	case *syntax.Ternary:
		dst := g.strSlot(g.m.maxStr)
		g.ternaryInto(dst, e)
		return dst
	}
	g.fail(e, "%s cannot be compiled in a kernel probe", syntax.ExprString(e))
	return g.strSlot(8)
}

// ternaryInto compiles a string ternary into dst. Each branch's
// temporaries are released once it is copied, and a ternary in the else
// branch (a chain, such as errno_str's table) writes into dst too, so a
// chain of any length needs one slot.
func (g *gen) ternaryInto(dst value, e *syntax.Ternary) {
	other, done := g.newLabel("else"), g.newLabel("fi")
	g.unless(e.Cond, other)
	g.strInto(dst, e.Then)
	g.emit(asm.Ja.Label(done))
	g.mark(other)
	if next, ok := e.Else.(*syntax.Ternary); ok {
		g.ternaryInto(dst, next)
	} else {
		g.strInto(dst, e.Else)
	}
	g.mark(done)
}

// strSlot allocates a string temporary.
func (g *gen) strSlot(width int) value {
	return value{str: true, off: g.allocScratch(width), width: width}
}

// strLit stores a literal into a new slot, eight bytes at a time.
func (g *gen) strLit(s string) value {
	b := []byte(s)
	if len(b) >= g.m.maxStr {
		b = b[:g.m.maxStr-1]
	}
	v := g.strSlot(len(b) + 1)
	v.width = g.storeLit(v.off, b)
	return v
}

// storeLit stores b and its NUL at scratch offset off, eight bytes at a
// time, and returns the bytes written (b's length rounded up past its NUL).
func (g *gen) storeLit(off int, b []byte) int { return g.storeLitAt(regScratch, off, b) }

// storeLitAt stores b and its NUL at off from the pointer in base (not R1,
// which carries the bytes).
func (g *gen) storeLitAt(base asm.Register, off int, b []byte) int {
	padded := make([]byte, (len(b)+8)&^7)
	copy(padded, b)
	for i := 0; i < len(padded); i += 8 {
		g.emit(
			asm.LoadImm(asm.R1, int64(binary.NativeEndian.Uint64(padded[i:])), asm.DWord),
			asm.StoreMem(base, int16(off+i), asm.R1, asm.DWord),
		)
	}
	return len(padded)
}

// strInto evaluates string e into dst: a literal that fits is stored there
// directly (a copy through bpf_probe_read_kernel_str costs a helper call,
// and tapset tables assign literals on every event), a ternary's branches
// and a script function's returns write into dst themselves; anything else
// is computed and copied. Temporaries are released.
func (g *gen) strInto(dst value, e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.StringLit:
		if len(e.Value) < dst.width && len(e.Value) < g.m.maxStr {
			g.storeLit(dst.off, []byte(e.Value))
			return
		}
	case *syntax.Ternary:
		g.ternaryInto(dst, e)
		return
	case *syntax.Call:
		if scriptFunc(e) {
			g.inlineInto(e, dst)
			return
		}
	case *syntax.PrintCall:
		if dst.sprintRoom && e.Name == "sprintf" {
			g.sprintfInto(e, dst)
			return
		}
	case *syntax.Binary:
		if e.Op == "." && g.concatInto(dst, concatOperands(e)) {
			return
		}
	}
	mark := g.scratchMark()
	g.copyStr(dst, g.str(e))
	g.scratchRelease(mark)
}

// concatOperands flattens a chain of concatenations, left to right.
func concatOperands(e syntax.Expr) []syntax.Expr {
	if b, ok := e.(*syntax.Binary); ok && b.Op == "." {
		return append(concatOperands(b.X), concatOperands(b.Y)...)
	}
	return []syntax.Expr{e}
}

// concatInto writes the concatenation of ops into dst with no temporary
// for the result: each operand is copied to the end of what dst holds so
// far (bpf_probe_read_kernel_str returns the length it copied), the first
// not at all when it is dst's own variable (`s .= x` copies x alone). A
// concat through a temporary copies every operand twice, then the result.
// It declines (false) when an operand after the first reads dst, which the
// writes before it would have changed (x = "a" . x).
func (g *gen) concatInto(dst value, ops []syntax.Expr) bool {
	for _, op := range ops[1:] {
		if g.readsSlot(op, dst) {
			return false
		}
	}
	self := g.isSlot(ops[0], dst)
	if !self && g.readsSlot(ops[0], dst) {
		return false
	}
	// dst must have room for a copy of up to its width starting anywhere
	// inside it: the verifier bounds the end by the largest offset plus the
	// largest size.
	g.maxScr = max(g.maxScr, dst.off+2*dst.width)
	// The length so far lives in the scratch area, not on the stack: a
	// value reloaded from a map is unknown to the verifier, so the paths
	// that wrote strings of different lengths are pruned where they meet.
	mark := g.scratchMark()
	length := g.allocScratch(8)
	switch lit, ok := ops[0].(*syntax.StringLit); {
	case self:
		g.readStr(asm.FnProbeReadKernelStr, dst, g.scratchAddr(dst.off), dst.width)
	case ok && len(lit.Value) < dst.width:
		g.storeLit(dst.off, []byte(lit.Value))
		g.emit(asm.Mov.Imm(asm.R0, int32(len(lit.Value)+1)))
	default:
		inner := g.scratchMark()
		g.copyStr(dst, g.str(ops[0]))
		g.scratchRelease(inner)
	}
	g.emit(asm.StoreMem(regScratch, int16(length), asm.R0, asm.DWord))
	for _, op := range ops[1:] {
		g.appendStr(dst, op, length)
	}
	g.scratchRelease(mark)
	return true
}

// appendStr copies op after the bytes dst holds (the scratch cell length
// holds their count, the NUL included; the NUL is overwritten) and stores
// the new count.
func (g *gen) appendStr(dst value, op syntax.Expr, length int) {
	mark := g.scratchMark()
	y := g.str(op)
	low, high := g.newLabel("append_low"), g.newLabel("append_high")
	g.emit(
		asm.LoadMem(asm.R0, regScratch, int16(length), asm.DWord),
		asm.JSGT.Imm(asm.R0, 0, low), // a failed copy (negative) left dst empty
		asm.Mov.Imm(asm.R0, 1),
	)
	g.mark(low)
	g.emit(asm.JLE.Imm(asm.R0, int32(dst.width), high), asm.Mov.Imm(asm.R0, int32(dst.width)))
	g.mark(high)
	g.emit(asm.StoreMem(regScratch, int16(length), asm.R0, asm.DWord))
	g.appendAt(dst, y)
	g.atLeastOne()
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(length), asm.DWord),
		asm.Add.Reg(asm.R0, asm.R1),
		asm.Sub.Imm(asm.R0, 1),
		asm.StoreMem(regScratch, int16(length), asm.R0, asm.DWord),
	)
	g.scratchRelease(mark)
}

// appendAt copies src over the NUL of dst, whose bytes (the NUL included,
// in [1, dst.width]) R0 holds; R0 is then what the copy returned.
func (g *gen) appendAt(dst, src value) {
	g.emit(
		asm.Sub.Imm(asm.R0, 1),
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(dst.off)),
		asm.Add.Reg(asm.R1, asm.R0),
		asm.Mov.Imm(asm.R2, int32(dst.width)),
		asm.Sub.Reg(asm.R2, asm.R0),
	)
	g.scratchAddr(src.off)()
	g.emit(asm.FnProbeReadKernelStr.Call())
}

// atLeastOne raises R0, a probe_read_*_str result, to 1 when the copy
// failed (a fault leaves the destination empty).
func (g *gen) atLeastOne() {
	ok := g.newLabel("len")
	g.emit(asm.JSGT.Imm(asm.R0, 0, ok), asm.Mov.Imm(asm.R0, 1))
	g.mark(ok)
}

// scratchAddr returns a src for readStr (and sprintf's copies): the
// scratch address off in R3.
func (g *gen) scratchAddr(off int) func() {
	return func() { g.emit(asm.Mov.Reg(asm.R3, regScratch), asm.Add.Imm(asm.R3, int32(off))) }
}

// isSlot tells whether e is a local living in dst's slot.
func (g *gen) isSlot(e syntax.Expr, dst value) bool {
	id, ok := e.(*syntax.Ident)
	if !ok || id.Var == nil || id.Var.Kind == syntax.VarGlobal {
		return false
	}
	v, ok := g.locals[id.Var]
	return ok && v.str && v.off == dst.off
}

// readsSlot tells whether e reads the local living in dst's slot.
func (g *gen) readsSlot(e syntax.Expr, dst value) bool {
	return syntax.Any(e, func(n syntax.Node) bool {
		x, ok := n.(syntax.Expr)
		return ok && g.isSlot(x, dst)
	})
}

// copyStr copies src into dst (truncating to dst's width).
func (g *gen) copyStr(dst, src value) {
	if dst.off == src.off {
		return
	}
	g.emit(asm.StoreImm(regScratch, int16(dst.off), 0, asm.Byte))
	g.readStr(asm.FnProbeReadKernelStr, dst, g.scratchAddr(src.off), min(dst.width, src.width))
}

// readStr calls a probe_read_*_str helper into dst, with the source address
// set in R3 by src; size bounds the copy.
func (g *gen) readStr(fn asm.BuiltinFunc, dst value, src func(), size int) {
	src()
	faultIn := fn == asm.FnProbeReadUserStr && g.faultsIn()
	addr := int16(0)
	if faultIn {
		addr = g.pushSlot()
		g.emit(asm.StoreMem(asm.R10, addr, asm.R3, asm.DWord))
	}
	g.emit(
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(dst.off)),
		asm.Mov.Imm(asm.R2, int32(size)),
		fn.Call(),
	)
	if faultIn {
		g.retryFaulting(dst, addr, size)
		g.popStack(8)
	}
}

// sprintTargets are the probe's string locals that sprintf renders into
// (value.sprintRoom): those assigned `v = sprintf(...)` by the probe's own
// body, where no such sprintf reads v (it would read what it overwrites).
// Computed once per probe.
func (g *gen) sprintTargets() map[*syntax.Var]bool {
	if g.sprinted != nil {
		return g.sprinted
	}
	g.sprinted = map[*syntax.Var]bool{}
	self := map[*syntax.Var]bool{}
	syntax.Walk(g.probe.Body, func(n syntax.Node) bool {
		a, ok := n.(*syntax.Assign)
		if !ok || a.Op != "=" {
			return true
		}
		id, isLocal := a.LHS.(*syntax.Ident)
		call, isSprintf := a.RHS.(*syntax.PrintCall)
		if !isLocal || id.Var.Kind == syntax.VarGlobal || !isSprintf || call.Name != "sprintf" {
			return true
		}
		g.sprinted[id.Var] = true
		self[id.Var] = self[id.Var] || syntax.Any(call, func(m syntax.Node) bool {
			x, ok := m.(*syntax.Ident)
			return ok && x.Var == id.Var
		})
		return true
	})
	for v := range self {
		if self[v] {
			delete(g.sprinted, v)
		}
	}
	return g.sprinted
}

// strKey stores string e zero-padded into a key field.
func (g *gen) strKey(e syntax.Expr, off, width int) {
	if c, ok := e.(*syntax.Call); ok && c.Name == "execname" && len(c.Args) == 0 && width == commLen {
		g.comm(off)
		return
	}
	g.emit(asm.Mov.Imm(asm.R0, 0))
	for i := 0; i < width; i += 8 {
		g.emit(asm.StoreMem(regScratch, int16(off+i), asm.R0, asm.DWord))
	}
	mark := g.scratchMark()
	g.copyStr(value{str: true, off: off, width: width}, g.str(e))
	g.scratchRelease(mark)
}

// comm writes the current task's comm (16 bytes, zero-padded) at off (the
// context task's, in a probe that has one: contexttask.go). Where the
// kernel pads every name (comm_padded, Linux 5.17) the 16 bytes are
// copied as they are: a BTF-typed program loads the two words straight
// from task_struct (the task pointer bpf_get_current_task_btf returns may
// be dereferenced there); the others copy them with
// bpf_probe_read_kernel from bpf_get_current_task's pointer, which costs
// 88 guest instructions more than the loads on 6.12 where
// bpf_get_current_comm costs 168 more (qemu -icount, bench/kfunc).
// Older kernels leave a longer former name's bytes after the NUL, and
// bpf_get_current_comm, which pads its copy, is what makes the same name
// the same map key there. Without BTF (no offset of comm) it is the
// helper too.
func (g *gen) comm(off int) {
	defer g.cutComm(off)
	if g.contextTask() != nil {
		g.task()
		g.taskComm(g.probe.ContextTask, off)
		return
	}
	commOff, ok := g.m.facts.taskComm()
	ok = ok && g.m.has(target.CommPadded)
	switch {
	case ok && g.probe.Attach.Kind.BTFTyped() && g.m.has(target.TaskBTF):
		g.emit(asm.FnGetCurrentTaskBtf.Call())
		for i := int16(0); i < commLen; i += 8 {
			g.emit(
				asm.LoadMem(asm.R1, asm.R0, int16(commOff)+i, asm.DWord),
				asm.StoreMem(regScratch, int16(off)+i, asm.R1, asm.DWord),
			)
		}
	case ok && g.m.has(target.ProbeReadKernel):
		g.emit(
			asm.FnGetCurrentTask.Call(),
			asm.Mov.Reg(asm.R3, asm.R0),
			asm.Add.Imm(asm.R3, int32(commOff)),
			asm.Mov.Reg(asm.R1, regScratch),
			asm.Add.Imm(asm.R1, int32(off)),
			asm.Mov.Imm(asm.R2, commLen),
			asm.FnProbeReadKernel.Call(),
		)
	default:
		g.emit(
			asm.Mov.Reg(asm.R1, regScratch),
			asm.Add.Imm(asm.R1, int32(off)),
			asm.Mov.Imm(asm.R2, commLen),
			asm.FnGetCurrentComm.Call(),
		)
	}
}

// cutComm ends the comm at off at MAXSTRINGLEN-1 bytes when MAXSTRINGLEN
// is less than a comm's 16 bytes.
func (g *gen) cutComm(off int) { g.cutName(value{off: off, width: commLen}) }

// strGlobal copies the string v[keys] ("" when absent) into a temporary.
func (g *gen) strGlobal(v *syntax.Var, keys []syntax.Expr) value {
	gl := g.m.global(v)
	dst := g.strSlot(gl.Value.Width)
	g.emit(asm.StoreImm(regScratch, int16(dst.off), 0, asm.Byte))
	stack := g.stack
	g.lookup(gl, keys)
	done := g.newLabel("absent")
	g.emit(asm.JEq.Imm(asm.R0, 0, done))
	g.readStr(asm.FnProbeReadKernelStr, dst, func() { g.emit(asm.Mov.Reg(asm.R3, asm.R0)) }, dst.width)
	g.mark(done)
	g.stack = stack
	return dst
}

// assignString compiles s = t and s .= t for locals and globals.
func (g *gen) assignString(e *syntax.Assign) value {
	if v := g.deferredVar(e.LHS); v != nil {
		return g.deferredAssign(v, e.RHS.(*syntax.Call))
	}
	if id, ok := e.LHS.(*syntax.Ident); ok && id.Var.Kind != syntax.VarGlobal && e.Op == "=" {
		dst := g.local(id.Var)
		g.strInto(dst, e.RHS)
		return dst
	}
	if id, ok := e.LHS.(*syntax.Ident); ok && id.Var.Kind != syntax.VarGlobal && e.Op == ".=" {
		dst := g.local(id.Var)
		if g.concatInto(dst, append([]syntax.Expr{e.LHS}, concatOperands(e.RHS)...)) {
			return dst
		}
	}
	var rhs value
	if e.Op == ".=" {
		rhs = g.concat(&syntax.Binary{Typed: e.Typed, Op: ".", X: e.LHS, Y: e.RHS})
	} else {
		rhs = g.str(e.RHS)
	}
	switch lhs := e.LHS.(type) {
	case *syntax.Ident:
		if lhs.Var.Kind != syntax.VarGlobal {
			dst := g.local(lhs.Var)
			g.copyStr(dst, rhs)
			return dst
		}
		g.storeString(lhs.Var, nil, rhs, lhs.Pos)
	case *syntax.Index:
		g.storeString(indexVar(lhs), lhs.Keys, rhs, lhs.Pos)
	default:
		g.unassignable(e)
	}
	return rhs
}

// storeString copies src into the global v[keys].
func (g *gen) storeString(v *syntax.Var, keys []syntax.Expr, src value, at syntax.Pos) {
	gl := g.m.global(v)
	g.lookupOrCreate(gl, keys, at)
	g.emit(
		asm.Mov.Reg(asm.R1, regRec),
		asm.Mov.Imm(asm.R2, int32(min(gl.Value.Width, src.width))),
		asm.Mov.Reg(asm.R3, regScratch),
		asm.Add.Imm(asm.R3, int32(src.off)),
		asm.FnProbeReadKernelStr.Call(),
	)
}

// concat compiles x . y into a new slot.
func (g *gen) concat(e *syntax.Binary) value {
	width := g.m.maxStr
	// Twice the width: the verifier bounds the second copy by its largest
	// offset plus its largest size, not by their sum (which is width).
	dst := value{str: true, off: g.allocScratch(2 * width), width: width}
	x := g.str(e.X)
	y := g.str(e.Y) // before the copy: evaluating y may use R0
	g.copyStr(dst, x)
	// R0 = bytes copied including the NUL, at least 1. The verifier knows
	// that a probe_read_*_str helper returns at most its size (at most
	// width here), so no upper clamp: it would be dead code, and each
	// stretch of dead code costs the verifier a pass over the program.
	g.atLeastOne()
	g.appendAt(dst, y)
	return dst
}

// stringBinary compiles string comparisons into R0 (0 or 1).
func (g *gen) stringBinary(e *syntax.Binary) {
	j, ok := compareOps[e.Op]
	if !ok {
		g.fail(e, "operator '%s' on strings cannot be compiled in a kernel probe", e.Op)
		return
	}
	mark := g.scratchMark()
	x := g.str(e.X)
	y := g.str(e.Y)
	g.strcmp(x, y)
	g.scratchRelease(mark)
	done := g.newLabel("scmp")
	g.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.Mov.Imm(asm.R0, 1), j.Imm(asm.R1, 0, done), asm.Mov.Imm(asm.R0, 0))
	g.mark(done)
}

// strcmp leaves in R0 the sign of x compared with y, byte by byte
// (unsigned), as strcmp does. Uses R1-R4.
func (g *gen) strcmp(x, y value) {
	n := min(x.width, y.width)
	top, diff, done := g.newLabel("strcmp"), g.newLabel("strdiff"), g.newLabel("strcmp_done")
	g.emit(asm.Mov.Imm(asm.R4, 0))
	g.mark(top)
	g.emit(
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Reg(asm.R1, asm.R4),
		asm.LoadMem(asm.R2, asm.R1, int16(x.off), asm.Byte),
		asm.LoadMem(asm.R3, asm.R1, int16(y.off), asm.Byte),
		asm.JNE.Reg(asm.R2, asm.R3, diff),
		asm.Mov.Imm(asm.R0, 0),
		asm.JEq.Imm(asm.R2, 0, done),
		asm.Add.Imm(asm.R4, 1),
		asm.JLT.Imm(asm.R4, int32(n), top),
		asm.Ja.Label(done),
	)
	g.mark(diff)
	g.emit(asm.Mov.Imm(asm.R0, 1), asm.JGT.Reg(asm.R2, asm.R3, done), asm.Mov.Imm(asm.R0, -1))
	g.mark(done)
}
