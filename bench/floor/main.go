// Command floor attaches a minimal BPF program to the raw_syscalls:sys_enter
// tracepoint and keeps it attached until SIGINT or SIGTERM. It gives the
// benchmark its floors: what the kernel charges for running any program at
// all (-prog empty), and what a hand-written count by process name in a
// per-CPU hash costs (-prog count), the code a tracer compiling the seed
// script well could emit.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/bpftap/bpftap/bench/floor/floors"
)

func main() {
	prog := flag.String("prog", "empty", "program: empty or count (per-CPU hash keyed by comm)")
	attach := flag.String("attach", "tp_btf", "attach type: tp_btf or raw_tp")
	flag.Parse()
	// Catch the signals first: a signal that arrived while the program
	// was being attached would otherwise be lost (a background job of a
	// shell script starts with SIGINT ignored) and the floor run forever.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	closeAll, err := floors.Attach(*prog, *attach)
	if err != nil {
		fmt.Fprintf(os.Stderr, "floor: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "floor: attached")
	<-stop
	closeAll()
}
