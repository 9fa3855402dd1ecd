package bpfgen

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// Foreach in kernel probes.
//
// A BPF program cannot step through a hash map: the only walk is
// bpf_for_each_map_elem, whose callback is a subprogram of its own that
// cannot run the loop's body (the body uses the probe's stack). So each
// iteration selects its element: a callback keeps, in a cursor in the
// program's scratch area, the least element that comes after the
// previous iteration's, and the program then runs the body on it. The
// candidates are the records of the loop's snapshot (snapshot.go: one
// walk copies them, each iteration scans them with bpf_loop) or, for a
// map the snapshot cannot hold, the map itself, walked once per
// iteration. Elements are ordered as the interpreter orders them
// (interp/foreach.go): by the sort column first when the foreach sorts
// (`+` ascending, `-` descending; the value, or a statistic's aggregate
// merged over every CPU, @count by default; or one key), then by the
// keys, column by column (longs as signed numbers, strings bytewise: a
// string field compares as big-endian words, its padding zero), which is
// the interpreter's unsorted order and how its stable sort breaks ties.
// `limit N` stops after N elements; a slice (`A[k, *]`) skips the
// elements whose keys differ from it at its non-`*` columns, counted
// against the limit as in the interpreter.
//
// The cost is n scans of n records for n elements (the interpreter sorts
// once). What bounds it is MAXACTION: every iteration charges an action,
// as any loop does; a walk itself is bounded by the map's size.
//
// Nesting: the cursor is in the program's own scratch area (each foreach
// its own), and a program never runs inside itself, so a program that
// interrupts the loop on the same CPU cannot touch it. The body cannot
// change the array's elements (sema's foreach check).
//
// A key variable holds the key's copy in the cursor; a long value
// variable the value when the element was taken (kept as its sort word),
// as the interpreter binds it; a string one is looked up again by the key
// ("" when the element is gone). Statistics arrays are per-CPU: the walk
// sees each key once, and a sort on an aggregate merges every CPU's
// partial as @count(A[k]) would.

// Offsets in a foreach's cursor: whether an element was visited and one
// was found by the walk, the snapshot's count and overflow, then the
// previous element and the best one found (each elemSort, then the
// packed key).
const (
	cursorHasPrev  = 0
	cursorFound    = 8
	cursorCount    = 16 // the elements in the snapshot (snapshot.go)
	cursorOverflow = 24 // the snapshot could not hold them all
	cursorPrev     = 32
	elemSort       = 0
	elemKey        = 8
)

// cursorBest is the offset of the best element in gl's cursor.
func cursorBest(gl *Global) int { return cursorPrev + elemKey + int(gl.Spec.KeySize) }

// foreach compiles a foreach over a global array.
func (g *gen) foreach(s *syntax.ForeachStmt) {
	id, ok := s.Array.(*syntax.Ident)
	if !ok {
		g.refuse(s, "this foreach")
		return
	}
	if !g.needs(s.Position(), target.ForEachMapElem, "foreach in a kernel probe") {
		return
	}
	gl := g.m.global(id.Var)
	smark, stack := g.scratchMark(), g.stack
	var step func(brk string) int
	ringOrder := gl.Ring != nil && s.SortDir == 0
	if ringOrder {
		step = g.ringStep(gl, s)
	} else {
		step = g.hashStep(gl, s)
	}
	limit := -1
	if s.Limit != nil {
		limit = g.allocScratch(16) // the limit, the elements taken
		g.long(s.Limit)
		g.emit(asm.StoreMem(regScratch, int16(limit), asm.R0, asm.DWord),
			asm.Mov.Imm(asm.R1, 0), asm.StoreMem(regScratch, int16(limit+8), asm.R1, asm.DWord))
	}
	var slice keyAddr
	if s.Slice != nil {
		slice = g.key(gl, zeroStars(gl, s.Slice))
	}
	g.loopWith(nil, s.Body, loopCarried(s.Body), func(brk, cont string) {
		key := step(brk)
		if limit >= 0 {
			g.emit(
				asm.LoadMem(asm.R1, regScratch, int16(limit+8), asm.DWord),
				asm.LoadMem(asm.R2, regScratch, int16(limit), asm.DWord),
				asm.JSGE.Reg(asm.R1, asm.R2, brk),
				asm.Add.Imm(asm.R1, 1), asm.StoreMem(regScratch, int16(limit+8), asm.R1, asm.DWord),
			)
		}
		if s.Slice != nil {
			g.matchKeys(gl, s.Slice, keyAddr{regScratch, int32(key)}, slice, cont)
		}
		kept := -1
		if !ringOrder {
			kept = hashValue(gl, key)
		}
		g.bindElement(gl, s, key, kept)
	})
	g.scratchRelease(smark)
	g.stack = stack
}

