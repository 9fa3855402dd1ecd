// Command floor attaches a minimal BPF program to the raw_syscalls:sys_enter
// tracepoint and keeps it attached until SIGINT or SIGTERM. It gives the
// benchmark its floors: what the kernel charges for running any program at
// all (-prog empty), and what a hand-written count by process name in a
// per-CPU hash costs (-prog count), the code a tracer compiling the seed
// script well could emit.
package main

import (
	"flag"

	"github.com/bpftap/bpftap/bench/floor/floors"
)

func main() {
	prog := flag.String("prog", "empty", "program: empty or count (per-CPU hash keyed by comm)")
	attach := flag.String("attach", "tp_btf", "attach type: tp_btf or raw_tp")
	flag.Parse()
	floors.Hold("floor", func() (func(), error) { return floors.Attach(*prog, *attach) })
}
