package tapset

import "testing"

func TestSyscallNames(t *testing.T) {
	for _, c := range []struct {
		nr   int64
		name string
	}{{0, "read"}, {1, "write"}, {59, "execve"}, {110, "getppid"}, {231, "exit_group"}, {335, "uretprobe"}, {337, ""}, {469, "file_setattr"}, {-1, ""}, {100000, ""}} {
		if got := SyscallName("x86_64", c.nr); got != c.name {
			t.Errorf("SyscallName(x86_64, %d) = %q, want %q", c.nr, got, c.name)
		}
	}
	if names := SyscallNames("x86_64"); len(names) != 470 || names[110] != "getppid" {
		t.Errorf("SyscallNames(x86_64): %d names, [110] = %q", len(names), names[110])
	}
	if SyscallNames("mips") != nil {
		t.Error("SyscallNames(mips) should be nil")
	}
}