// hashStep sets up the cursor of a walk of gl's hash map in s's order and
// returns what selects each iteration's element: it jumps to brk when
// none is left, else returns the scratch offset of the element's key. The
// elements are taken in a snapshot first (snapshot.go); each iteration
// selects from it, or walks the map when it could not hold them all or
// the kernel has no may_goto.
func (g *gen) hashStep(gl *Global, s *syntax.ForeachStmt) func(brk string) int {
	cur := g.allocScratch(cursorBest(gl) + elemKey + int(gl.Spec.KeySize))
	snap := g.m.hasMayGoto() && g.m.has(target.Loop) // else each iteration walks (snapshot.go)
	var ctx, count int16
	if gl.Changes != nil {
		count = g.changeCount(gl)
	}
	var scan *subprog
	if snap {
		ctx = g.snapshot(gl, s, cur, count)
		scan = g.snapshotSelector(gl, s)
	} else {
		ctx = g.cursorContext(cur)
		g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(regScratch, int16(cur+cursorHasPrev), asm.R1, asm.DWord))
		if gl.Changes != nil {
			g.readChanges(count)
		}
	}
	walk := g.selector(gl, s)
	return func(brk string) int {
		inSnapshot, selected := g.newLabel("foreach_snapshot"), g.newLabel("foreach_selected")
		g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(regScratch, int16(cur+cursorFound), asm.R1, asm.DWord))
		if snap {
			g.emit(asm.LoadMem(asm.R1, regScratch, int16(cur+cursorOverflow), asm.DWord), asm.JEq.Imm(asm.R1, 0, inSnapshot))
		}
		g.forEachElem(gl, walk, ctx)
		g.unchangedOrSkip(gl, count) // the walks since the loop began saw one array
		if snap {
			g.emit(asm.Ja.Label(selected))
			g.mark(inSnapshot)
			g.emit(asm.LoadMem(asm.R1, regScratch, int16(cur+cursorCount), asm.DWord))
			g.loopCall(scan, ctx)
		}
		g.mark(selected)
		g.emit(asm.LoadMem(asm.R1, regScratch, int16(cur+cursorFound), asm.DWord), asm.JEq.Imm(asm.R1, 0, brk))
		prev, best := cur+cursorPrev, cur+cursorBest(gl)
		g.copyWords(regScratch, prev, regScratch, best, elemKey+int(gl.Spec.KeySize), asm.R1)
		g.emit(asm.Mov.Imm(asm.R1, 1), asm.StoreMem(regScratch, int16(cur+cursorHasPrev), asm.R1, asm.DWord))
		return prev + elemKey
	}
}

// copyWords copies size bytes (a multiple of 8), a word at a time through
// register via, from offset srcOff of the address in src to offset dstOff
// of the address in dst.
func (g *gen) copyWords(dst asm.Register, dstOff int, src asm.Register, srcOff, size int, via asm.Register) {
	for off := 0; off < size; off += 8 {
		g.emit(asm.LoadMem(via, src, int16(srcOff+off), asm.DWord), asm.StoreMem(dst, int16(dstOff+off), via, asm.DWord))
	}
}

