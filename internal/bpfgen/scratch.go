package bpfgen

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The scratch area: one element of the program's ScratchMap holds the
// program's string locals, formatter rooms and temporaries (from offset
// 0, up to maxScr), then the frames of the functions it calls
// (subprog.go), frames within frames as deep as the calls go. A program
// does not run inside itself on a CPU (nesting.go), so one element per
// CPU is enough: a per-CPU array's, or, when the area is larger than a
// per-CPU value may be (perCPUValueMax), the running CPU's element of a
// plain array of one per possible CPU (bpf_get_smp_processor_id: the
// programs run with migration disabled).

// perCPUValueMax is the largest value of a per-CPU map (the kernel's
// PCPU_MIN_UNIT_SIZE).
const perCPUValueMax = 32 << 10

// scratchSize is the bytes of g's scratch element: its own scratch, then
// its callees' frames.
func (g *gen) scratchSize() int {
	if g.calleeFrames == 0 {
		return g.maxScr + g.disjointFrames
	}
	return g.frameBase() + g.calleeFrames + g.disjointFrames
}

// scratchPerCPU tells whether the scratch element fits a per-CPU array.
func (g *gen) scratchPerCPU() bool { return g.scratchSize() <= perCPUValueMax }

// lookupScratch emits R9 = this CPU's scratch element (perCPU: whether it
// is a per-CPU array's), the program's end when the lookup fails.
func (g *gen) lookupScratch(perCPU bool) {
	if perCPU {
		g.emit(emitLookupIndex(ScratchMap, -8, 0, labelDone)...)
	} else {
		g.emit(asm.FnGetSmpProcessorId.Call(), asm.StoreMem(asm.R10, -8, asm.R0, asm.Word))
		g.emit(emitLookup(ScratchMap, -8, labelDone)...)
	}
	g.emit(asm.Mov.Reg(regScratch, asm.R0))
}

// scratchMap is the spec of the program's ScratchMap (nil when it uses no
// scratch): perCPU tells which kind the prologue looked up.
func (g *gen) scratchMap(perCPU bool) (*ebpf.MapSpec, error) {
	size := g.scratchSize()
	switch {
	case size == 0:
		return nil, nil
	case perCPU && size > perCPUValueMax:
		return nil, fmt.Errorf("the probe's scratch area grew to %d bytes after its prologue chose a per-CPU array (at most %d)", size, perCPUValueMax)
	case perCPU:
		return perCPUArray("scratch", uint32(size), 1), nil
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("a scratch area of %d bytes needs one element per CPU: %w", size, err)
	}
	return &ebpf.MapSpec{Name: "scratch", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(size), MaxEntries: uint32(cpus)}, nil
}
