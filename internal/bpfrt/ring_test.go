package bpfrt

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// emitProgram writes perCall records (a 16-byte record: the loop index and
// a marker) per getppid of pid, through EmitReserve and EmitSubmit.
func emitProgram(pid int32, perCall int32, wakeBytes int64) asm.Instructions {
	insns := filterGetppid(pid)
	insns = append(insns, asm.Mov.Imm(asm.R7, 0))
	insns = append(insns, asm.JGE.Imm(asm.R7, perCall, "out").WithSymbol("loop"))
	insns = append(insns, EmitReserve("ring", "drops", 16, "next")...)
	insns = append(insns,
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.StoreMem(asm.R6, 0, asm.R7, asm.DWord),
		asm.Mov.Imm(asm.R1, 0x7a9),
		asm.StoreMem(asm.R6, 8, asm.R1, asm.DWord),
	)
	insns = append(insns, EmitSubmit("ring", asm.R6, wakeBytes, "emit")...)
	insns = append(insns,
		asm.Add.Imm(asm.R7, 1).WithSymbol("next"),
		asm.Ja.Label("loop"),
	)
	return append(insns, exit...)
}

// TestRingMillionRecords carries 1e6 records from a child's 10,000 getppid
// calls (100 records each, as fast as the kernel makes them) and checks that
// every one arrives, in order per call, with no drop counted.
func TestRingMillionRecords(t *testing.T) {
	requireBPF(t)
	tp := sysEnter(t)
	const calls, perCall = 10000, 100
	ring, err := NewRing("out", 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()
	rd, err := NewRingReader(ring, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got, bad int
	var wg sync.WaitGroup
	wg.Go(func() {
		next := uint64(0)
		if err := rd.Run(func(rec []byte) {
			if binary.NativeEndian.Uint64(rec) != next || binary.NativeEndian.Uint64(rec[8:]) != 0x7a9 {
				bad++
			}
			next = (next + 1) % perCall
			got++
		}, nil); err != nil {
			t.Error(err)
		}
	})
	child := newWorkload(t, calls)
	p := loadAttached(t, &ProgramSpec{Name: "emit", Mechanism: TPBTF, Tracepoint: tp,
		Instructions: emitProgram(child.pid(), perCall, ring.WakeBytes),
		Maps:         map[string]*ebpf.Map{"ring": ring.Map, "drops": ring.Drops}})
	defer p.Close()
	child.run(t)
	rd.Stop()
	wg.Wait()
	lost, err := ring.Lost()
	if err != nil {
		t.Fatal(err)
	}
	if got != calls*perCall || lost != 0 || bad != 0 {
		t.Errorf("received %d records (%d out of order), lost %d; sent %d", got, bad, lost, calls*perCall)
	}
}

// TestRingCountsDrops fills a small ring that nobody reads and checks that
// every record that did not fit is counted.
func TestRingCountsDrops(t *testing.T) {
	requireBPF(t)
	tp := sysEnter(t)
	const calls, perCall = 100, 100
	ring, err := NewRing("small", 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()
	child := newWorkload(t, calls)
	p := loadAttached(t, &ProgramSpec{Name: "emit", Mechanism: TPBTF, Tracepoint: tp,
		Instructions: emitProgram(child.pid(), perCall, ring.WakeBytes),
		Maps:         map[string]*ebpf.Map{"ring": ring.Map, "drops": ring.Drops}})
	defer p.Close()
	child.run(t)
	lost, err := ring.Lost()
	if err != nil {
		t.Fatal(err)
	}
	const fit = 4096 / 24 // 8-byte header + 16-byte record
	if lost != calls*perCall-fit {
		t.Errorf("lost %d, want %d", lost, calls*perCall-fit)
	}
}
