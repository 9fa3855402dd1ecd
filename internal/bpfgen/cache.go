package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The last-key cache.
//
// An array the kernel only updates (sema's Var.PerCPU: `a[k]++`,
// `a[k] += v`, `a[k] <<< v`, read only by user space) goes through a
// one-entry cache per CPU: {valid, busy, key, pending value}. An update
// whose key is the cached one adds to the pending value (a per-CPU array
// lookup the verifier inlines, a compare of the key's words, an add: no
// hash); any other key takes the cache over and then flushes the previous
// key's pending value into the hash map. Consecutive events on a CPU
// mostly come from the same process (the seed's `syscalls[execname()]++`),
// so most updates skip the hash lookup, the dominant cost. User space
// folds the pending values in when it reads the array (kernelside's
// storage); after the programs are detached nothing is pending anywhere
// but in the caches.
//
// The update that sets busy owns the pending value and the key; an update
// from a program nested inside it (nesting.go) finds busy set and adds to
// the map's element directly, atomically, as the owner's flush does. The
// owner releases busy before its flush, which works on a copy.
//
// Cached: arrays of longs updated with + or -, and statistics that keep
// no histogram and no @variance (count, sum, min, max merge exactly).

// Cache is the layout of a global's cache: a PERCPU_ARRAY of an element
// per generation (generations.go) or of one for a global not kept in
// generations, {u64 valid; u64 busy; key (the array's packed key); value}.
type Cache struct {
	Ref  string
	Spec *ebpf.MapSpec
}

// Offsets in a cache element: busy, and the key.
const (
	cacheBusy = 8
	cacheKey  = 16
)

// cacheValue is the offset of the pending value in a cache element of gl.
func (gl *Global) cacheValue() int { return cacheKey + int(gl.Spec.KeySize) }

// cacheFor returns the cache of gl, or nil when its updates go to the map.
func cacheFor(gl *Global) *Cache {
	cached := gl.Var.PerCPU && gl.Keys != nil &&
		(gl.Stat == nil && gl.Value.Width == 0 || gl.Stat != nil && gl.Stat.Hist == nil && !gl.Stat.Variance)
	if !cached {
		return nil
	}
	size := cacheKey + gl.Spec.KeySize + gl.Spec.ValueSize
	return &Cache{Ref: "c_" + gl.Var.Name, Spec: &ebpf.MapSpec{Name: "c_" + gl.Var.Name,
		Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: size, MaxEntries: gl.elements()}}
}

// cachedUpdate compiles an update of gl[keys] through its cache: the value
// to add (a long, or a statistic's new value) is in stack slot val.
func (g *gen) cachedUpdate(gl *Global, keys []syntax.Expr, val int16, at syntax.Pos) {
	smark, stack := g.scratchMark(), g.stack
	k := g.key(gl, keys)
	gen := g.pushSlot()
	g.storeGenOf(gl, gen)
	g.emit(emitLookup(gl.Cache.Ref, gen, labelExit)...)
	g.emit(asm.Mov.Reg(regRec, asm.R0))
	miss, nested, done := g.newLabel("cache_miss"), g.newLabel("cache_nested"), g.newLabel("cache_done")
	g.emit(
		asm.LoadMem(asm.R1, regRec, cacheBusy, asm.DWord), asm.JNE.Imm(asm.R1, 0, nested),
		asm.Mov.Imm(asm.R1, 1), asm.StoreMem(regRec, cacheBusy, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, regRec, 0, asm.DWord), asm.JEq.Imm(asm.R1, 0, miss),
	)
	for off := 0; off < int(gl.Spec.KeySize); off += 8 {
		g.emit(
			asm.LoadMem(asm.R1, regScratch, int16(int(k.off)+off), asm.DWord),
			asm.LoadMem(asm.R2, regRec, int16(cacheKey+off), asm.DWord),
			asm.JNE.Reg(asm.R1, asm.R2, miss),
		)
	}
	g.addPending(gl, val)
	g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(regRec, cacheBusy, asm.R1, asm.DWord), asm.Ja.Label(done))
	g.mark(miss)
	g.takeOver(gl, k, val, at)
	g.emit(asm.Ja.Label(done))
	g.mark(nested)
	g.lookupOrCreateKey(gl, k, at)
	g.emit(asm.LoadMem(asm.R1, asm.R10, val, asm.DWord))
	if gl.Stat == nil {
		g.addWord(0, asm.R1, true)
	} else {
		g.countSumMinMax(gl.Stat, true)
	}
	g.mark(done)
	g.scratchRelease(smark)
	g.stack = stack
}

