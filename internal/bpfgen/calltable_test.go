package bpfgen_test

import (
	"testing"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/tapset/tapsettest"
	"github.com/bpftap/bpftap/internal/target/targettest"
)

// TestCallTable compiles merged syscall.* entries and looks for the
// table of their dispatch on the call (calltable.go), with a row for
// every call the first program serves: there when the calls' names are
// deferred (printed only) or strings read in the kernel, and the first
// program about 4,000 instructions, not 7,000; not there when a name does
// not fit its string's slot (MAXSTRINGLEN 16: sched_get_priority_max).
// TestRun's syscall cases run them and compare what they print.
func TestCallTable(t *testing.T) {
	for _, c := range []struct {
		name, script string
		maxStr       int64
		table        bool
	}{
		{"printed", `probe syscall.* { printf("%s(%s)\n", name, argstr) }`, 0, true},
		{"kernel name", `probe syscall.* { if (name == "umask") printf("%s\n", argstr) }`, 0, true},
		{"names too long", `probe syscall.* { if (name == "umask") printf("%s\n", argstr) }`, 16, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, programs := compileKernelProbes(t, c.script, tapset.Limits{MaxStringLen: c.maxStr})
			first := programs[0]
			rows := 0 // of the first program's table
			for _, mp := range m.Maps() {
				if mp.Ref == "syscall_calls_0" {
					rows = len(mp.Spec.Contents)
				}
			}
			t.Logf("first program: %d instructions; table rows: %d", len(first.Instructions), rows)
			if c.table != (rows > 300) {
				t.Errorf("table rows %d: want a table %v", rows, c.table)
			}
			if c.table && len(first.Instructions) > 5000 {
				t.Errorf("first program: %d instructions, want at most 5,000 (7,000 and more with a tree of comparisons)", len(first.Instructions))
			}
		})
	}
}

// compileKernelProbes compiles the kernel probes of script, its printed
// strings left to user space, with the library and limits.
func compileKernelProbes(t *testing.T, script string, limits tapset.Limits) (*bpfgen.Module, []*bpfgen.Program) {
	t.Helper()
	prog := elaborateWith(t, script, sema.Options{Library: tapsettest.Files(t)})
	sema.DeferPrinted(prog)
	m := bpfgen.New(prog, bpfgen.Config{Kernel: targettest.Running(t), Limits: limits})
	var programs []*bpfgen.Program
	for _, p := range prog.Probes {
		if !p.Kernel {
			continue
		}
		compiled, err := m.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		programs = append(programs, compiled)
	}
	return m, programs
}
