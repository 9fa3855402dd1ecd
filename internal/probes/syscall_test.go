package probes

import (
	"testing"

	"github.com/bpftap/bpftap/internal/arch"
)

// TestSyscallFunction checks the kernel function probefunc() names for
// the points of one system call, per architecture, and none for a point
// of many calls or an architecture without a table.
func TestSyscallFunction(t *testing.T) {
	for _, c := range []struct {
		script string
		regs   *arch.Regs
		want   string
	}{
		{"syscall.openat", arch.X86_64, "__x64_sys_openat"},
		{"syscall.openat.return", arch.X86_64, "__x64_sys_openat"},
		{"nd_syscall.openat", arch.ARM64, "__arm64_sys_openat"},
		{"nd2_syscall.openat.return", arch.ARM64, "__arm64_sys_openat"},
		{"syscall.pread", arch.X86_64, "__x64_sys_pread64"},
		{"syscall.stat.return", arch.X86_64, "__x64_sys_newstat"},
		{"syscall.*", arch.X86_64, ""},
		{"syscall.open*.return", arch.X86_64, ""},
		{"kernel.trace(\"syscalls:sys_enter_openat\")", arch.X86_64, ""},
		{"syscall.openat", nil, ""},
	} {
		if got := SyscallFunction(c.script, c.regs); got != c.want {
			t.Errorf("SyscallFunction(%q, %v) = %q, want %q", c.script, c.regs != nil, got, c.want)
		}
	}
}

// TestSyscallFunctions checks the functions of the table by number that
// a program serving many calls reads, where the table's name is not the
// call's SYSCALL_DEFINE name too, and that an architecture without a
// table has none.
func TestSyscallFunctions(t *testing.T) {
	funcs := SyscallFunctions(arch.X86_64)
	for nr, want := range map[int]string{0: "__x64_sys_read", 4: "__x64_sys_newstat", 17: "__x64_sys_pread64",
		40: "__x64_sys_sendfile64", 63: "__x64_sys_newuname", 166: "__x64_sys_umount", 257: "__x64_sys_openat",
		262: "__x64_sys_newfstatat"} {
		if nr >= len(funcs) || funcs[nr] != want {
			t.Errorf("function of x86_64 call %d: got %q, want %q", nr, funcs[nr], want)
		}
	}
	if funcs := SyscallFunctions(arch.ARM64); funcs != nil {
		t.Errorf("arm64 has no table of numbers here, got %d functions", len(funcs))
	}
}
