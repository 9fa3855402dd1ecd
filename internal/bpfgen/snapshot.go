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
//
// A program that interrupts the walk taking the snapshot and changes the
// array would leave it torn: some elements as they were before the
// change, some after, a state the array never had (stap holds the array's
// lock for the whole loop). So every change a kernel probe makes to an
// array some kernel foreach reads (an element created or updated through
// lookupOrCreate, deleted, a wildcard or whole delete) first adds one to
// the array's per-CPU change count (Global.Changes), and the snapshot
// reads the count before and after its walk: when it differs, a nested
// program changed the array meanwhile, and the walk is taken again, up to
// maxSnapshotTries times; a loop that never gets a whole walk skips the
// rest of the probe's run, counted as a skipped probe. Nesting is
// last-in first-out, so a change made on this CPU during the walk has
// ended before the walk goes on and always shows in the count. A map
// walked once per iteration (no snapshot) reads the count when the loop
// begins and after each walk: a change between two iterations skips the
// rest of the run the same way, since the body already ran.

// maxSnapshotTries bounds the walks a snapshot takes: each retry needs a
// nested program to change the array during the walk again.
const maxSnapshotTries = 4

// snapshotSize is the size of a snapshot's per-CPU value.
const snapshotSize = 32 << 10

// snapshotCapacity is how many records of gl's elements a snapshot holds.
func snapshotCapacity(gl *Global) int {
	return min(int(gl.Spec.MaxEntries), snapshotSize/(elemKey+int(gl.Spec.KeySize)))
}

// snapshot takes the snapshot of gl's elements for s, its cursor at scratch
// offset cur, and returns the stack slot of the callbacks' context: the
// cursor's address, then (8 bytes above) the snapshot's. count is the
// slot of changeCount when gl keeps a change count; the count the whole
// walk saw is left in the slot above it.
func (g *gen) snapshot(gl *Global, s *syntax.ForeachStmt, cur int, count int16) int16 {
	capacity := snapshotCapacity(gl)
	rec := elemKey + int(gl.Spec.KeySize)
	ref := fmt.Sprintf("fe%d", len(g.snapshots))
	g.snapshots = append(g.snapshots, Map{ref, perCPUArray(ref, uint32(capacity*rec), 1)})
	buf := g.pushSlot()
	ctx := g.cursorContext(cur) // the slot below buf
	g.emit(emitLookupIndex(ref, buf, 0, labelExit)...)
	g.emit(asm.StoreMem(asm.R10, buf, asm.R0, asm.DWord))
	walk := func() {
		g.emit(asm.Mov.Imm(asm.R1, 0))
		for _, off := range []int{cursorHasPrev, cursorCount, cursorOverflow} {
			g.emit(asm.StoreMem(regScratch, int16(cur+off), asm.R1, asm.DWord))
		}
		g.forEachElem(gl, g.collector(gl, s), ctx)
	}
	if gl.Changes == nil {
		walk()
		return ctx
	}
	whole := g.newLabel("snapshot_whole")
	for range maxSnapshotTries {
		g.readChanges(count)
		walk()
		g.changedSince(count, whole)
	}
	g.skipRun()
	g.mark(whole)
	return ctx
}

// changeCount pushes two stack slots: the address of this CPU's change
// count of gl (the slot returned), and above it room for a count read.
func (g *gen) changeCount(gl *Global) int16 {
	g.pushSlot()
	slot := g.pushSlot()
	g.emit(emitLookupIndex(gl.Changes.Ref, slot, 0, labelExit)...)
	g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	return slot
}

// loadChanges loads into r the change count whose address is at slot.
func (g *gen) loadChanges(slot int16, r asm.Register) {
	g.emit(asm.LoadMem(r, asm.R10, slot, asm.DWord), asm.LoadMem(r, r, 0, asm.DWord))
}

// readChanges reads the change count whose address is at slot into the
// slot above it. Clobbers R1.
func (g *gen) readChanges(slot int16) {
	g.loadChanges(slot, asm.R1)
	g.emit(asm.StoreMem(asm.R10, slot+8, asm.R1, asm.DWord))
}

// changedSince jumps to same when the change count whose address is at
// slot still is the one read into the slot above it. Clobbers R1 and R2.
func (g *gen) changedSince(slot int16, same string) {
	g.loadChanges(slot, asm.R1)
	g.emit(asm.LoadMem(asm.R2, asm.R10, slot+8, asm.DWord), asm.JEq.Reg(asm.R1, asm.R2, same))
}

// unchangedOrSkip skips the rest of the run, counted, when gl's change
// count (at slot, as changeCount keeps it) changed since it was read.
func (g *gen) unchangedOrSkip(gl *Global, slot int16) {
	if gl.Changes == nil {
		return
	}
	same := g.newLabel("unchanged")
	g.changedSince(slot, same)
	g.skipRun()
	g.mark(same)
}

// noteChange adds one to this CPU's change count of gl, if it keeps one,
// before a change of gl. Clobbers R0-R5.
func (g *gen) noteChange(gl *Global) {
	if gl.Changes == nil {
		return
	}
	slot := g.pushSlot()
	g.emit(emitLookupIndex(gl.Changes.Ref, slot, 0, labelExit)...)
	g.emit(asm.Mov.Imm(asm.R1, 1), atomicOp(bpfAdd, asm.R0, asm.R1, 0))
	g.popStack(8)
}

// foreachInKernel tells whether kernel code has a foreach over the array v.
func (m *Module) foreachInKernel(v *syntax.Var) bool {
	return m.uses().iterated[v]
}

// collector returns the callback of bpf_for_each_map_elem that adds the
// element to the snapshot, or marks it overflowed and stops the walk.
func (g *gen) collector(gl *Global, s *syntax.ForeachStmt) *subprog {
	snapshotAddr := []asm.Instruction{asm.LoadMem(asm.R9, asm.R4, 8, asm.DWord)}
	return g.elemSorter("snapshot", gl, s, snapshotAddr, func(c *gen, sortSlot int16) {
		full := c.newLabel("full")
		c.emit(
			asm.LoadMem(asm.R1, asm.R8, cursorCount, asm.DWord),
			asm.JGE.Imm(asm.R1, int32(snapshotCapacity(gl)), full),
			asm.Mov.Reg(asm.R2, asm.R1), asm.Mul.Imm(asm.R2, int32(elemKey+gl.Spec.KeySize)), asm.Add.Reg(asm.R2, asm.R9),
			asm.LoadMem(asm.R3, asm.R10, sortSlot, asm.DWord), asm.StoreMem(asm.R2, elemSort, asm.R3, asm.DWord),
		)
		c.copyWords(asm.R2, elemKey, asm.R6, 0, int(gl.Spec.KeySize), asm.R3)
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
	key := orderKey("scan", gl, s)
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
