package probes

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
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
// call's SYSCALL_DEFINE name too, on x86_64 and arm64, and that an
// architecture without a table has none.
func TestSyscallFunctions(t *testing.T) {
	funcs := SyscallFunctions(arch.X86_64)
	for nr, want := range map[int]string{0: "__x64_sys_read", 4: "__x64_sys_newstat", 17: "__x64_sys_pread64",
		40: "__x64_sys_sendfile64", 63: "__x64_sys_newuname", 166: "__x64_sys_umount", 257: "__x64_sys_openat",
		262: "__x64_sys_newfstatat"} {
		if nr >= len(funcs) || funcs[nr] != want {
			t.Errorf("function of x86_64 call %d: got %q, want %q", nr, funcs[nr], want)
		}
	}
	arm := SyscallFunctions(arch.ARM64)
	for nr, want := range map[int]string{56: "__arm64_sys_openat", 63: "__arm64_sys_read", 79: "__arm64_sys_newfstatat", 221: "__arm64_sys_execve"} {
		if nr >= len(arm) || arm[nr] != want {
			t.Errorf("function of arm64 call %d: got %q, want %q", nr, arm[nr], want)
		}
	}
	if funcs := SyscallFunctions(noTable); funcs != nil {
		t.Errorf("riscv64 has no table of numbers here, got %d functions", len(funcs))
	}
}

// noTable is an architecture bpftap has no system call table for.
var noTable = &arch.Regs{Name: "riscv64", SyscallPrefix: "__riscv_"}

// TestSyscallPoints checks what pn() and pp() give, by number, in the
// programs that serve many calls: the names of the call's own probe, the
// family's name (SystemTap's where it differs) and the trace event's.
func TestSyscallPoints(t *testing.T) {
	pn, pp := SyscallPoints(arch.X86_64, false)
	rpn, rpp := SyscallPoints(arch.X86_64, true)
	for nr, want := range map[int][2]string{0: {"read", "read"}, 4: {"stat", "newstat"}, 17: {"pread", "pread64"},
		166: {"umount", "umount"}, 257: {"openat", "openat"}, 262: {"fstatat", "newfstatat"}} {
		enter, exit := `kernel.trace("syscalls:sys_enter_`+want[1]+`")`, `kernel.trace("syscalls:sys_exit_`+want[1]+`")`
		if pn[nr] != "syscall."+want[0] || pp[nr] != enter || rpn[nr] != "syscall."+want[0]+".return" || rpp[nr] != exit {
			t.Errorf("x86_64 call %d: entry %q %q, return %q %q; want %s and %s", nr, pn[nr], pp[nr], rpn[nr], rpp[nr], want[0], want[1])
		}
	}
	if pn, pp := SyscallPoints(arch.ARM64, false); pn[79] != "syscall.fstatat" || pp[79] != `kernel.trace("syscalls:sys_enter_newfstatat")` {
		t.Errorf("arm64 call 79: %q %q; want syscall.fstatat on sys_enter_newfstatat", pn[79], pp[79])
	}
	if pn, pp := SyscallPoints(noTable, false); pn != nil || pp != nil {
		t.Errorf("riscv64 has no table of numbers here, got %d names", len(pn))
	}
}

// TestSyscallSet checks that the set syscallSet writes reads back as the
// numbers it was made of, and that tapset.ParseSyscallSet refuses what is
// not an ascending set of numbers below tapset.SyscallSetBits.
func TestSyscallSet(t *testing.T) {
	for _, nrs := range [][]int{{0}, {5}, {0, 1, 2, 3}, {0, 2, 4}, {1, 2, 3, 7, 9, 10, 469}} {
		text := syscallSet(nrs, "$id")
		set, ok := strings.CutPrefix(text, `__syscall_in($id, "`)
		if !ok || !strings.HasSuffix(set, `")`) {
			t.Fatalf("syscallSet(%v) = %s", nrs, text)
		}
		got, err := tapset.ParseSyscallSet(strings.TrimSuffix(set, `")`))
		if err != nil || !slices.Equal(got, nrs) {
			t.Errorf("syscallSet(%v) = %s, read back as %v, %v", nrs, text, got, err)
		}
	}
	for _, bad := range []string{"", "1,", "3-1", "2,1", "1,1", "-1", "a", "1-", "1-2-3", "1023-1024", "msg"} {
		if nrs, err := tapset.ParseSyscallSet(bad); err == nil {
			t.Errorf("ParseSyscallSet(%q) = %v, want an error", bad, nrs)
		}
	}
}

