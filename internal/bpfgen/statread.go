package bpfgen

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Reading a statistic in a kernel probe: @count, @sum, @min, @max, @avg and @variance
// of a global statistic or of an element of a statistics array.
//
// stap's extractors see the aggregate over every CPU, but a statistic is a
// per-CPU map, and a lookup in BPF sees only this CPU's partial. So the
// program walks every possible CPU (their number is known when compiling)
// with bpf_map_lookup_percpu_elem and combines the partials into stack
// slots {count, sum, min, max}: counts and sums add, the order keys of min
// and max (nesting.go) take the greater. For an array with a last-key cache
// (cache.go), each CPU's pending partial is combined too when its key is
// the one read. Then:
//
//	@count, @sum  the total (0 for an element that does not exist)
//	@min, @max    the extreme, or stap's "empty aggregate" error when the
//	              count is 0
//	@avg          sum / count (truncated, as stap's division), or the error
//
// The other CPUs' partials are read while they may change (stap's module
// runtime locks them; BPF cannot), so a read racing an update on another
// CPU may miss that update. On this CPU, a statistic whose updates take
// the nesting guard (StatLayout.Guarded) is merged holding it
// (nesting.go's guardedRead). @variance combines the partials' Welford
// terms (variance.go).

// Offsets in the accumulator on the stack.
const (
	accCount = 8 * iota
	accSum
	accMin
	accMax
	accCPU
	accSize
)

// possibleCPUs returns the number of possible CPUs, which the code of
// what, at n, walks; or fails at n and returns 0 when it is unknown.
func (g *gen) possibleCPUs(n syntax.Node, what string) int {
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		g.fail(n, "%s needs the number of CPUs: %v", what, err)
		return 0
	}
	return ncpu
}

// statRead compiles a statistic extractor into R0.
func (g *gen) statRead(e *syntax.StatOp) {
	v := sema.StatVar(e.X)
	if v == nil {
		g.fail(e, "@%s() needs a statistic", e.Op)
		return
	}
	ncpu := g.possibleCPUs(e, fmt.Sprintf("@%s() in a kernel probe", e.Op))
	if ncpu == 0 {
		return
	}
	var keys []syntax.Expr
	if x, ok := e.X.(*syntax.Index); ok {
		keys = x.Keys
	}
	gl := g.m.global(v)
	smark, stack := g.scratchMark(), g.stack
	k := g.key(gl, keys)
	if e.Op == "variance" {
		g.variance(gl, k, ncpu, keys != nil, e.Pos)
	} else {
		var acc int16
		g.readPartials(gl, func() { acc = g.mergeCPUs(gl, k, ncpu) })
		g.extract(e, acc)
	}
	g.scratchRelease(smark)
	g.stack = stack
}

// readPartials emits merge, which reads gl's partials, under the nesting
// guard when gl's updates take it (guardedRead).
func (g *gen) readPartials(gl *Global, merge func()) {
	if gl.Stat.Guarded {
		g.guardedRead(merge)
		return
	}
	merge()
}

// mergeCPUs combines the partials of gl's statistic at key k on the ncpu
// possible CPUs into an accumulator it pushes on the stack, and returns
// the accumulator's offset.
func (g *gen) mergeCPUs(gl *Global, k keyAddr, ncpu int) int16 {
	acc := g.pushStack(accSize)
	g.emit(asm.Mov.Imm(asm.R1, 0))
	for off := int16(0); off < accSize; off += 8 {
		g.emit(asm.StoreMem(asm.R10, acc+off, asm.R1, asm.DWord))
	}
	top := g.newLabel("stat_cpu")
	g.mark(top)
	g.percpuLookup(gl.Ref, k, acc)
	g.mergeNonNull(acc, gl.Stat)
	if gl.Cache != nil {
		g.cachedPartial(gl, k, acc)
	}
	g.nextCPU(acc, ncpu, top)
	return acc
}

// nextCPU advances the accumulator's CPU and goes back to top while one is
// left.
func (g *gen) nextCPU(acc int16, ncpu int, top string) {
	g.emit(
		asm.LoadMem(asm.R1, asm.R10, acc+accCPU, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R10, acc+accCPU, asm.R1, asm.DWord),
		asm.JLT.Imm(asm.R1, int32(ncpu), top),
	)
}