// addPending adds the value in slot val to the pending value at regRec.
func (g *gen) addPending(gl *Global, val int16) {
	off := int16(gl.cacheValue())
	g.emit(asm.LoadMem(asm.R1, asm.R10, val, asm.DWord))
	if gl.Stat == nil {
		g.emit(asm.LoadMem(asm.R2, regRec, off, asm.DWord), asm.Add.Reg(asm.R2, asm.R1), asm.StoreMem(regRec, off, asm.R2, asm.DWord))
		return
	}
	g.emit(asm.Add.Imm(regRec, int32(off)))
	g.countSumMinMax(nil, false)
	g.emit(asm.Add.Imm(regRec, -int32(off)))
}

// takeOver makes the key at k the cached one: the pending value of the
// previous key (if any) is moved to stack slots, the key words swapped
// into the cache (k then holds the previous key), the value of slot val
// becomes the pending one, busy is released, and the previous pending
// value is flushed into the map under the previous key.
func (g *gen) takeOver(gl *Global, k keyAddr, val int16, at syntax.Pos) {
	words := int(gl.Spec.ValueSize) / 8
	if gl.Stat != nil {
		words = statMin/8 + 2 // count, sum, min, max
	}
	old, valid := g.pushStack(8*words), g.pushSlot()
	valueOff := gl.cacheValue()
	g.emit(asm.LoadMem(asm.R1, regRec, 0, asm.DWord), asm.StoreMem(asm.R10, valid, asm.R1, asm.DWord),
		asm.StoreImm(regRec, 0, 1, asm.Word))
	for i := range words {
		g.emit(
			asm.LoadMem(asm.R1, regRec, int16(valueOff+8*i), asm.DWord),
			asm.StoreMem(asm.R10, old+int16(8*i), asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(regRec, int16(valueOff+8*i), asm.R1, asm.DWord),
		)
	}
	for off := 0; off < int(gl.Spec.KeySize); off += 8 {
		g.emit(
			asm.LoadMem(asm.R1, regScratch, int16(int(k.off)+off), asm.DWord),
			asm.LoadMem(asm.R2, regRec, int16(cacheKey+off), asm.DWord),
			asm.StoreMem(regRec, int16(cacheKey+off), asm.R1, asm.DWord),
			asm.StoreMem(regScratch, int16(int(k.off)+off), asm.R2, asm.DWord),
		)
	}
	g.addPending(gl, val)
	g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(regRec, cacheBusy, asm.R1, asm.DWord))
	done := g.newLabel("flushed")
	g.emit(asm.LoadMem(asm.R1, asm.R10, valid, asm.DWord), asm.JEq.Imm(asm.R1, 0, done))
	g.lookupOrCreateKey(gl, k, at)
	g.flush(gl, old)
	g.mark(done)
}

// flush adds the pending value saved at stack slot old to the element at
// regRec, atomically: a long, or a partial's count, sum, min and max.
func (g *gen) flush(gl *Global, old int16) {
	g.emit(asm.LoadMem(asm.R1, asm.R10, old, asm.DWord))
	g.addWord(0, asm.R1, true)
	if gl.Stat == nil {
		return
	}
	g.emit(asm.LoadMem(asm.R1, asm.R10, old+statSum, asm.DWord))
	g.addWord(statSum, asm.R1, true)
	for _, off := range []int16{statMin, statMax} {
		g.emit(asm.LoadMem(asm.R3, asm.R10, old+off, asm.DWord))
		g.raiseWord(off, gl.Stat, true)
	}
}
