package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// Foreach over a wrapping array in a kernel probe walks its keys in the
// order they were added, as stap's unsorted foreach does (Debian's
// ltrace.stp takes the first key of `report_line%` as the oldest call).
// That order is the array's ring (wrap.go): the keys of the last N
// elements created, N the array's size, at absolute positions count − N
// (or 0) to count − 1. A ring slot may name a key deleted since, or one
// deleted and added again (its later slot holds its place now): a slot
// counts when its key is in the map and no later slot of the window names
// it. Each iteration goes on from the position after the last one's
// slot, with bpf_loop (Linux 5.17) over the positions left; its callback
// stops at the first slot that counts, and checks the later slots with a
// nested bpf_loop. A step costs a lookup per slot passed over, and a
// compare per later slot for a key that is present: O(N) and O(N²) in
// the worst case, N the array's size; MAXACTION bounds the iterations.
// Sorted foreach over a wrapping array stays refused (sema's
// foreachRefusal): its ties would keep the ring's order.

// Offsets in a ring walk's cursor: the next position, the ring's count,
// whether a slot was found, the first later position, whether a later
// slot names the key, then the key.
const (
	ringPos   = 0
	ringCount = 8
	ringFound = 16
	ringLater = 24
	ringDup   = 32
	ringKey   = 40
)

// ringStep sets up the cursor of a walk of wrapping array gl's ring and
// returns what selects each iteration's element (hashStep's contract).
func (g *gen) ringStep(gl *Global, s *syntax.ForeachStmt) func(brk string) int {
	if gl.Gens {
		g.fail(s, "a foreach in a kernel probe over an array kept in generations")
	}
	g.needs(s.Position(), target.Loop, "a foreach in a kernel probe over a wrapping array")
	cur := g.allocScratch(ringKey + int(gl.Spec.KeySize))
	ctx := g.cursorContext(cur)
	g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(regScratch, int16(cur+ringPos), asm.R1, asm.DWord))
	outer := g.ringSelector(gl)
	n := int32(gl.Spec.MaxEntries)
	return func(brk string) int {
		stack := g.stack
		head := g.pushSlot()
		g.emit(asm.StoreImm(asm.R10, head, 0, asm.Word))
		g.emit(emitLookup(gl.Heads.Ref, head, labelExit)...)
		inWindow := g.newLabel("ring_window")
		g.emit(
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.StoreMem(regScratch, int16(cur+ringCount), asm.R1, asm.DWord),
			asm.LoadMem(asm.R2, regScratch, int16(cur+ringPos), asm.DWord),
			asm.JLE.Imm(asm.R1, n, inWindow),
			asm.Mov.Reg(asm.R3, asm.R1), asm.Sub.Imm(asm.R3, n),
			asm.JGE.Reg(asm.R2, asm.R3, inWindow),
			asm.Mov.Reg(asm.R2, asm.R3), // the slots before were overwritten
		)
		g.mark(inWindow)
		g.emit(
			asm.StoreMem(regScratch, int16(cur+ringPos), asm.R2, asm.DWord),
			asm.JLE.Reg(asm.R1, asm.R2, brk),
			asm.Sub.Reg(asm.R1, asm.R2),
			asm.Mov.Imm(asm.R2, 0), asm.StoreMem(regScratch, int16(cur+ringFound), asm.R2, asm.DWord),
		)
		g.loopCall(outer, ctx)
		g.emit(asm.LoadMem(asm.R1, regScratch, int16(cur+ringFound), asm.DWord), asm.JEq.Imm(asm.R1, 0, brk))
		g.stack = stack
		return cur + ringKey
	}
}

