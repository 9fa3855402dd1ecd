package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// emptyMain is `kfunc -empty KIND FUNC`: the reference floor, a program of
// two instructions (r0 = 0; exit) on FUNC as a fentry or a kprobe, kept
// attached until SIGINT or SIGTERM. It says "empty: attached" on its
// standard error once the link exists.
func emptyMain(kind, fn string) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	spec := &ebpf.ProgramSpec{Name: "empty_" + kind, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}}
	switch kind {
	case "fentry":
		spec.Type, spec.AttachType, spec.AttachTo = ebpf.Tracing, ebpf.AttachTraceFEntry, fn
	case "kprobe":
		spec.Type = ebpf.Kprobe
	default:
		fmt.Fprintf(os.Stderr, "empty: unknown kind %q\n", kind)
		os.Exit(2)
	}
	p, err := ebpf.NewProgram(spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "empty: %v\n", err)
		os.Exit(1)
	}
	var l link.Link
	if kind == "fentry" {
		l, err = link.AttachTracing(link.TracingOptions{Program: p})
	} else {
		l, err = link.Kprobe(fn, p, nil)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "empty: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "empty: attached")
	<-stop
	l.Close()
	p.Close()
}
