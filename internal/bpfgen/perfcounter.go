package bpfgen

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// @perf's counters (sema's perfcounter.go, the tapset's perf_counter.stp).
// Each counter has a BPF_MAP_TYPE_PERF_EVENT_ARRAY (PerfCounterMap(n))
// holding, by CPU, a counting perf event for every task, which
// kernelside opens and puts in at load. __perf_read(n) reads counter n's
// event of the current CPU with bpf_perf_event_read_value (Linux 4.15),
// which reads only an event of the CPU it runs on: n picks the map by a
// chain of tests, and a number that is no counter's, or an event the
// kernel does not read (none there: a counter no probe reads, a CPU
// brought online after the start), gives -1.

// PerfCounterMap is the name programs reference counter n's events by.
func PerfCounterMap(n int) string { return fmt.Sprintf("perf_counter%d", n) }

// perfValueSize is the size of struct bpf_perf_event_value: counter,
// enabled, running.
const perfValueSize = 24

// bpfCurrentCPU is BPF_F_CURRENT_CPU: the element of the CPU the program
// runs on.
const bpfCurrentCPU = 0xffffffff

// perfRead compiles __perf_read(n).
func (g *gen) perfRead(c *syntax.Call) {
	g.m.perfCounters = true
	g.long(c.Args[0])
	call, none, done := g.newLabel("perf_call"), g.newLabel("perf_none"), g.newLabel("perf_done")
	for n := range g.m.prog.PerfCounters {
		next := g.newLabel("perf_next")
		g.emit(
			asm.JNE.Imm(asm.R0, int32(n), next),
			asm.LoadMapPtr(asm.R1, 0).WithReference(PerfCounterMap(n)),
			asm.Ja.Label(call),
		)
		g.mark(next)
	}
	g.emit(asm.Ja.Label(none))
	value := g.pushStack(perfValueSize)
	g.mark(call)
	g.emit(
		asm.LoadImm(asm.R2, bpfCurrentCPU, asm.DWord),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, int32(value)),
		asm.Mov.Imm(asm.R4, perfValueSize),
		asm.FnPerfEventReadValue.Call(),
		asm.JNE.Imm(asm.R0, 0, none),
		asm.LoadMem(asm.R0, asm.R10, value, asm.DWord),
		asm.Ja.Label(done),
	)
	g.mark(none)
	g.emit(asm.Mov.Imm(asm.R0, -1))
	g.mark(done)
	g.popStack(perfValueSize)
}

// perfConstant compiles a function of counter n (__perf_dev(n),
// __perf_ino(n)): a chain of tests leaving field's value for counter n,
// 0 for a number that is no counter's.
func (g *gen) perfConstant(c *syntax.Call, field func(probes.PerfCounter) uint64) {
	g.long(c.Args[0])
	g.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.Mov.Imm(asm.R0, 0))
	done := g.newLabel("perf_constant")
	for n, counter := range g.m.prog.PerfCounters {
		next := g.newLabel("perf_next")
		g.emit(asm.JNE.Imm(asm.R1, int32(n), next), asm.LoadImm(asm.R0, int64(field(counter)), asm.DWord), asm.Ja.Label(done))
		g.mark(next)
	}
	g.mark(done)
}

// perfCounterMaps describes the maps of the counters, when a program
// reads them.
func (m *Module) perfCounterMaps() []Map {
	if !m.perfCounters {
		return nil
	}
	var maps []Map
	for n := range m.prog.PerfCounters {
		maps = append(maps, Map{PerfCounterMap(n), &ebpf.MapSpec{Name: PerfCounterMap(n), Type: ebpf.PerfEventArray}})
	}
	return maps
}

// PerfCounters are the counters whose events the maps PerfCounterMap(n)
// hold, nil when no program reads them.
func (m *Module) PerfCounters() []probes.PerfCounter {
	if !m.perfCounters {
		return nil
	}
	return m.prog.PerfCounters
}
