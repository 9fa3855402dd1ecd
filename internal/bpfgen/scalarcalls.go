package bpfgen

import (
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// Scalar calls: global functions before Linux 5.12.
//
// A global BPF function takes pointers only from Linux 5.12 ("Arg#0 type
// PTR in f() is not supported yet" before). Where the target kernel lacks
// them (target.GlobalFuncPointers), or where it takes them but refuses a map
// key or value in the memory one points to (target.MemMapKeys, Linux 6.2:
// a function's `[pid] in set`), the subprograms that are global
// functions, script functions and the formatter's number conversions, take
// offsets into the program's scratch element where they take pointers
// elsewhere. Each looks the element up itself (the running CPU's element of
// a plain array: the program's ScratchMap is then always one, since a
// subprogram is compiled before its program knows its scratch size) and
// bounds every offset it is given by the element's size less the bytes it
// reaches past it, so that the verifier accepts the pointer it makes; the
// element's size is patched into those comparisons once the program is
// assembled (setScratchBounds). A script function's own frame is not passed
// at all: each has a frame of its own in the element, after the program's
// scratch and disjoint from every other function's (recursion is refused,
// so a function never needs two), at an offset patched into its code
// (layDisjointFrames): its frame pointer is the element's plus a constant,
// which the verifier treats as it treats the program's own, where a frame
// offset passed as an argument would be a range every access through it
// must prove bounded. Frames laid side by side take more of the element
// than frames stacked by calls, which this kernel's plain array allows.
// A static subprogram of such a function (an outlined subtree, a callback)
// shares its frame through a pointer, which a static function may take, and
// knows no offset of its own (unknownBase): a call in one is inlined.
// Static functions would do for all (they may take pointers on any
// kernel), but the verifier walks them at every call: the merged program
// of syscall.* took six times the verifier's work so.

// scalarCalls tells whether the global subprograms take offsets.
func (m *Module) scalarCalls() bool {
	return !m.has(target.GlobalFuncPointers) || !m.has(target.MemMapKeys)
}

// scratchBoundKey marks a comparison of an offset with the scratch
// element's size less the bytes the code reaches past it (its value).
type scratchBoundKey struct{}

// boundOffset jumps to labelExit when the offset in r leaves fewer than
// need bytes of the scratch element after it.
func (g *gen) boundOffset(r asm.Register, need int) {
	in := asm.JGT.Imm(r, 0, labelExit)
	in.Metadata.Set(scratchBoundKey{}, need)
	g.emit(in)
}

// setScratchBounds gives the bounds of insns (boundOffset) their constant
// for a scratch element of size bytes.
func setScratchBounds(insns asm.Instructions, size int) {
	for i, in := range insns {
		if need, ok := in.Metadata.Get(scratchBoundKey{}).(int); ok {
			in.Constant = int64(max(size-need, 0))
			insns[i] = in
		}
	}
}

// lookupElement leaves in R0 the running CPU's scratch element, its index
// stored at stack slot key; labelExit when the lookup fails.
func (g *gen) lookupElement(key int16) {
	g.emit(asm.FnGetSmpProcessorId.Call(), asm.StoreMem(asm.R10, key, asm.R0, asm.Word))
	g.emit(emitLookup(ScratchMap, key, labelExit)...)
}

// offsetPointer replaces the offset in stack slot at by the pointer to
// it in the element at R0 (kept), bounded for need bytes. Clobbers R1 and
// R2.
func (g *gen) offsetPointer(at int16, need int) {
	g.emit(asm.LoadMem(asm.R1, asm.R10, at, asm.DWord))
	g.boundOffset(asm.R1, need)
	g.emit(asm.Mov.Reg(asm.R2, asm.R0), asm.Add.Reg(asm.R2, asm.R1), asm.StoreMem(asm.R10, at, asm.R2, asm.DWord))
}

// scratchOffset leaves in r the element offset of g's scratch offset off:
// off in the program, off past its frame's in a script function.
func (g *gen) scratchOffset(r asm.Register, off int) {
	g.emit(asm.Mov.Imm(r, int32(off)))
	if g.ownBase != "" {
		g.emit(baseAdd(r, g.ownBase))
	}
}

// frameBaseOfKey marks the `r += base` of a script function's frame
// offset (its label is the value), patched by layDisjointFrames.
type frameBaseOfKey struct{}

// baseAdd is `r += the frame offset of the script function label`.
func baseAdd(r asm.Register, label string) asm.Instruction {
	in := asm.Add.Imm(r, 0)
	in.Metadata.Set(frameBaseOfKey{}, label)
	return in
}

// layDisjointFrames gives each script function of g's program that takes
// offsets its frame after the program's scratch, patches the offsets into
// their code and the element's size into the bounds.
func (g *gen) layDisjointFrames() {
	at := (g.scratchSize() + 7) &^ 7
	bases := map[string]int{}
	for _, sp := range g.subs.order {
		if sp.disjoint {
			bases[sp.label] = at
			at += (sp.frame + 7) &^ 7
		}
	}
	g.disjointFrames += at - g.scratchSize()
	for i, in := range g.insns {
		if label, ok := in.Metadata.Get(frameBaseOfKey{}).(string); ok {
			in.Constant = int64(bases[label])
			g.insns[i] = in
		}
	}
	setScratchBounds(g.insns, g.scratchSize())
}
