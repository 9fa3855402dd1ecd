package bpfgen

import (
	"encoding/binary"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// A statistic's per-CPU value is format.Stat's partial, word by word:
// count, sum, min, max, avg_s, m2, variance_s, then one count per
// histogram bucket; min and max are held as order keys (nesting.go), so
// that an empty partial is all zeros and every word merges by an add or
// an unsigned maximum. `s <<< v` updates it exactly as format.Stat.Add does
// (Welford's update with the deviation truncated to 32 bits and scaled by
// @variance's shift); user space loads the partials with StatLayout.Decode
// and combines them with format.Total (globals) or Stat.Merge (elements).

// Word offsets in a statistic's value.
const (
	statCount = 8 * iota
	statSum
	statMin
	statMax
	statAvgS
	statM2
	statVariance
	statBuckets
)

// StatLayout is the value layout of a statistic.
type StatLayout struct {
	Hist  *format.Hist // nil without a histogram
	Shift uint
	// Variance: the program reads @variance, so updates keep the Welford
	// terms (two divisions per update); otherwise only count, sum, min and
	// max are kept (the other words stay zero).
	Variance bool
	// Guarded: updates hold the nesting guard (nesting.go), because they
	// keep @variance or a kernel probe deletes the statistic
	// (wholedelete.go).
	Guarded bool
	// Nested is how many pairs of min and max order keys follow the
	// buckets, at NestedAt: those of the programs nested at depths 1 and
	// deeper on a CPU, where a raise cannot be atomic (before Linux 5.12:
	// nesting.go's depthRaise); 0 elsewhere.
	Nested, NestedAt int
	Size             int
}

// nestedKeys are the offsets of the min and max order keys of nesting
// depth d+1 (d < Nested).
func (l *StatLayout) nestedKeys(d int) (minAt, maxAt int) {
	at := l.NestedAt + 16*d
	return at, at + 8
}

// Decode loads one CPU's partial.
func (l *StatLayout) Decode(b []byte) *format.Stat {
	s := format.NewStat(l.Hist, l.Shift)
	l.DecodeInto(b, s)
	return s
}

// DecodeInto loads one CPU's partial into s, a statistic NewStat made
// with the layout's histogram and shift.
func (l *StatLayout) DecodeInto(b []byte, s *format.Stat) {
	w := func(off int) int64 { return int64(binary.NativeEndian.Uint64(b[off:])) }
	s.Count, s.Sum, s.Min, s.Max = w(statCount), w(statSum), 0, 0
	minK, maxK := w(statMin), w(statMax)
	for d := range l.Nested {
		minAt, maxAt := l.nestedKeys(d)
		minK = int64(max(uint64(minK), uint64(w(minAt))))
		maxK = int64(max(uint64(maxK), uint64(w(maxAt))))
	}
	if s.Count != 0 {
		s.Min, s.Max = int64(minKey(minK)), int64(maxKey(maxK)) // keys are their own inverses
	}
	s.AvgS, s.M2, s.VarianceS = w(statAvgS), w(statM2), w(statVariance)
	for i := range s.Counts {
		s.Counts[i] = w(statBuckets + 8*i)
	}
}

// Encode stores partial s into b, a value of the layout's Size.
func (l *StatLayout) Encode(s *format.Stat, b []byte) {
	put := func(off int, v int64) { binary.NativeEndian.PutUint64(b[off:], uint64(v)) }
	put(statCount, s.Count)
	put(statSum, s.Sum)
	var minK, maxK uint64 // an empty partial's are zero
	if s.Count != 0 {
		minK, maxK = minKey(s.Min), maxKey(s.Max)
	}
	put(statMin, int64(minK))
	put(statMax, int64(maxK))
	put(statAvgS, s.AvgS)
	put(statM2, s.M2)
	put(statVariance, s.VarianceS)
	for i, c := range s.Counts {
		put(statBuckets+8*i, c)
	}
	for off := l.NestedAt; off < l.NestedAt+16*l.Nested; off += 8 {
		put(off, 0)
	}
}

// statLayout is the layout of statistic v's per-CPU partials, from the shape
// the elaborator recorded.
func (m *Module) statLayout(v *syntax.Var) *StatLayout {
	shape := m.prog.StatShape(v)
	l := &StatLayout{Hist: shape.Hist, Shift: shape.Shift, Variance: shape.Variance, Size: statBuckets}
	l.Guarded = l.Variance || !v.IsArray && m.resetInKernel(v)
	if l.Hist != nil {
		l.Size += 8 * l.Hist.Buckets()
	}
	if !m.has(target.AtomicFetch) {
		l.Nested, l.NestedAt = raiseDepths-1, l.Size
		l.Size += 16 * l.Nested
	}
	return l
}

// statAdd compiles `s <<< v` and `s[k] <<< v`: through the last-key
// cache, under the nesting guard when the layout says (Guarded), with
// atomic word updates otherwise (nesting.go).
func (g *gen) statAdd(e *syntax.Assign) {
	v := sema.StatVar(e.LHS)
	var keys []syntax.Expr
	if x, ok := e.LHS.(*syntax.Index); ok {
		keys = x.Keys
	}
	gl := g.m.global(v)
	g.long(e.RHS)
	slot := g.pushSlot()
	g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	switch {
	case gl.Cache != nil:
		g.cachedUpdate(gl, keys, slot, e.LHS.Position())
	case gl.Stat.Guarded:
		g.lookupOrCreate(gl, keys, e.LHS.Position())
		g.guarded(func() {
			g.emit(asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord))
			g.statUpdate(gl.Stat, false)
		})
	default:
		g.lookupOrCreate(gl, keys, e.LHS.Position())
		g.emit(asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord))
		g.statUpdate(gl.Stat, true)
	}
	g.popStack(8)
	g.emit(asm.Mov.Imm(asm.R0, 0))
}

