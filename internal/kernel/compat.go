package kernel

import (
	"os"
	"sync"
)

// vsyscall32 is the sysctl of the vDSO of 32-bit processes, which an
// x86_64 kernel has where it can run them (CONFIG_IA32_EMULATION: it is
// arch/x86/entry/vdso/vdso32-setup.c's).
const vsyscall32 = "/proc/sys/abi/vsyscall32"

// CompatSyscalls tells whether the running kernel makes 32-bit (compat)
// system calls, asked once: /proc/sys/abi/vsyscall32 says so on x86_64 at
// the cost of a stat; elsewhere, or without it, the BTF's functions that
// dispatch them (CompatDispatch), a search of its string table to its end
// where the answer is no.
var CompatSyscalls = sync.OnceValue(func() bool {
	if _, err := os.Stat(vsyscall32); err == nil {
		return true
	}
	b, err := Kernel()
	return err == nil && CompatDispatch(b)
})

// CompatDispatch tells whether b has a function that dispatches 32-bit
// system calls: x86_64's (ia32_sys_call since 6.9, do_int80_syscall_32
// before) or ARM's private calls (compat_arm_syscall, arm64's
// CONFIG_COMPAT).
func CompatDispatch(b *BTF) bool {
	for _, name := range []string{"ia32_sys_call", "do_int80_syscall_32", "compat_arm_syscall"} {
		if len(b.IDsByName(name)) > 0 {
			return true
		}
	}
	return false
}
