package bpfgen_test

import (
	"testing"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/bpftap/bpftap/internal/target/targettest"
	"golang.org/x/sys/unix"
)

// TestGlobalLayout compiles each script's kernel probes on the running
// kernel (or on it without runtime_alloc_maps) and checks how global s is
// laid out: whether its hash allocates its elements as they are added
// (BPF_F_NO_PREALLOC: only where every kernel probe runs in a task's own
// context) and whether it is kept in generations.
func TestGlobalLayout(t *testing.T) {
	const seed = `global s probe kernel.trace("sys_enter") { s[execname()]++ } `
	for _, c := range []struct {
		name, script      string
		noRuntimeAlloc    bool
		noPrealloc, inGen bool
	}{
		{"seed", seed + `probe begin { exit() }`, false, true, false},
		{"before_6.1", seed + `probe begin { exit() }`, true, false, false},
		{"end_reads", seed + `probe end { foreach (k in s) println(k) }`, false, true, false},
		{"timer_reads", seed + `probe timer.s(1) { foreach (k in s) println(k) }`, false, true, true},
		{"function_timer_calls", seed + `function show() { foreach (k in s) println(k) } probe timer.s(1) { show() }`, false, true, true},
		{"syscall_event", `global s probe kernel.trace("syscalls:sys_enter_read") { s[execname()]++ }`, false, true, false},
		{"allocator_path", seed + `probe kernel.trace("kmem:kmalloc") { s["x"]++ }`, false, false, false},
		{"scheduler", seed + `probe kernel.trace("sched:sched_switch") { s["x"]++ }`, false, false, false},
		{"perf_event_program", // timer.profile's point
			seed + `probe perf.type(1).config(0).sample(100000) { s["x"]++ }`, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := targettest.Running(t)
			if !k.Has(target.RuntimeAllocMaps) && !c.noRuntimeAlloc {
				t.Skipf("the kernel lacks %s", target.RuntimeAllocMaps.Name)
			}
			if c.noRuntimeAlloc {
				k = k.Without("test", target.RuntimeAllocMaps)
			}
			prog := elaborate(t, c.script)
			m := bpfgen.New(prog, bpfgen.Config{Kernel: k})
			for _, p := range prog.Probes {
				if p.Kernel {
					if _, err := m.Compile(p); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, gl := range m.Globals() {
				if gl.Var.Name != "s" {
					continue
				}
				if got := gl.Spec.Flags&unix.BPF_F_NO_PREALLOC != 0; got != c.noPrealloc {
					t.Errorf("BPF_F_NO_PREALLOC: %t, want %t", got, c.noPrealloc)
				}
				if gl.Gens != c.inGen {
					t.Errorf("in generations: %t, want %t", gl.Gens, c.inGen)
				}
				return
			}
			t.Fatal("the programs use no global s")
		})
	}
}
