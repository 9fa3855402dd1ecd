package kernel

import (
	"os"
	"testing"
)

// TestCompatSyscalls checks that the stat of /proc/sys/abi/vsyscall32
// gives the running kernel's BTF's answer, on every kernel and
// architecture the suite boots.
func TestCompatSyscalls(t *testing.T) {
	b, err := Kernel()
	if err != nil {
		t.Skipf("no BTF: %v", err)
	}
	_, statErr := os.Stat(vsyscall32)
	if got, want := CompatSyscalls(), CompatDispatch(b); got != want {
		t.Errorf("CompatSyscalls() = %v (stat %s: %v), the BTF's dispatching functions say %v", got, vsyscall32, statErr, want)
	}
	t.Logf("compat system calls: %v (stat %s: %v)", CompatDispatch(b), vsyscall32, statErr)
}
