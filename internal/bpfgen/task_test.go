package bpfgen_test

import (
	"fmt"
	"os"
	"testing"
)

// TestTaskFields checks ppid() and euid() against the test process, the
// child's parent.
func TestTaskFields(t *testing.T) {
	requireBPF(t)
	got := runScript(t, `global once; probe begin { if (once++) next; printf("%d %d\n", ppid(), euid()) }`,
		newChild(t, "sh", "-c", "read x"))
	if want := fmt.Sprintf("%d %d\n", os.Getpid(), os.Geteuid()); got != want {
		t.Errorf("ppid euid: %q, want %q", got, want)
	}
}
