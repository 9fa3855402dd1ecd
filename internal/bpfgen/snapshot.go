package bpfgen

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// A foreach's snapshot. A walk of a hash map (bpf_for_each_map_elem)
// visits every bucket, however few elements the map holds: ~28 µs for a
// map of 2,048 entries on this VM, so selecting each element with a walk
// of its own made a loop over 8 elements cost ~250 µs. So a foreach first
// copies the elements, with one walk, into a snapshot: {sort word, key}
// records in a per-CPU array of its own (one element of up to 32 KiB, the
// most a per-CPU value may have: snapshotCapacity records), and each
// iteration then selects the next element from the snapshot with bpf_loop
// (Linux 5.17) over its records, comparing as the walk's callback does. A
// map holding more elements than the snapshot can is walked once per
// element instead (foreach.go), never cut short. So is every map where the
// kernel has no may_goto (before 6.9): its verifier walks each iteration
// of the loop (loops.go), and with the snapshot's scan sleepingBeauties'
// timer program passed the verifier's million instructions, with the walk
// alone it does not.
//
// The snapshot is the program's own and the foreach's own, so programs
// that nest on the CPU cannot touch it. What other programs add or delete
// after it was taken is not seen; a key it holds whose element was
// deleted since is still visited, its value variable then 0 or "" (the
// body of the loop itself cannot change the array: sema's foreach check).

// snapshotSize is the size of a snapshot's per-CPU value.
const snapshotSize = 32 << 10

// snapshotCapacity is how many records of gl's elements a snapshot holds.
func snapshotCapacity(gl *Global) int {
	return min(int(gl.Spec.MaxEntries), snapshotSize/(elemKey+int(gl.Spec.KeySize)))
}

// snapshot takes the snapshot of gl's elements for s, its cursor at scratch
// offset cur, and returns the stack slot of the callbacks' context: the
// cursor's address, then (8 bytes above) the snapshot's.
func (g *gen) snapshot(gl *Global, s *syntax.ForeachStmt, cur int) int16 {
	capacity := snapshotCapacity(gl)
	rec := elemKey + int(gl.Spec.KeySize)
	ref := fmt.Sprintf("fe%d", len(g.snapshots))
	g.snapshots = append(g.snapshots, Map{ref, perCPUArray(ref, uint32(capacity*rec), 1)})
	buf := g.pushSlot()
	ctx := g.cursorContext(cur) // the slot below buf
	g.emit(emitLookupIndex(ref, buf, 0, labelExit)...)
	g.emit(asm.StoreMem(asm.R10, buf, asm.R0, asm.DWord), asm.Mov.Imm(asm.R1, 0))
	for _, off := range []int{cursorHasPrev, cursorCount, cursorOverflow} {
		g.emit(asm.StoreMem(regScratch, int16(cur+off), asm.R1, asm.DWord))
	}
	g.forEachElem(gl, g.collector(gl, s), ctx)
	return ctx
}

// collector returns the callback of bpf_for_each_map_elem that adds the
// element to the snapshot, or marks it overflowed and stops the walk.
func (g *gen) collector(gl *Global, s *syntax.ForeachStmt) *subprog {
	key := fmt.Sprintf("snapshot_%s_%d_%d_%s", gl.Ref, s.SortCol, s.SortDir+1, s.SortAgg)
	return g.callback(key, elemCallbackType(key), func(c *gen) {
		full := c.newLabel("full")
		c.emit(
			asm.Mov.Reg(asm.R6, asm.R2), // the element's key
			asm.Mov.Reg(asm.R7, asm.R3), // its value (this CPU's)
			asm.LoadMem(asm.R8, asm.R4, 0, asm.DWord),
			asm.LoadMem(asm.R9, asm.R4, 8, asm.DWord),
		)
		sortSlot := c.pushSlot()
		c.sortWord(gl, s, sortSlot)
		c.emit(
			asm.LoadMem(asm.R1, asm.R8, cursorCount, asm.DWord),
			asm.JGE.Imm(asm.R1, int32(snapshotCapacity(gl)), full),
			asm.Mov.Reg(asm.R2, asm.R1), asm.Mul.Imm(asm.R2, int32(elemKey+gl.Spec.KeySize)), asm.Add.Reg(asm.R2, asm.R9),
			asm.LoadMem(asm.R3, asm.R10, sortSlot, asm.DWord), asm.StoreMem(asm.R2, elemSort, asm.R3, asm.DWord),
		)
		for off := int16(0); off < int16(gl.Spec.KeySize); off += 8 {
			c.emit(asm.LoadMem(asm.R3, asm.R6, off, asm.DWord), asm.StoreMem(asm.R2, elemKey+off, asm.R3, asm.DWord))
		}
		c.emit(
			asm.Add.Imm(asm.R1, 1), asm.StoreMem(asm.R8, cursorCount, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 0), asm.Return(),
		)
		c.mark(full)
		c.emit(asm.Mov.Imm(asm.R1, 1), asm.StoreMem(asm.R8, cursorOverflow, asm.R1, asm.DWord), asm.Mov.Imm(asm.R0, 1), asm.Return())
	})
}

// snapshotSelector returns the bpf_loop callback that offers record index
// of the snapshot to the cursor's selection (selectElement).
func (g *gen) snapshotSelector(gl *Global, s *syntax.ForeachStmt) *subprog {
	key := fmt.Sprintf("scan_%s_%d_%d_%s", gl.Ref, s.SortCol, s.SortDir+1, s.SortAgg)
	return g.callback(key, loopCallbackType(key), func(c *gen) {
		out := c.newLabel("out")
		c.emit(
			asm.LoadMem(asm.R8, asm.R2, 0, asm.DWord),
			asm.LoadMem(asm.R9, asm.R2, 8, asm.DWord),
			asm.JGE.Imm(asm.R1, int32(snapshotCapacity(gl)), out),
			asm.Mul.Imm(asm.R1, int32(elemKey+gl.Spec.KeySize)), asm.Add.Reg(asm.R1, asm.R9),
			asm.LoadMem(asm.R2, asm.R1, elemSort, asm.DWord),
			asm.Mov.Reg(asm.R6, asm.R1), asm.Add.Imm(asm.R6, elemKey),
		)
		sortSlot := c.pushSlot()
		c.emit(asm.StoreMem(asm.R10, sortSlot, asm.R2, asm.DWord))
		c.selectElement(gl, s, sortSlot)
		c.mark(out)
		c.emit(asm.Mov.Imm(asm.R0, 1), asm.Return())
	})
}
