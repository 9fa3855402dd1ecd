package bpfrt

import (
	"io"
	"testing"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// Measurements, not tests (the machine is noisy: interleave with -count and
// compare medians):
//
//	go test -run '^$' -bench . -count 5 ./internal/bpfrt
//
// BenchmarkGetppid/* is the cost of one getppid system call with a program
// on raw_syscalls:sys_enter; subtract the "none" case for the cost a probe
// adds. BenchmarkLoadAttach is start-up: map, load, attach, close.

var emptyProgram = asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}

func BenchmarkGetppid(b *testing.B) {
	requireBPF(b)
	counts := newCounts(b)
	defer counts.Close()
	maps := map[string]*ebpf.Map{"counts": counts}
	b.Run("none", func(b *testing.B) { getppidLoop(b) })
	for _, c := range []struct {
		name  string
		kind  attach.Kind
		insns asm.Instructions
	}{
		{"empty_tp_btf", attach.TPBTF, emptyProgram},
		{"empty_raw_tracepoint", attach.RawTracepoint, emptyProgram},
		{"empty_tracepoint", attach.Tracepoint, emptyProgram},
		{"percpu_count_tp_btf", attach.TPBTF, countAllProgram},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := loadAttached(b, &ProgramSpec{Name: c.name, Attach: sysEnter(b, c.kind), Instructions: c.insns, Maps: maps})
			defer p.Close()
			getppidLoop(b)
		})
	}
}

func getppidLoop(b *testing.B) {
	for b.Loop() {
		unix.Getppid()
	}
}

// BenchmarkLoadAttach measures a probe's start-up: create its map, load
// the program and attach it (BTF already read). Each iteration attaches to
// the next tracepoint of the kernel and everything stays attached until the
// end, as in a script with many probes: attaching right after a detach
// waits for an RCU grace period (7-17 ms here), which a real start-up never
// does. Use -benchtime below the number of tracepoints (e.g. 500x).
func BenchmarkLoadAttach(b *testing.B) {
	requireBPF(b)
	tracepoint(b, "raw_syscalls:sys_enter")
	all, _ := kernel.Tracepoints()
	var tps []*kernel.Tracepoint
	for _, tp := range all {
		if tp.System != "" && tp.Proto != 0 {
			tps = append(tps, tp)
		}
	}
	for _, kind := range kindsOfTracepoints {
		b.Run(kind.String(), func(b *testing.B) {
			var open []io.Closer
			defer func() {
				for _, c := range open {
					c.Close()
				}
			}()
			for i := 0; b.Loop(); i++ {
				if i == len(tps) {
					b.Fatalf("more iterations than the %d tracepoints", len(tps))
				}
				counts := newCounts(b)
				point := &attach.Point{Kind: kind, Event: tps[i].Event, System: tps[i].System}
				if kind == attach.TPBTF {
					point.BTFID = tps[i].Proto
				}
				p := loadAttached(b, &ProgramSpec{Name: "count", Attach: point,
					Instructions: countAllProgram, Maps: map[string]*ebpf.Map{"counts": counts}})
				open = append(open, p, counts)
			}
		})
	}
}
