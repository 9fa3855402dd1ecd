// Command kdwarf measures what bpftap's reading of a kernel's DWARF costs
// (internal/debuginfo on a vmlinux debug file, as kernel.function("F@FILE")
// and kernel.statement use it), beside Go's own reader, which copies every
// DWARF section into memory: each operation in a process of its own
// (bench/kdwarf.sh runs them), its wall time and peak RSS.
//
//	kdwarf -op OP VMLINUX
//
// OP: open (debuginfo's mapped sections), goopen (debug/elf's DWARF(),
// the peer), declared (open and the functions of fs/proc*.c), statement
// (open and the lines of vfs_read@fs/read_write.c:* with their functions
// and variables), wide (open and the lines of every function of
// fs/read_write.c, the unit read whole), readwrite (open and the functions
// of fs/read_write.c, the kernel.function("*@fs/read_write.c")),
// global (open and @var("max_threads") from kernel_clone's unit, and
// jiffies, which the DWARF only declares, from the first unit with it),
// inline (open and every inlined copy of do_sys_open, every unit read).
package main

import (
	"debug/elf"
	"flag"
	"fmt"
	"math"
	"os"
	"syscall"
	"time"

	"github.com/bpftap/bpftap/internal/debuginfo"
)

func main() {
	op := flag.String("op", "open", "open, goopen, declared, statement, wide, readwrite, global or inline")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: kdwarf -op OP VMLINUX")
		os.Exit(2)
	}
	start := time.Now()
	n, err := run(*op, flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Printf("%s %d items %.3f s %d MiB\n", *op, n, time.Since(start).Seconds(), ru.Maxrss/1024)
}

func run(op, path string) (int, error) {
	if op == "goopen" {
		e, err := elf.Open(path)
		if err != nil {
			return 0, err
		}
		_, err = e.DWARF()
		return 1, err
	}
	f, err := debuginfo.Open(path)
	if err != nil {
		return 0, err
	}
	switch op {
	case "open":
		return 1, nil
	case "declared":
		d, err := f.Declared("fs/proc*.c", 0)
		return len(d), err
	case "statement":
		return statement(f, "vfs_read", "fs/read_write.c")
	case "wide":
		lines, err := f.Lines("fs/read_write.c", 1, math.MaxInt32)
		return len(lines), err
	case "readwrite":
		d, err := f.Declared("fs/read_write.c", 0)
		return len(d), err
	case "global":
		return globals(f)
	case "inline":
		copies, err := f.Inlined(func(name string) bool { return name == "do_sys_open" })
		return len(copies), err
	}
	return 0, fmt.Errorf("unknown op %q", op)
}

// statement reads what a kernel.statement("FN@FILE:*") probe reads: the
// lines of the function's unit, the function holding each, and at each
// line the variables in scope and where they are.
func statement(f *debuginfo.File, fn, file string) (int, error) {
	n := 0
	for _, entry := range f.FunctionSymbols(fn) {
		lines, err := f.LinesNear(entry, file, 1, math.MaxInt32)
		if err != nil {
			return 0, err
		}
		for _, l := range lines {
			at, _, err := f.EntryContaining(l.Addr)
			if err != nil || at != entry {
				continue
			}
			d, err := f.FunctionAt(at)
			if err != nil {
				return 0, err
			}
			for _, v := range d.VarsAt(l.Addr) {
				d.Locate(v, l.Addr)
				n++
			}
		}
	}
	return n, nil
}

// globals finds what @var("max_threads") in a probe on kernel_clone and
// @var("jiffies") elsewhere find.
func globals(f *debuginfo.File) (int, error) {
	entries := f.FunctionSymbols("kernel_clone")
	if len(entries) != 1 {
		return 0, fmt.Errorf("%d functions kernel_clone", len(entries))
	}
	if _, err := f.GlobalAt("max_threads", entries[0]); err != nil {
		return 0, err
	}
	_, err := f.Global("jiffies", "")
	return 2, err
}