// statLoad and statStore load and store word off of the partial at regRec.
func statLoad(r asm.Register, off int16) asm.Instruction {
	return asm.LoadMem(r, regRec, off, asm.DWord)
}
func statStore(off int16, r asm.Register) asm.Instruction {
	return asm.StoreMem(regRec, off, r, asm.DWord)
}

// statUpdate adds the value in R1 to the partial at regRec: with atomic
// word updates, or (the caller owning the partial) with plain ones and the
// Welford terms when the layout keeps them.
func (g *gen) statUpdate(l *StatLayout, atomic bool) {
	if l.Variance {
		g.welford(l.Shift)
	} else {
		g.countSumMinMax(l, atomic)
	}
	if l.Hist != nil {
		g.bucket(l.Hist, atomic)
	}
}

// countSumMinMax adds the value in R1 (kept) to count, sum, min and max of
// the partial at regRec, of layout l (nil for a cache's pending partial,
// which is never updated atomically). Clobbers R0 and R2-R5.
func (g *gen) countSumMinMax(l *StatLayout, atomic bool) {
	g.emit(asm.Mov.Imm(asm.R2, 1))
	g.addWord(statCount, asm.R2, atomic)
	g.addWord(statSum, asm.R1, atomic)
	g.emit(emitMinKey(asm.R3, asm.R1)...)
	g.raiseWord(statMin, l, atomic)
	g.emit(emitMaxKey(asm.R3, asm.R1)...)
	g.raiseWord(statMax, l, atomic)
}

// welford updates the partial at regRec, which the caller owns, with the
// value in R1 (kept).
func (g *gen) welford(shift uint) {
	g.countSumMinMax(nil, false)
	first, done := g.newLabel("stat_first"), g.newLabel("stat_done")
	g.emit(statLoad(asm.R2, statCount), asm.JEq.Imm(asm.R2, 1, first))
	g.emit(
		// R3 = v << shift; R4 = delta = int32(R3 - avg_s)
		asm.Mov.Reg(asm.R3, asm.R1), asm.LSh.Imm(asm.R3, int32(shift)),
		statLoad(asm.R5, statAvgS), asm.Mov.Reg(asm.R4, asm.R3), asm.Sub.Reg(asm.R4, asm.R5),
		asm.LSh.Imm(asm.R4, 32), asm.ArSh.Imm(asm.R4, 32),
		// avg_s += delta / count
		asm.Mov.Reg(asm.R0, asm.R4),
	)
	g.signedDivByPositive(asm.R0, asm.R2) // count > 1
	g.emit(
		asm.Add.Reg(asm.R5, asm.R0), statStore(statAvgS, asm.R5),
		// m2 += delta * ((v << shift) - avg_s)
		asm.Sub.Reg(asm.R3, asm.R5), asm.Mul.Reg(asm.R3, asm.R4),
		statLoad(asm.R0, statM2), asm.Add.Reg(asm.R0, asm.R3), statStore(statM2, asm.R0),
		// variance_s = m2 / (count - 1)
		asm.Sub.Imm(asm.R2, 1),
	)
	g.signedDivByPositive(asm.R0, asm.R2)
	g.emit(
		statStore(statVariance, asm.R0),
		asm.Ja.Label(done),
	)
	g.mark(first)
	g.emit(
		asm.Mov.Reg(asm.R3, asm.R1), asm.LSh.Imm(asm.R3, int32(shift)), statStore(statAvgS, asm.R3),
		asm.Mov.Imm(asm.R3, 0), statStore(statM2, asm.R3),
	)
	g.mark(done)
}

