package bpfgen

import "github.com/cilium/ebpf/asm"

// Timing (-t): with Config.Timing every program reads bpf_ktime_get_ns
// after its prologue and again at its exit, and adds the difference, in
// nanoseconds, to its own per-CPU statistic in TimingMap (an element per
// program, by Program.TimingIndex; the points of a set each have their
// own, sets.go). Runs the target filter rejects are not
// timed. This is what stap's STP_TIMING does around each handler; the
// figures include the clock reads (~20 ns each on this machine) but not
// the kernel's cost of calling the program.

// TimingMap is the PERCPU_ARRAY of the programs' run-time statistics.
const TimingMap = "timing"

// TimingLayout is the layout of one program's statistic: no histogram.
var TimingLayout = &StatLayout{Size: statBuckets}

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
	if g.points != nil { // a set's program: the point's own statistic
		g.cookieInto(g.timeSlot+8, int32(g.timingIndex))
		g.emit(emitLookup(TimingMap, g.timeSlot+8, labelDone)...)
	} else {
		g.emit(emitLookupIndex(TimingMap, g.timeSlot+8, int32(g.timingIndex), labelDone)...)
	}
	g.emit(
		asm.Mov.Reg(regRec, asm.R0),
		asm.LoadMem(asm.R1, asm.R10, g.timeSlot, asm.DWord),
	)
	g.welford(0)
}
