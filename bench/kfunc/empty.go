package main

import (
	"fmt"

	"github.com/bpftap/bpftap/bench/floor/floors"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// emptyMain is `kfunc -empty KIND FUNC`: the reference floor, a program of
// two instructions (r0 = 0; exit) on FUNC as a fentry or a kprobe, kept
// attached until SIGINT or SIGTERM. It says "empty: attached" on its
// standard error once the link exists.
func emptyMain(kind, fn string) {
	floors.Hold("empty", func() (func(), error) { return attachEmpty(kind, fn) })
}

// floorMain is `kfunc -floor PROG`: one of bench/floor's programs (empty
// or count) on sys_enter as a tp_btf, the seed script's hook, held as
// emptyMain holds its program.
func floorMain(prog string) {
	floors.Hold("empty", func() (func(), error) { return floors.Attach(prog, "tp_btf") })
}

// attachEmpty loads the two-instruction program and attaches it to fn as
// a fentry or a kprobe.
func attachEmpty(kind, fn string) (func(), error) {
	spec := &ebpf.ProgramSpec{Name: "empty_" + kind, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}}
	switch kind {
	case "fentry":
		spec.Type, spec.AttachType, spec.AttachTo = ebpf.Tracing, ebpf.AttachTraceFEntry, fn
	case "kprobe":
		spec.Type = ebpf.Kprobe
	default:
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	p, err := ebpf.NewProgram(spec)
	if err != nil {
		return nil, err
	}
	var l link.Link
	if kind == "fentry" {
		l, err = link.AttachTracing(link.TracingOptions{Program: p})
	} else {
		l, err = link.Kprobe(fn, p, nil)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return func() { l.Close(); p.Close() }, nil
}