// hashValue is the scratch offset of the long value kept with the key at
// scratch offset key by hashStep (the element's sort word), or -1 when gl
// holds no longs.
func hashValue(gl *Global, key int) int {
	if gl.Stat != nil || gl.Value.Width != 0 {
		return -1
	}
	return key - elemKey + elemSort
}

// cursorContext stores the address of the cursor at scratch offset cur in
// a stack slot, a callback's context, and returns the slot.
func (g *gen) cursorContext(cur int) int16 {
	ctx := g.pushSlot()
	g.emit(asm.Mov.Reg(asm.R1, regScratch), asm.Add.Imm(asm.R1, int32(cur)), asm.StoreMem(asm.R10, ctx, asm.R1, asm.DWord))
	return ctx
}

// matchKeys jumps to miss unless the keys of gl at a and b are equal at
// every column of cols that is not a `*` (a foreach's slice, a wildcard
// delete's keys). Clobbers R1 and R2.
func (g *gen) matchKeys(gl *Global, cols []syntax.Expr, a, b keyAddr, miss string) {
	for i, k := range cols {
		if _, star := k.(*syntax.Star); star {
			continue
		}
		f := gl.Keys[i]
		for w := 0; w < fieldSize(f); w += 8 {
			g.emit(
				asm.LoadMem(asm.R1, a.base, int16(int(a.off)+f.Offset+w), asm.DWord),
				asm.LoadMem(asm.R2, b.base, int16(int(b.off)+f.Offset+w), asm.DWord),
				asm.JNE.Reg(asm.R1, asm.R2, miss),
			)
		}
	}
}

// bindElement sets the foreach's key variables from the key at scratch
// offset key, and its value variable from the long at scratch offset kept
// (the value when the element was taken, as the interpreter binds it), or
// when kept is -1 from the element that key names.
func (g *gen) bindElement(gl *Global, s *syntax.ForeachStmt, key, kept int) {
	for i, k := range s.Keys {
		dst, f := g.local(k.Var), gl.Keys[i]
		if f.Width != 0 {
			g.copyStr(dst, value{str: true, off: key + f.Offset, width: f.Width})
			continue
		}
		g.emit(asm.LoadMem(asm.R1, regScratch, int16(key+f.Offset), asm.DWord), asm.StoreMem(dst.base(), int16(dst.off), asm.R1, asm.DWord))
	}
	if s.Value == nil {
		return
	}
	if gl.Stat != nil {
		g.fail(s.Value, "the value of a statistic cannot be bound by a foreach")
		return
	}
	dst := g.local(s.Value.Var)
	if kept >= 0 {
		g.emit(asm.LoadMem(asm.R1, regScratch, int16(kept), asm.DWord), asm.StoreMem(dst.base(), int16(dst.off), asm.R1, asm.DWord))
		return
	}
	absent := g.newLabel("foreach_absent")
	if dst.str {
		g.emit(asm.StoreImm(regScratch, int16(dst.off), 0, asm.Byte))
	} else {
		g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(dst.base(), int16(dst.off), asm.R1, asm.DWord))
	}
	keyAddr{regScratch, int32(key)}.load(g, asm.R2)
	g.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(gl.Ref), asm.FnMapLookupElem.Call(), asm.JEq.Imm(asm.R0, 0, absent))
	if dst.str {
		g.readStr(asm.FnProbeReadKernelStr, dst, func() { g.emit(asm.Mov.Reg(asm.R3, asm.R0)) }, min(dst.width, gl.Value.Width))
	} else {
		g.emit(asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord), asm.StoreMem(dst.base(), int16(dst.off), asm.R1, asm.DWord))
	}
	g.mark(absent)
}

