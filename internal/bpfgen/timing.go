package bpfgen

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/format"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Timing (-t): with Config.Timing every program reads bpf_ktime_get_ns
// after its prologue and again at its exit, and adds the difference, in
// nanoseconds, to its own per-CPU statistic in TimingMap (an element per
// program, by Program.TimingIndex). Runs the target filter rejects are not
// timed. This is what stap's STP_TIMING does around each handler; the
// figures include the clock reads (~20 ns each on this machine) but not
// the kernel's cost of calling the program.

// TimingMap is the PERCPU_ARRAY of the programs' run-time statistics.
const TimingMap = "timing"

// timingLayout is the layout of one program's statistic: no histogram.
var timingLayout = &StatLayout{Size: statBuckets}

// startTiming stores the start time in the timing slot.
func (g *gen) startTiming() {
	g.emit(asm.FnKtimeGetNs.Call(), asm.StoreMem(asm.R10, g.timeSlot, asm.R0, asm.DWord))
}

// stopTiming adds the time since startTiming to the program's statistic.
func (g *gen) stopTiming() {
	g.emit(
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R1, asm.R10, g.timeSlot, asm.DWord),
		asm.Sub.Reg(asm.R0, asm.R1),
		asm.StoreMem(asm.R10, g.timeSlot, asm.R0, asm.DWord),
	)
	g.emit(bpfrt.EmitLookupIndex(TimingMap, g.timeSlot+8, int32(g.timingIndex), labelDone)...)
	g.emit(
		asm.Mov.Reg(regRec, asm.R0),
		asm.LoadMem(asm.R1, asm.R10, g.timeSlot, asm.DWord),
	)
	g.welford(0)
}

// newTimingMap creates TimingMap for n programs.
func newTimingMap(n int) (*ebpf.Map, error) {
	mp, err := ebpf.NewMap(&ebpf.MapSpec{Name: "stap_timing", Type: ebpf.PerCPUArray, KeySize: 4,
		ValueSize: uint32(timingLayout.Size), MaxEntries: uint32(max(n, 1))})
	if err != nil {
		return nil, fmt.Errorf("map stap_timing: %w", err)
	}
	return mp, nil
}

// Timing returns the run-time statistic of program p (nanoseconds per
// run, over every CPU), or nil without Config.Timing.
func (ms *Maps) Timing(p *Program) (*format.Stat, error) {
	mp := ms.ByName[TimingMap]
	if mp == nil {
		return nil, nil
	}
	parts, err := bpfrt.LookupValues(mp, uint32(p.TimingIndex))
	if err != nil {
		return nil, err
	}
	stats := make([]*format.Stat, len(parts))
	for i, b := range parts {
		stats[i] = timingLayout.Decode(b)
	}
	return format.Total(stats...), nil
}
