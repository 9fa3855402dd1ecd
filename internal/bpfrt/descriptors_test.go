package bpfrt

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestReserveDescriptors raises a low soft limit to what is asked and
// leaves a high one alone.
func TestReserveDescriptors(t *testing.T) {
	var saved unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &saved) })
	low := unix.Rlimit{Cur: 100, Max: max(saved.Max, 100)}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	ReserveDescriptors(500)
	var got unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_NOFILE, &got)
	if got.Cur != 500+descriptorMargin {
		t.Errorf("soft limit %d after reserving 500, want %d", got.Cur, 500+descriptorMargin)
	}
	ReserveDescriptors(10)
	unix.Getrlimit(unix.RLIMIT_NOFILE, &got)
	if got.Cur != 500+descriptorMargin {
		t.Errorf("soft limit %d after reserving 10, want it left at %d", got.Cur, 500+descriptorMargin)
	}
}
