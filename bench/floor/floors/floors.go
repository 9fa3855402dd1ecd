// Package floors holds the reference programs the benchmarks measure
// bpftap's kernel-side cost against, on raw_syscalls:sys_enter: an empty
// program (what the kernel charges for running any program at all) and a
// hand-written count by process name in a per-CPU hash (the code a tracer
// compiling the seed script well could emit). bench/floor keeps one
// attached on the host, bench/kfunc in the guest kernels.
package floors

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

const commLen = 16

// Hold attaches a program, says "TOOL: attached" on standard error and
// keeps it attached until SIGINT or SIGTERM; it exits 1, saying why, when
// attaching fails. The signals are caught first: one that arrived while
// the program was being attached would otherwise be lost (a background
// job of a shell script starts with SIGINT ignored) and the program held
// forever.
func Hold(tool string, attach func() (func(), error)) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	detach, err := attach()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", tool, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "%s: attached\n", tool)
	<-stop
	detach()
}

// Attach loads the named program, attaches it to sys_enter and
// returns the function that detaches and frees everything.
func Attach(prog, attach string) (func(), error) {
	var counts *ebpf.Map
	insns := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	if prog == "count" {
		var err error
		counts, err = ebpf.NewMap(&ebpf.MapSpec{Name: "counts", Type: ebpf.PerCPUHash,
			KeySize: commLen, ValueSize: 8, MaxEntries: 10240})
		if err != nil {
			return nil, err
		}
		insns = countByComm(counts)
	} else if prog != "empty" {
		return nil, fmt.Errorf("unknown program %q", prog)
	}
	spec := &ebpf.ProgramSpec{Name: "floor_" + prog, License: "GPL", Instructions: insns}
	switch attach {
	case "tp_btf":
		spec.Type, spec.AttachType, spec.AttachTo = ebpf.Tracing, ebpf.AttachTraceRawTp, "sys_enter"
	case "raw_tp":
		spec.Type = ebpf.RawTracepoint
	default:
		return nil, fmt.Errorf("unknown attach type %q", attach)
	}
	p, err := ebpf.NewProgram(spec)
	if err != nil {
		return nil, err
	}
	var l link.Link
	if attach == "tp_btf" {
		l, err = link.AttachTracing(link.TracingOptions{Program: p})
	} else {
		l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: p})
	}
	if err != nil {
		return nil, err
	}
	return func() {
		l.Close()
		p.Close()
		if counts != nil {
			counts.Close()
		}
	}, nil
}

// countByComm adds one to counts[comm of the current task]. The map is per
// CPU, so a plain load, add and store is race-free.
func countByComm(counts *ebpf.Map) asm.Instructions {
	const key, one = -commLen, -commLen - 8
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, key),
		asm.Mov.Imm(asm.R2, commLen),
		asm.FnGetCurrentComm.Call(),
		asm.LoadMapPtr(asm.R1, counts.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, key),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "insert"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Ja.Label("out"),
		asm.Mov.Imm(asm.R1, 1).WithSymbol("insert"),
		asm.StoreMem(asm.R10, one, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, counts.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, key),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, one),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
}