// ringSelector returns the bpf_loop callback that finds, from the
// cursor's position on, the first ring slot that counts; compiled on
// first use.
func (g *gen) ringSelector(gl *Global) *subprog {
	return g.loopCallback("foreach_ring_"+gl.Ref, func(c *gen) {
		stop, skip := c.newLabel("stop"), c.newLabel("skip")
		c.emit(
			asm.LoadMem(asm.R6, asm.R8, ringPos, asm.DWord), asm.Add.Reg(asm.R6, asm.R1), // the position
			asm.LoadMem(asm.R1, asm.R8, ringCount, asm.DWord), asm.JGE.Reg(asm.R6, asm.R1, stop),
		)
		c.ringSlot(gl, asm.R6, skip)
		c.copyWords(asm.R8, ringKey, asm.R0, 0, int(gl.Spec.KeySize), asm.R1)
		c.emit(
			asm.LoadMapPtr(asm.R1, 0).WithReference(gl.Ref),
			asm.Mov.Reg(asm.R2, asm.R8), asm.Add.Imm(asm.R2, ringKey),
			asm.FnMapLookupElem.Call(), asm.JEq.Imm(asm.R0, 0, skip),
			asm.Mov.Reg(asm.R1, asm.R6), asm.Add.Imm(asm.R1, 1), asm.StoreMem(asm.R8, ringLater, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R2, 0), asm.StoreMem(asm.R8, ringDup, asm.R2, asm.DWord),
		)
		unique := c.newLabel("unique")
		ctx := c.pushSlot()
		c.emit(
			asm.StoreMem(asm.R10, ctx, asm.R8, asm.DWord),
			asm.LoadMem(asm.R2, asm.R8, ringCount, asm.DWord), asm.Sub.Reg(asm.R2, asm.R1),
			asm.JEq.Imm(asm.R2, 0, unique), asm.Mov.Reg(asm.R1, asm.R2),
		)
		c.loopCall(c.laterSlots(gl), ctx)
		c.emit(asm.LoadMem(asm.R1, asm.R8, ringDup, asm.DWord), asm.JNE.Imm(asm.R1, 0, skip))
		c.mark(unique)
		c.emit(
			asm.Mov.Imm(asm.R1, 1), asm.StoreMem(asm.R8, ringFound, asm.R1, asm.DWord),
			asm.Add.Imm(asm.R6, 1), asm.StoreMem(asm.R8, ringPos, asm.R6, asm.DWord),
		)
		c.mark(stop)
		c.emit(asm.Mov.Imm(asm.R0, 1), asm.Return())
		c.mark(skip)
		c.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	})
}

// laterSlots returns the bpf_loop callback that sets the cursor's ringDup
// when a ring slot from its ringLater position on names its key.
func (g *gen) laterSlots(gl *Global) *subprog {
	return g.loopCallback("foreach_later_"+gl.Ref, func(c *gen) {
		differ := c.newLabel("differ")
		c.emit(asm.LoadMem(asm.R6, asm.R8, ringLater, asm.DWord), asm.Add.Reg(asm.R6, asm.R1))
		c.ringSlot(gl, asm.R6, differ)
		for off := int16(0); off < int16(gl.Spec.KeySize); off += 8 {
			c.emit(asm.LoadMem(asm.R1, asm.R0, off, asm.DWord), asm.LoadMem(asm.R2, asm.R8, ringKey+off, asm.DWord),
				asm.JNE.Reg(asm.R1, asm.R2, differ))
		}
		c.emit(asm.Mov.Imm(asm.R1, 1), asm.StoreMem(asm.R8, ringDup, asm.R1, asm.DWord), asm.Mov.Imm(asm.R0, 1), asm.Return())
		c.mark(differ)
		c.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	})
}

// ringSlot leaves in R0 the address of the ring slot of the absolute
// position in pos, or jumps to miss. Clobbers R1 and R2.
func (c *gen) ringSlot(gl *Global, pos asm.Register, miss string) {
	slot := c.pushSlot()
	c.emit(asm.Mov.Reg(asm.R1, pos), asm.Mod.Imm(asm.R1, int32(gl.Spec.MaxEntries)), asm.StoreMem(asm.R10, slot, asm.R1, asm.Word))
	c.emit(emitLookup(gl.Ring.Ref, slot, miss)...)
	c.popStack(8)
}

// loopCallback returns the bpf_loop callback named name, compiled on first
// use: body runs with the index in R1 and the cursor's address in R8.
func (g *gen) loopCallback(name string, body func(c *gen)) *subprog {
	return g.callback(name, loopCallbackType(name), func(c *gen) {
		c.emit(asm.LoadMem(asm.R8, asm.R2, 0, asm.DWord))
		body(c)
	})
}