// percpuLookup leaves in R0 the value at key k of map ref on the CPU in
// the accumulator (NULL when absent).
func (g *gen) percpuLookup(ref string, k keyAddr, acc int16) {
	g.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(ref))
	k.load(g, asm.R2)
	g.emit(asm.LoadMem(asm.R3, asm.R10, acc+accCPU, asm.DWord), asm.FnMapLookupPercpuElem.Call())
}

// cachedPartial combines the CPU's pending partial of gl's last-key cache
// when the cached key is k.
func (g *gen) cachedPartial(gl *Global, k keyAddr, acc int16) {
	skip := g.newLabel("stat_nocache")
	zero := g.pushSlot()
	g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.R10, zero, asm.R1, asm.DWord))
	g.percpuLookup(gl.Cache.Ref, keyAddr{asm.R10, int32(zero)}, acc)
	g.emit(asm.JEq.Imm(asm.R0, 0, skip), asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord), asm.JEq.Imm(asm.R1, 0, skip))
	for off := 0; off < int(gl.Spec.KeySize); off += 8 {
		g.emit(
			asm.LoadMem(asm.R1, k.base, int16(int(k.off)+off), asm.DWord),
			asm.LoadMem(asm.R2, asm.R0, int16(cacheKey+off), asm.DWord),
			asm.JNE.Reg(asm.R1, asm.R2, skip),
		)
	}
	g.emit(asm.Add.Imm(asm.R0, int32(gl.cacheValue())))
	g.mergeNonNull(acc, nil)
	g.mark(skip)
	g.popStack(8)
}

// mergeNonNull combines the partial at R0, unless R0 is NULL, into the
// accumulator: counts and sums add, the order keys of min and max take the
// greater (an empty partial is all zeros and changes nothing), those of the
// nested depths of layout l too (nil: a cache's pending partial).
func (g *gen) mergeNonNull(acc int16, l *StatLayout) {
	done := g.newLabel("merge_done")
	g.emit(asm.JEq.Imm(asm.R0, 0, done))
	type word struct {
		part, acc int16
		keep      asm.JumpOp // keep the accumulator's word when this holds
	}
	words := []word{{statCount, accCount, asm.Ja}, {statSum, accSum, asm.Ja}, {statMin, accMin, asm.JGE}, {statMax, accMax, asm.JGE}}
	if l != nil {
		for d := range l.Nested {
			minAt, maxAt := l.nestedKeys(d)
			words = append(words, word{int16(minAt), accMin, asm.JGE}, word{int16(maxAt), accMax, asm.JGE})
		}
	}
	for _, f := range words {
		keep := g.newLabel("merge_keep")
		g.emit(asm.LoadMem(asm.R3, asm.R0, f.part, asm.DWord), asm.LoadMem(asm.R4, asm.R10, acc+f.acc, asm.DWord))
		if f.keep == asm.Ja {
			g.emit(asm.Add.Reg(asm.R3, asm.R4))
		} else {
			g.emit(f.keep.Reg(asm.R4, asm.R3, keep))
		}
		g.emit(asm.StoreMem(asm.R10, acc+f.acc, asm.R3, asm.DWord))
		g.mark(keep)
	}
	g.mark(done)
}

// extract leaves e's extractor of the accumulated statistic in R0.
func (g *gen) extract(e *syntax.StatOp, acc int16) {
	ld := func(r asm.Register, off int16) asm.Instruction { return asm.LoadMem(r, asm.R10, acc+off, asm.DWord) }
	switch e.Op {
	case "count":
		g.emit(ld(asm.R0, accCount))
		return
	case "sum":
		g.emit(ld(asm.R0, accSum))
		return
	}
	g.emit(ld(asm.R1, accCount), asm.JEq.Imm(asm.R1, 0, g.errorSite(tapset.MsgEmptyAggregate, e.Pos, false)))
	switch e.Op {
	case "min":
		g.emit(ld(asm.R1, accMin))
		g.emit(emitMinKey(asm.R0, asm.R1)...) // minKey is its own inverse
	case "max":
		g.emit(ld(asm.R1, accMax))
		g.emit(emitMaxKey(asm.R0, asm.R1)...) // so is maxKey
	case "avg":
		g.emit(ld(asm.R0, accSum))
		g.signedDiv(asm.R0, asm.R1, false)
	default:
		g.fail(e, "@%s() cannot be compiled in a kernel probe", e.Op)
	}
}
