package bpfrt

import (
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/probes/attach"
)

// TestLSM counts the execs of a child through the bprm_check_security
// hook with a BPF LSM program, which returns 0: the exec is allowed.
// Where the kernel runs no BPF LSM programs it is skipped with check's
// reason, which must be one of the four this kind gives (Debian's 5.10
// and 6.1 arm64 kernels have no trampolines).
func TestLSM(t *testing.T) {
	id, _ := kernelFunc(t, "bpf_lsm_bprm_check_security")
	point := &attach.Point{Kind: attach.LSM, Event: "bprm_check_security", BTFID: id}
	if err := CanAttach(point); err != nil {
		msg := err.Error()
		if !strings.Contains(msg, "refuses BPF LSM programs") && !strings.Contains(msg, "has no BPF LSM") &&
			!strings.Contains(msg, "not active") && !strings.Contains(msg, "no BPF trampolines") {
			t.Errorf("check's reason is none of the four: %v", err)
		}
	}
	requireKind(t, point)
	testCountExecs(t, point)
}
