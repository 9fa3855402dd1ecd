package bpfgen_test

import (
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/tapset"
)

// TestLayoutTable compiles merged syscall.* entries and looks for the
// table of their dispatch on the argument layout (layouttable.go): there,
// with a row for each layout, when argstr is only printed, the program
// then under 2,000 instructions (two of 3,600 with the layouts compiled); not there when the probe computes argstr in the kernel,
// whose layouts keep their code in outlined subprograms. TestRun's
// kernel_syscall_layout_steps runs such a table and compares what it
// prints.
func TestLayoutTable(t *testing.T) {
	for _, c := range []struct {
		name, script string
		table        bool
	}{
		{"printed", `probe syscall.* { printf("%s(%s)\n", name, argstr) }`, true},
		{"argstr in the kernel", `probe syscall.* { if (argstr == "") printf("%s\n", name) }`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, programs := compileKernelProbes(t, c.script, tapset.Limits{})
			subprogs := 0
			for _, compiled := range programs {
				for _, in := range compiled.Instructions {
					if sym := in.Symbol(); strings.HasPrefix(sym, "layouts_") && !strings.Contains(sym, ".") {
						subprogs++
					}
				}
				t.Logf("%d instructions", len(compiled.Instructions))
				if c.table && len(compiled.Instructions) > 2000 {
					t.Errorf("%d instructions, want at most 2,000", len(compiled.Instructions))
				}
			}
			rows := 0 // of the layout tables
			for _, mp := range m.Maps() {
				if mp.Spec.Name == "layouts" {
					rows += len(mp.Spec.Contents)
				}
			}
			t.Logf("layout rows: %d; outlined subprograms: %d", rows, subprogs)
			if c.table != (rows > 100) || c.table != (subprogs == 0) {
				t.Errorf("layout rows %d, outlined subprograms %d: want a table %v", rows, subprogs, c.table)
			}
		})
	}
}