// orderKey names the callback of kind that a foreach over gl in s's
// order uses: one per array and order in a program.
func orderKey(kind string, gl *Global, s *syntax.ForeachStmt) string {
	return fmt.Sprintf("%s_%s_%d_%d_%s", kind, gl.Ref, s.SortCol, s.SortDir+1, s.SortAgg)
}

// selector returns the callback of bpf_for_each_map_elem that finds the
// least element of gl after the cursor's previous one in s's order;
// compiled on first use. Its context holds the cursor's address.
func (g *gen) selector(gl *Global, s *syntax.ForeachStmt) *subprog {
	return g.elemSorter("foreach", gl, s, nil, func(c *gen, sortSlot int16) { c.selectElement(gl, s, sortSlot) })
}

// elemSorter returns the callback of kind, of bpf_for_each_map_elem,
// that a foreach over gl in s's order walks with; compiled on first use.
// It begins with R6 = the element's key, R7 = its value (this CPU's), R8
// = the context's first word (the cursor's address), then loads, then the
// element's sort word in a stack slot, which body is given.
func (g *gen) elemSorter(kind string, gl *Global, s *syntax.ForeachStmt, loads []asm.Instruction, body func(c *gen, sortSlot int16)) *subprog {
	key := orderKey(kind, gl, s)
	return g.callback(key, elemCallbackType(key), func(c *gen) {
		c.emit(
			asm.Mov.Reg(asm.R6, asm.R2),
			asm.Mov.Reg(asm.R7, asm.R3),
			asm.LoadMem(asm.R8, asm.R4, 0, asm.DWord),
		)
		c.emit(loads...)
		sortSlot := c.pushSlot()
		c.sortWord(gl, s, sortSlot)
		body(c, sortSlot)
	})
}

// selectElement makes the element (its key at R6, its sort word at stack
// slot sortSlot) the cursor's (R8) best when it comes after the previous
// one and before the best found so far, and returns 0.
func (c *gen) selectElement(gl *Global, s *syntax.ForeachStmt, sortSlot int16) {
	afterPrev, take, skip := c.newLabel("after_prev"), c.newLabel("take"), c.newLabel("skip")
	c.emit(asm.LoadMem(asm.R1, asm.R8, cursorHasPrev, asm.DWord), asm.JEq.Imm(asm.R1, 0, afterPrev))
	c.compareElem(gl, s, sortSlot, cursorPrev, skip, afterPrev, skip)
	c.mark(afterPrev)
	c.emit(asm.LoadMem(asm.R1, asm.R8, cursorFound, asm.DWord), asm.JEq.Imm(asm.R1, 0, take))
	c.compareElem(gl, s, sortSlot, cursorBest(gl), take, skip, skip)
	c.mark(take)
	best := int16(cursorBest(gl))
	c.emit(asm.LoadMem(asm.R1, asm.R10, sortSlot, asm.DWord), asm.StoreMem(asm.R8, best+elemSort, asm.R1, asm.DWord))
	c.copyWords(asm.R8, int(best+elemKey), asm.R6, 0, int(gl.Spec.KeySize), asm.R1)
	c.emit(asm.Mov.Imm(asm.R1, 1), asm.StoreMem(asm.R8, cursorFound, asm.R1, asm.DWord))
	c.mark(skip)
	c.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
}

// sortWord stores at stack slot slot the word the element (key R6, value
// R7) sorts on when s sorts on the value: the long (kept whatever the
// order: the value variable's value), or the statistic's aggregate over
// every CPU. Anything else stores 0.
func (c *gen) sortWord(gl *Global, s *syntax.ForeachStmt, slot int16) {
	c.emit(asm.Mov.Imm(asm.R1, 0))
	switch {
	case gl.Stat == nil && gl.Value.Width == 0:
		c.emit(asm.LoadMem(asm.R1, asm.R7, 0, asm.DWord))
	case gl.Stat == nil || s.SortDir == 0 || s.SortCol != 0:
	default:
		ncpu := c.possibleCPUs(s, "a sorted foreach in a kernel probe")
		if ncpu == 0 {
			return
		}
		stack := c.stack
		acc := c.mergeCPUs(gl, keyAddr{asm.R6, 0}, ncpu)
		c.aggregateWord(s.SortAgg, acc)
		c.emit(asm.Mov.Reg(asm.R1, asm.R0))
		c.stack = stack
	}
	c.emit(asm.StoreMem(asm.R10, slot, asm.R1, asm.DWord))
}

