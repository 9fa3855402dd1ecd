package bpfgen

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Generations: how a user-side handler reads and resets a global that
// kernel programs keep counting, and loses nothing.
//
// A global the kernel only updates (sema's Var.PerCPU: `++`, `+=`, `<<<`
// as statements, never read, assigned or deleted there) that a user-side
// handler may touch while the programs run (Var.LiveUser: a timer or
// procfs probe), or that wraps, is kept in two generations, 0 and 1; GenMap's one word says which one the kernel
// programs update now. Every update reads the word and goes to that
// generation:
//
//	scalar, statistic:  a PERCPU_ARRAY of 2 elements, the key is the generation
//	array:              an ARRAY_OF_MAPS of 2 elements (Global.Outer), each
//	                    a (PERCPU_)HASH of the array's layout (Global.Spec);
//	                    the update looks its hash up first
//	last-key cache:     a PERCPU_ARRAY of 2 elements, one per generation
//
// The value of such a global is what user space holds in memory plus what
// the generations counted since. When a user-side handler first touches
// one (kernelside's generations.go), user space flips the word and waits
// until no program that read the old word is running (an update of an
// ARRAY_OF_MAPS from user space returns only after an RCU grace period,
// and tracing programs run inside RCU read sections); then nothing writes
// the old generation any more, and user space adds it to the memory copy
// and empties it. The handler reads and writes the memory copy only: it
// sees one value of each global, and what the kernel counts meanwhile
// goes to the new generation, added at the next flip, after the handler:
// the handler's writes (`delete`, `=`) erase only what it saw, as under
// stap's lock. Because updates only add, a program may update one
// generation and then the other within a run, and nesting programs
// (nesting.go) may use either.

// GenMap is an ARRAY of one u64, the generation the programs update: 0 or 1.
const GenMap = "gen"

// generations is the number of generations of a global.
const generations = 2

// genSpec describes GenMap.
func genSpec() *ebpf.MapSpec {
	return wordSpec("gen")
}

// inGenerations lays gl out in generations: a scalar or statistic gets an
// element per generation, an array an outer map of a hash per generation.
func (m *Module) inGenerations(gl *Global) {
	m.gens = true
	gl.Gens = true
	if gl.Keys == nil {
		gl.Spec.MaxEntries = generations
		return
	}
	gl.Outer = &ebpf.MapSpec{Name: gl.Spec.Name, Type: ebpf.ArrayOfMaps, KeySize: 4, ValueSize: 4,
		MaxEntries: generations, InnerMap: gl.Spec}
}

// mapSpec is the spec of the map gl.Ref names: the outer map of an array
// kept in generations, else the global's own.
func (gl *Global) mapSpec() *ebpf.MapSpec {
	if gl.Outer != nil {
		return gl.Outer
	}
	return gl.Spec
}

// storeGen stores the current generation as a u32 key at stack slot slot.
// Clobbers R1.
func (g *gen) storeGen(slot int16) {
	g.emit(
		asm.LoadMapValue(asm.R1, 0, 0).WithReference(GenMap),
		asm.LoadMem(asm.R1, asm.R1, 0, asm.DWord),
		asm.StoreMem(asm.R10, slot, asm.R1, asm.Word),
	)
}

// elements is the number of generations of gl, 1 for a global not kept
// in generations: the elements of its cache and of its ring's head.
func (gl *Global) elements() uint32 {
	if gl.Gens {
		return generations
	}
	return 1
}

// storeGenOf stores at stack slot slot the u32 key of gl's element, or of
// its cache's or ring head's: the current generation for a global kept
// in generations, else 0. Clobbers R1.
func (g *gen) storeGenOf(gl *Global, slot int16) {
	if gl.Gens {
		g.storeGen(slot)
		return
	}
	g.emit(asm.StoreImm(asm.R10, slot, 0, asm.Word))
}

// globalMap emits what finds the map of gl's elements and returns the
// instruction that loads it into a register: the global's map itself, or
// for an array in generations the current generation's hash, looked up in
// the outer map and kept in a stack slot the caller releases.
func (g *gen) globalMap(gl *Global) func(asm.Register) asm.Instruction {
	if gl.Outer == nil {
		return func(r asm.Register) asm.Instruction { return asm.LoadMapPtr(r, 0).WithReference(gl.Ref) }
	}
	slot := g.pushSlot()
	g.storeGen(slot)
	g.emit(emitLookup(gl.Ref, slot, labelExit)...)
	g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	return func(r asm.Register) asm.Instruction { return asm.LoadMem(r, asm.R10, slot, asm.DWord) }
}
