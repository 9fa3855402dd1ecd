package bpfgen

import (
	"math"

	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// Exact updates when programs nest.
//
// Programs nest on a CPU: a tracepoint that fires in an interrupt runs its
// program in the middle of another program on the same CPU, possibly
// between the load and the store of a per-CPU slot. (The kernel never runs
// a program inside itself: it skips that run and counts a recursion miss,
// which the driver reports as a skipped probe.) The kernel runs the
// programs of every attach kind bpftap uses with preemption disabled, so
// nesting is last-in first-out: a nested program runs to its end before
// the one it interrupted goes on. Under that rule every per-CPU update is
// exact:
//
//   - a long (++, --, +=, -=) and the count, sum and histogram buckets of
//     a statistic are atomic adds, even in per-CPU slots;
//   - min and max are stored as order keys (minKey, maxKey): unsigned
//     words whose zero is the neutral element, so a partial has no
//     first-value case, and a new extreme is a compare-and-exchange that
//     is retried when a nested program changed the word in between.
//     Before Linux 5.12 (no compare-and-exchange) a program raises the
//     keys of its nesting depth on the CPU, a per-CPU count in NestMap:
//     the outermost program the partial's own, one nested in it (an
//     interrupt) a second pair after the buckets, and so on to
//     raiseDepths (StatLayout.Nested); each depth's keys have one writer
//     at a time, so a plain raise is exact, and readers take the greatest
//     of every depth's keys (depthRaise);
//   - the Welford terms of a statistic that keeps @variance cannot be
//     updated atomically: such an update holds a per-CPU guard (NestMap)
//     and uses plain loads and stores; an update that finds the guard
//     held is not made and is counted in SkipMap; a kernel read of such a
//     statistic (or of one a kernel probe deletes whole, whose updates
//     take the guard too) merges the partials holding the guard, and one
//     that finds it held skips the rest of the probe's run, counted
//     (guardedRead): the partial is half updated under it;
//   - the last-key cache (cache.go) has a busy word, taken the same way:
//     the update that holds it owns the pending value, a nested update
//     goes straight to the map with atomic adds, and the owner flushes a
//     pending value into the map with atomic adds too.
//
// Shared maps are exact the same way: a stack kept by value (stacks.go's
// stackStore) draws its id with an atomic add, stores its frames under it,
// then publishes it with one BPF_NOEXIST update, so nested programs (and
// other CPUs) keep a stack once and never read an id before its frames.
//
// SkipMap's count is added to the kernel's recursion misses and reported
// as skipped probes. A guard is taken with a plain load and store, which
// is exact only because nesting is last-in first-out: an attach kind
// whose programs can be preempted (uprobes on a preemptible kernel) would
// need an atomic exchange there.

// NestMap is the per-CPU guard of the updates that keep @variance (its
// first word) and the nesting depth of raises (nestDepth); SkipMap counts
// the updates made impossible by nesting.
const (
	NestMap = "nest"
	SkipMap = "skipped"
)

// NestMap's layout: the guard, then the depth of depthRaise.
const (
	nestDepth = 8
	nestSize  = 16
)

// raiseDepths is how deep programs nest on a CPU with their own min and
// max keys (a system call's program, a softirq's, a hard interrupt's, an
// NMI's); a raise deeper still is counted as skipped.
const raiseDepths = 4

// maxRaiseTries bounds the compare-and-exchange retries of raiseWord: each
// retry needs another nested program to land in a window of three
// instructions.
const maxRaiseTries = 4

// minKey and maxKey map a value to its order key: unsigned, monotonic
// (decreasing for min, increasing for max), and zero for the value every
// other beats (MaxInt64 for min, MinInt64 for max). Each is its own
// inverse.
func minKey(v int64) uint64 { return uint64(math.MaxInt64) - uint64(v) }
func maxKey(v int64) uint64 { return uint64(v) ^ 1<<63 }

// emitMinKey and emitMaxKey leave in dst the order key of the value in src.
func emitMinKey(dst, src asm.Register) asm.Instructions {
	return asm.Instructions{asm.LoadImm(dst, math.MaxInt64, asm.DWord), asm.Sub.Reg(dst, src)}
}
func emitMaxKey(dst, src asm.Register) asm.Instructions {
	return asm.Instructions{asm.LoadImm(dst, math.MinInt64, asm.DWord), asm.Xor.Reg(dst, src)}
}

// atomicOp is the atomic instruction op (BPF_ADD, BPF_FETCH, ... in the
// immediate) on the word at dst+off with src. cilium/ebpf v0.22 marshals
// every atomic instruction with an immediate of 0 (a plain atomic add)
// unless the constant is set by hand.
func atomicOp(op int64, dst, src asm.Register, off int16) asm.Instruction {
	ins := asm.AddAtomic.Mem(dst, src, asm.DWord, off)
	ins.Constant = op
	return ins
}

// Immediates of atomic instructions.
const (
	bpfAdd      = 0x00 // *dst += src
	bpfFetchAdd = 0x01 // src = atomic_fetch_add(dst, src)
	bpfCmpXchg  = 0xf1 // R0 = atomic_cmpxchg(dst, R0, src)
)

// addWord adds src to the word at regRec+off: an atomic add, or a load,
// add and store (clobbering R4) where the caller owns the word.
func (g *gen) addWord(off int16, src asm.Register, atomic bool) {
	if atomic {
		g.emit(atomicOp(bpfAdd, regRec, src, off))
		return
	}
	g.emit(asm.LoadMem(asm.R4, regRec, off, asm.DWord), asm.Add.Reg(asm.R4, src), asm.StoreMem(regRec, off, asm.R4, asm.DWord))
}

// raiseWord raises the unsigned word at regRec+off, in a partial of layout
// l, to R3 when R3 is greater. Atomically, that is a compare-and-exchange
// retried up to maxRaiseTries times; a raise that loses every race is
// counted in SkipMap. Where the kernel has no compare-and-exchange (before
// Linux 5.12) it is a plain raise of the word of this program's nesting
// depth (depthRaise). Clobbers R0, R2, R4 and R5.
func (g *gen) raiseWord(off int16, l *StatLayout, atomic bool) {
	if atomic && !g.m.has(target.AtomicFetch) {
		g.depthRaise(off, int16(l.NestedAt)+off-statMin)
		return
	}
	done := g.newLabel("raised")
	g.emit(asm.LoadMem(asm.R0, regRec, off, asm.DWord))
	if !atomic {
		g.emit(asm.JGE.Reg(asm.R0, asm.R3, done), asm.StoreMem(regRec, off, asm.R3, asm.DWord))
		g.mark(done)
		return
	}
	for range maxRaiseTries {
		g.emit(
			asm.JGE.Reg(asm.R0, asm.R3, done),
			asm.Mov.Reg(asm.R4, asm.R0),
			atomicOp(bpfCmpXchg, regRec, asm.R3, off), // R0 = the word; stored R3 if it was R0
			asm.JEq.Reg(asm.R0, asm.R4, done),
		)
	}
	g.countSkip()
	g.mark(done)
}

// depthRaise raises to R3 the word at regRec+off where this program is
// the outermost on its CPU, else the one at regRec+nested+16*(depth-1),
// depth counted in NestMap, with a plain load and store: programs nest
// last-in first-out, so the word of a depth has one writer at a time. R1
// and R3 wait in stack slots while the depth is taken; past raiseDepths
// the raise is counted as skipped.
func (g *gen) depthRaise(off, nested int16) {
	g.m.guards = true
	saved := g.pushStack(24) // R1, R3, then NestMap's value
	keyAt, nestAt := saved+8, saved+16
	raise, release, full, done := g.newLabel("raise_word"), g.newLabel("raise_release"),
		g.newLabel("raise_full"), g.newLabel("raise_done")
	g.emit(asm.StoreMem(asm.R10, saved, asm.R1, asm.DWord), asm.StoreMem(asm.R10, keyAt, asm.R3, asm.DWord))
	g.emit(emitLookupIndex(NestMap, nestAt, 0, labelExit)...)
	g.emit(
		asm.StoreMem(asm.R10, nestAt, asm.R0, asm.DWord),
		asm.LoadMem(asm.R2, asm.R0, nestDepth, asm.DWord),
		asm.JGE.Imm(asm.R2, raiseDepths, full),
		asm.Mov.Reg(asm.R1, asm.R2), asm.Add.Imm(asm.R1, 1), asm.StoreMem(asm.R0, nestDepth, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R5, regRec), asm.Add.Imm(asm.R5, int32(off)),
		asm.JEq.Imm(asm.R2, 0, raise),
		asm.LSh.Imm(asm.R2, 4), asm.Mov.Reg(asm.R5, regRec), asm.Add.Imm(asm.R5, int32(nested)-16), asm.Add.Reg(asm.R5, asm.R2),
	)
	g.mark(raise)
	g.emit(
		asm.LoadMem(asm.R3, asm.R10, keyAt, asm.DWord),
		asm.LoadMem(asm.R4, asm.R5, 0, asm.DWord),
		asm.JGE.Reg(asm.R4, asm.R3, release),
		asm.StoreMem(asm.R5, 0, asm.R3, asm.DWord),
	)
	g.mark(release)
	g.emit(
		asm.LoadMem(asm.R0, asm.R10, nestAt, asm.DWord),
		asm.LoadMem(asm.R2, asm.R0, nestDepth, asm.DWord), asm.Sub.Imm(asm.R2, 1),
		asm.StoreMem(asm.R0, nestDepth, asm.R2, asm.DWord),
		asm.Ja.Label(done),
	)
	g.mark(full)
	g.countSkip()
	g.mark(done)
	g.emit(asm.LoadMem(asm.R1, asm.R10, saved, asm.DWord))
	g.popStack(24)
}

// countSkip adds one to SkipMap. Clobbers R2 and R5.
func (g *gen) countSkip() {
	g.m.skips = true
	g.countIn(SkipMap, 0, asm.R5)
}

// countIn adds one, atomically, to the word at offset word of the value
// of array map mapRef (a counter shared by the CPUs), its address in ptr.
// Clobbers ptr and R2.
func (g *gen) countIn(mapRef string, word uint32, ptr asm.Register) {
	g.emit(asm.LoadMapValue(ptr, 0, word).WithReference(mapRef), asm.Mov.Imm(asm.R2, 1),
		atomicOp(bpfAdd, ptr, asm.R2, 0))
}

// guarded emits body holding this CPU's NestMap guard, or counts a skip
// when the guard is held (body then does not run). body may use R0-R5 and
// regRec.
func (g *gen) guarded(body func()) {
	g.underGuard(body, g.countSkip)
	g.popStack(8)
}

// guardedRead emits read, the merge of a guarded statistic's partials
// (StatLayout.Guarded), holding this CPU's guard, so that no update or
// delete nested in it changes the partials half way through the merge
// (such a nested update is skipped, counted). When the guard is held,
// this program interrupted an update or a delete of a guarded statistic
// on this CPU, which cannot go on before this program ends: the partial
// is half updated or half zeroed and no exact value can be read, so the
// rest of the probe's run is skipped and counted as a skipped probe, as
// stap skips a probe that finds a global locked. read may use R0-R5,
// regRec and stack it pushes (kept: the caller restores the stack); it
// must not jump out.
func (g *gen) guardedRead(read func()) {
	g.underGuard(read, g.skipRun)
}

// skipRun counts a skipped probe and skips the rest of the probe's run.
func (g *gen) skipRun() {
	g.countSkip()
	g.emit(asm.Ja.Label(g.exitLabel))
}

// underGuard emits body holding this CPU's NestMap guard, its address in
// a stack slot it pushes, or held when the guard is held.
func (g *gen) underGuard(body, held func()) {
	g.m.guards = true
	isHeld, done := g.newLabel("guard_held"), g.newLabel("guard_done")
	guard := g.pushSlot()
	g.emit(emitLookupIndex(NestMap, guard, 0, labelExit)...)
	g.emit(
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord), asm.JNE.Imm(asm.R1, 0, isHeld),
		asm.Mov.Imm(asm.R1, 1), asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.StoreMem(asm.R10, guard, asm.R0, asm.DWord),
	)
	body()
	g.emit(
		asm.LoadMem(asm.R0, asm.R10, guard, asm.DWord), asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Ja.Label(done),
	)
	g.mark(isHeld)
	held()
	g.mark(done)
}
