package kernelside

import (
	"testing"

	"github.com/bpftap/bpftap/internal/bpfgen"
)

// TestRingSize checks the ring buffer each kind of script gets: the
// default where a kernel probe prints (itself, through a function, or a
// deferred builtin), the quiet one where only error and exit records can
// travel, and -s's size whatever the script.
func TestRingSize(t *testing.T) {
	const tp = `probe kernel.trace("raw_syscalls:sys_enter") `
	for _, tc := range []struct {
		script string
		mib    int // -s; 0 for none
		want   int
	}{
		{`global s ` + tp + `{ s[execname()]++ } probe begin { exit() }`, 0, bpfgen.QuietRingSize},
		{tp + `{ if (pid() == 0) exit() } probe end { printf("end\n") }`, 0, bpfgen.QuietRingSize},
		{`global x ` + tp + `{ x = sprintf("%d", pid()) } probe end { println(x) }`, 0, bpfgen.QuietRingSize},
		{tp + `{ printf("%d\n", pid()) }`, 0, bpfgen.DefaultRingSize},
		{`function show(x) { println(x) } ` + tp + `{ show(pid()) }`, 0, bpfgen.DefaultRingSize},
		{tp + `{ warn("w") }`, 0, bpfgen.DefaultRingSize},
		{`global s ` + tp + `{ s[execname()]++ }`, 2, 2 << 20},
		{tp + `{ printf("%d\n", pid()) }`, 1, 1 << 20},
	} {
		s, err := Compile(elaborate(t, tc.script), Config{RingSize: tc.mib << 20})
		if err != nil {
			t.Fatalf("%s: %v", tc.script, err)
		}
		if got := s.RingSize(); got != tc.want {
			t.Errorf("%s with -s %d: ring of %d bytes, want %d", tc.script, tc.mib, got, tc.want)
		}
	}
}