// TestSharedEntries checks the point that serves the entries of syscall.*
// together (a body that may share them: Point.SharedEntries) against the
// points of the same calls one by one, on the running kernel: the same
// calls, numbers, names and argument kinds (the literal each call's own
// prologue assigns __syscall_kinds), the point named as the first call's.
func TestSharedEntries(t *testing.T) {
	if _, err := os.Stat(kernel.VMLinuxPath); errors.Is(err, os.ErrNotExist) {
		t.Skip("skipped: " + kernel.ErrNoBTF.Error())
	}
	expand := func(shared bool) []*Point {
		file, err := syntax.Parse(syntax.NewSource("<test>", "probe syscall.* {}"), nil)
		if err != nil {
			t.Fatal(err)
		}
		// tp_btf (Linux 5.5) is taken as attachable, as the driver finds it
		k := RunningKernel{CanAttach: func(*attach.Point) error { return nil }}
		pts, err := BuiltinFor(k).Match(file.Decls[0].(*syntax.ProbeDecl).Points[0].Components)
		if err != nil || len(pts) != 1 {
			t.Fatalf("syscall.*: %d points, %v", len(pts), err)
		}
		pts[0].SharedEntries = shared
		out, err := pts[0].Family.Expand(pts[0])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	one := map[string]GenericEntry{}
	var first string
	for _, q := range expand(false) {
		nr, ok := SyscallNumber(q.Context.Attach.Event)
		if !ok {
			continue // no number: its own event either way
		}
		kinds := q.Prologue.Stmts[1].(*syntax.ExprStmt).X.(*syntax.Assign).RHS.(*syntax.NumberLit)
		name := strings.TrimPrefix(q.Script, "syscall.")
		one[name] = GenericEntry{Nr: nr, Name: name, Kinds: int(kinds.Value)}
		if first == "" || nr < one[strings.TrimPrefix(first, "syscall.")].Nr {
			first = q.Script
		}
	}
	var shared *Point
	for _, q := range expand(true) {
		if q.Entries != nil {
			shared = q
		}
	}
	if shared == nil || len(one) < 100 {
		t.Fatalf("%d calls with numbers, shared point %v", len(one), shared)
	}
	if len(shared.Entries) != len(one) || shared.Script != first || shared.Context.Attach.Target() != "raw_syscalls:sys_enter" {
		t.Errorf("shared point %s on %s serves %d calls, want %s serving %d", shared.Script, shared.Context.Attach.Target(), len(shared.Entries), first, len(one))
	}
	for _, e := range shared.Entries {
		if e != one[e.Name] {
			t.Errorf("%s: shared %+v, alone %+v", e.Name, e, one[e.Name])
		}
	}
}

// TestEntryArg checks EntryArg's names: those it makes once (the six
// arguments in 1, 2, 4 or 8 bytes) and those it makes when asked.
func TestEntryArg(t *testing.T) {
	cases := []struct {
		i, size int
		signed  bool
		want    string
	}{
		{0, 8, false, "$__syscall_arg1_u64"},
		{0, 4, true, "$__syscall_arg1_s32"},
		{2, 2, false, "$__syscall_arg3_u16"},
		{5, 1, true, "$__syscall_arg6_s8"},
		{3, 8, true, "$__syscall_arg4_s64"},
		{6, 8, false, "$__syscall_arg7_u64"},
		{1, 3, false, "$__syscall_arg2_u24"},
		{1, 16, false, "$__syscall_arg2_u128"},
	}
	for _, c := range cases {
		if got := EntryArg(c.i, c.size, c.signed); got != c.want {
			t.Errorf("EntryArg(%d, %d, %v) = %q, want %q", c.i, c.size, c.signed, got, c.want)
		}
	}
}
