package bpfgen

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Wrapping arrays (`global a%[N]`, `global a%`): as in stap, an element
// added to a full array replaces the oldest one. A hash map cannot tell
// which one is oldest, so such an array keeps its keys in the order they
// were added, in a ring of N key slots (Global.Ring, an ARRAY of N slots
// per generation) and a count of the keys added (Global.Heads, one u64
// per generation):
//
//   - The program that creates an element (its BPF_NOEXIST insert
//     succeeded) claims slot count % N with an atomic fetch-and-add of the
//     count and copies the key there.
//   - An insert that finds the map full (-E2BIG) claims the next slot the
//     same way: it holds the oldest key, which the program deletes before
//     it inserts again and copies its own key into the slot; if another
//     CPU took the freed element meanwhile, it evicts the next oldest, up
//     to evictTries times.
//
// Elements deleted by the script leave their keys in the ring; deleting
// such a key again does nothing, and an insert that still finds the map
// full then raises the overflow error. User space adds keys the same way
// (kernelside's storage.go) and folds a generation in ring order, so the
// interpreter's copy keeps the order too (generations.go).

// errTooBig is -E2BIG, what an insert into a full hash map returns.
const errTooBig = -7

// evictTries bounds the evictions of one insert into a full wrapping
// array: another CPU's insert may take the element an eviction freed
// before this one's insert gets it (two CPUs at a full errsnoop array
// raised "Array overflow"), and the insert then evicts the next oldest.
const evictTries = 3

// ordered lays out the ring and the count of gl, a wrapping array.
func (m *Module) ordered(gl *Global) {
	n := gl.elements()
	gl.Ring = &Map{"o_" + gl.Var.Name, &ebpf.MapSpec{Name: "o_" + gl.Var.Name, Type: ebpf.Array, KeySize: 4,
		ValueSize: gl.Spec.KeySize, MaxEntries: n * gl.Spec.MaxEntries}}
	gl.Heads = &Map{"h_" + gl.Var.Name, &ebpf.MapSpec{Name: "h_" + gl.Var.Name, Type: ebpf.Array, KeySize: 4,
		ValueSize: 8, MaxEntries: n}}
}

// keepOrder follows the BPF_NOEXIST insert of the key at k into the map
// elements loads, its result in R0: a created element's key goes into the
// ring; a full map loses its oldest element to the key.
func (g *gen) keepOrder(gl *Global, k keyAddr, elements func(asm.Register) asm.Instruction) {
	created, done := g.newLabel("created"), g.newLabel("ordered")
	g.emit(asm.JEq.Imm(asm.R0, 0, created), asm.JNE.Imm(asm.R0, errTooBig, done))
	stack := g.stack
	for range evictTries {
		next := g.newLabel("evict")
		slot := g.claimSlot(gl)
		g.emit(elements(asm.R1), asm.LoadMem(asm.R2, asm.R10, slot, asm.DWord), asm.FnMapDeleteElem.Call())
		zero := g.pushSlot()
		g.emit(emitLookupIndex(ZeroMap, zero, 0, labelExit)...)
		g.emit(asm.Mov.Reg(asm.R3, asm.R0), elements(asm.R1))
		k.load(g, asm.R2)
		g.emit(asm.Mov.Imm(asm.R4, bpfNoExist), asm.FnMapUpdateElem.Call(),
			asm.JEq.Imm(asm.R0, errTooBig, next), asm.JNE.Imm(asm.R0, 0, done))
		g.copyKey(gl, k, slot)
		g.emit(asm.Ja.Label(done))
		g.stack = stack
		g.mark(next)
	}
	g.emit(asm.Ja.Label(done))
	g.mark(created)
	g.copyKey(gl, k, g.claimSlot(gl))
	g.stack = stack
	g.mark(done)
}

// claimSlot takes the next slot of gl's ring for the current generation
// and returns the stack slot holding its address.
func (g *gen) claimSlot(gl *Global) int16 {
	slot := g.pushSlot()
	g.storeGenOf(gl, slot)
	g.emit(emitLookup(gl.Heads.Ref, slot, labelExit)...)
	n := int32(gl.Spec.MaxEntries)
	g.emit(
		asm.Mov.Imm(asm.R1, 1),
		atomicOp(bpfFetchAdd, asm.R0, asm.R1, 0),
		asm.Mod.Imm(asm.R1, n),
		asm.LoadMem(asm.R2, asm.R10, slot, asm.Word),
		asm.Mul.Imm(asm.R2, n),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.R10, slot, asm.R1, asm.Word),
	)
	g.emit(emitLookup(gl.Ring.Ref, slot, labelExit)...)
	g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	return slot
}

// copyKey copies the key at k into the ring slot whose address is in
// stack slot slot.
func (g *gen) copyKey(gl *Global, k keyAddr, slot int16) {
	g.emit(asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord), asm.Mov.Imm(asm.R2, int32(gl.Spec.KeySize)))
	k.load(g, asm.R3)
	g.emit(asm.FnProbeReadKernel.Call())
}
