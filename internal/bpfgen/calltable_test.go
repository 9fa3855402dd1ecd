package bpfgen_test

import (
	"testing"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/target/targettest"
)

// TestCallTable compiles merged syscall.* entries and looks for the
// table of their dispatch on the call (calltable.go): one whose leaves
// only store numbers (name deferred, printed only) has it, with a row
// for every call the first program serves, and is about 4,000
// instructions; one whose leaves store a string (name read in the
// kernel) keeps its tree of comparisons. TestRun's syscall cases run both
// kinds and compare what they print.
func TestCallTable(t *testing.T) {
	for _, c := range []struct {
		name, script string
		table        bool
	}{
		{"printed", `probe syscall.* { printf("%s(%s)\n", name, argstr) }`, true},
		{"kernel name", `probe syscall.* { if (name == "umask") printf("%s\n", argstr) }`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			prog := elaborateWith(t, c.script, sema.Options{Library: library(t)})
			sema.DeferPrinted(prog)
			m := bpfgen.New(prog, bpfgen.Config{Kernel: targettest.Running(t)})
			var first *bpfgen.Program
			for _, p := range prog.Probes {
				if !p.Kernel {
					continue
				}
				compiled, err := m.Compile(p)
				if err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = compiled
				}
			}
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
				t.Errorf("first program: %d instructions, want at most 5,000 (7,074 with a tree of comparisons)", len(first.Instructions))
			}
		})
	}
}