// aggregateWord leaves in R0 the aggregate agg ("" for @count) of the
// accumulator as a sort sees it: 0 for an empty statistic's @min, @max
// and @avg (the interpreter's sortValue).
func (c *gen) aggregateWord(agg string, acc int16) {
	ld := func(r asm.Register, off int16) asm.Instruction { return asm.LoadMem(r, asm.R10, acc+off, asm.DWord) }
	done := c.newLabel("agg_done")
	switch agg {
	case format.OpSum:
		c.emit(ld(asm.R0, accSum))
		return
	case format.OpMin, format.OpMax, format.OpAvg:
		c.emit(asm.Mov.Imm(asm.R0, 0), ld(asm.R1, accCount), asm.JEq.Imm(asm.R1, 0, done))
	default:
		c.emit(ld(asm.R0, accCount))
		return
	}
	switch agg {
	case format.OpMin:
		c.emit(ld(asm.R1, accMin))
		c.emit(emitMinKey(asm.R0, asm.R1)...)
	case format.OpMax:
		c.emit(ld(asm.R1, accMax))
		c.emit(emitMaxKey(asm.R0, asm.R1)...)
	default:
		c.emit(ld(asm.R0, accSum))
		c.signedDiv(asm.R0, asm.R1, false)
	}
	c.mark(done)
}

// compareElem compares the element (its sort word at stack slot sortSlot,
// its key at R6) with the cursor's element at offset rec (R8-relative) in
// s's order, and jumps to less, greater or equal.
func (c *gen) compareElem(gl *Global, s *syntax.ForeachStmt, sortSlot int16, rec int, less, greater, equal string) {
	lo, hi := less, greater
	if s.SortDir < 0 {
		lo, hi = greater, less
	}
	switch {
	case s.SortDir == 0:
	case s.SortCol == 0:
		c.emit(
			asm.LoadMem(asm.R1, asm.R10, sortSlot, asm.DWord),
			asm.LoadMem(asm.R2, asm.R8, int16(rec+elemSort), asm.DWord),
			asm.JSLT.Reg(asm.R1, asm.R2, lo), asm.JSGT.Reg(asm.R1, asm.R2, hi),
		)
	default:
		c.compareField(gl.Keys[s.SortCol-1], rec, lo, hi)
	}
	for _, f := range gl.Keys {
		c.compareField(f, rec, less, greater)
	}
	c.emit(asm.Ja.Label(equal))
}

// compareField compares field f of the element's key (R6) with the same
// field of the cursor's element at rec, jumping to less or greater when
// they differ: a long as a signed number, a string bytewise (its words
// read big-endian, unsigned).
func (c *gen) compareField(f ArgField, rec int, less, greater string) {
	lt, gt := asm.JSLT, asm.JSGT
	if f.Width != 0 {
		lt, gt = asm.JLT, asm.JGT
	}
	for w := 0; w < fieldSize(f); w += 8 {
		c.emit(
			asm.LoadMem(asm.R1, asm.R6, int16(f.Offset+w), asm.DWord),
			asm.LoadMem(asm.R2, asm.R8, int16(rec+elemKey+f.Offset+w), asm.DWord),
		)
		if f.Width != 0 {
			c.emit(asm.HostTo(asm.BE, asm.R1, asm.DWord), asm.HostTo(asm.BE, asm.R2, asm.DWord))
		}
		c.emit(lt.Reg(asm.R1, asm.R2, less), gt.Reg(asm.R1, asm.R2, greater))
	}
}
