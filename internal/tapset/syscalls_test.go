package tapset

import (
	"slices"
	"testing"
)

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
	// arm64 numbers the calls as asm-generic/unistd.h: no open, stat or
	// fork, newfstatat for fstatat
	for _, c := range []struct {
		nr   int64
		name string
	}{{0, "io_setup"}, {56, "openat"}, {63, "read"}, {64, "write"}, {79, "newfstatat"}, {80, "fstat"},
		{172, "getpid"}, {220, "clone"}, {221, "execve"}, {244, ""}, {293, "rseq"}, {435, "clone3"}, {469, "file_setattr"}} {
		if got := SyscallName("arm64", c.nr); got != c.name {
			t.Errorf("SyscallName(arm64, %d) = %q, want %q", c.nr, got, c.name)
		}
	}
	for _, x86Only := range []string{"open", "stat", "fork", "uretprobe"} {
		if slices.Contains(SyscallNames("arm64"), x86Only) {
			t.Errorf("arm64 has no %s call", x86Only)
		}
	}
	if SyscallNames("mips") != nil {
		t.Error("SyscallNames(mips) should be nil")
	}
}

func TestCompatSyscallNumbers(t *testing.T) {
	type call struct {
		nr     int
		name   string
		native int32
	}
	for _, c := range []struct {
		arch  string
		count int
		calls []call
	}{
		{"x86_64", 470, []call{{11, "execve", 59}, {5, "open", 2}, {64, "getppid", 110}, {221, "fcntl64", 72}, {90, "mmap", -1},
			{82, "select", -1}, {7, "waitpid", -1}, {102, "socketcall", -1}, {453, "", -1}, {469, "file_setattr", 469}}},
		// 32-bit ARM (EABI) on arm64: arm64 has no open, and numbers
		// everything else its own way
		{"arm64", 470, []call{{11, "execve", 221}, {5, "open", -1}, {322, "openat", 56}, {4, "write", 64}, {20, "getpid", 172},
			{221, "fcntl64", 25}, {248, "exit_group", 94}, {1, "exit", 93}, {192, "mmap2", -1}, {7, "", -1},
			{453, "", -1}, {469, "file_setattr", 469}}},
	} {
		compat, native := CompatSyscallNames(c.arch), NativeSyscallNumbers(c.arch)
		if len(compat) != c.count || len(native) != len(compat) {
			t.Fatalf("%s: %d compat names, %d native numbers", c.arch, len(compat), len(native))
		}
		for _, k := range c.calls {
			if compat[k.nr] != k.name || native[k.nr] != k.native {
				t.Errorf("%s: compat %d: %q, native %d; want %q, %d", c.arch, k.nr, compat[k.nr], native[k.nr], k.name, k.native)
			}
		}
	}
	if CompatSyscallNames("riscv") != nil || NativeSyscallNumbers("riscv") != nil {
		t.Error("riscv has no compat table in bpftap")
	}
}