// bucket counts the value in R1 in its histogram bucket.
func (g *gen) bucket(h *format.Hist, atomic bool) {
	if h.Linear {
		g.linearBucket(h)
	} else {
		g.logBucket()
	}
	// R0 = bucket index, bounded for the verifier.
	skip := g.newLabel("bucket_skip")
	g.emit(
		asm.JGT.Imm(asm.R0, int32(h.Buckets()-1), skip),
		asm.LSh.Imm(asm.R0, 3),
		asm.Mov.Reg(asm.R2, regRec),
		asm.Add.Reg(asm.R2, asm.R0),
		asm.Mov.Imm(asm.R3, 1),
	)
	if atomic {
		g.emit(atomicOp(bpfAdd, asm.R2, asm.R3, statBuckets))
	} else {
		g.emit(asm.LoadMem(asm.R4, asm.R2, statBuckets, asm.DWord), asm.Add.Reg(asm.R4, asm.R3),
			asm.StoreMem(asm.R2, statBuckets, asm.R4, asm.DWord))
	}
	g.mark(skip)
}

// logBucket: R0 = 64 for 0, 64 + bits(v) for v > 0, 64 - bits(-v) for v < 0.
func (g *gen) logBucket() {
	zero, neg, count, done := g.newLabel("log_zero"), g.newLabel("log_neg"), g.newLabel("log_bits"), g.newLabel("log_done")
	g.emit(
		asm.Mov.Imm(asm.R0, 64),
		asm.JEq.Imm(asm.R1, 0, zero),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.Mov.Imm(asm.R4, 1), // sign of the result's offset
		asm.JSGT.Imm(asm.R1, 0, count),
	)
	g.mark(neg)
	g.emit(asm.Neg.Imm(asm.R2, 0), asm.Mov.Imm(asm.R4, -1))
	g.mark(count)
	// R3 = bits(R2), R2 unsigned and non-zero
	g.emit(asm.Mov.Imm(asm.R3, 1))
	for _, s := range []int32{32, 16, 8, 4, 2, 1} {
		next := g.newLabel("log_step")
		g.emit(
			asm.Mov.Reg(asm.R5, asm.R2),
			asm.RSh.Imm(asm.R5, s),
			asm.JEq.Imm(asm.R5, 0, next),
			asm.Mov.Reg(asm.R2, asm.R5),
			asm.Add.Imm(asm.R3, s),
		)
		g.mark(next)
	}
	g.emit(asm.Mul.Reg(asm.R3, asm.R4), asm.Add.Reg(asm.R0, asm.R3), asm.Ja.Label(done))
	g.mark(zero)
	g.mark(done)
}

// linearBucket: R0 = 0 below start, else (v-start)/interval + 1, at most
// the overflow bucket.
func (g *gen) linearBucket(h *format.Hist) {
	under, done := g.newLabel("lin_under"), g.newLabel("lin_done")
	g.emit(
		asm.Mov.Reg(asm.R0, asm.R1),
		asm.Sub.Imm(asm.R0, h.Start),
		asm.JSLT.Imm(asm.R0, 0, under),
		asm.LoadImm(asm.R2, int64(uint32(h.Interval)), asm.DWord),
		asm.Div.Reg(asm.R0, asm.R2),
		asm.Add.Imm(asm.R0, 1),
		asm.JLE.Imm(asm.R0, int32(h.Buckets()-1), done),
		asm.Mov.Imm(asm.R0, int32(h.Buckets()-1)),
		asm.Ja.Label(done),
	)
	g.mark(under)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.mark(done)
}
