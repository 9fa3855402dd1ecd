package arch_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/kernel"
)

// kernelMember is the member of the kernel's struct pt_regs on x86-64 that
// holds the 64-bit register stap calls name.
func kernelMember(name string) string {
	switch name {
	case "xcs", "xss":
		return name[1:]
	case "eflags":
		return "flags"
	case "orig_rax":
		return "orig_ax"
	}
	if len(name) == 3 && name[0] == 'r' && (name[1] < '0' || name[1] > '9') {
		return name[1:]
	}
	return name
}

// TestX86Slots checks every 64-bit slot of the table against the running
// kernel's own struct pt_regs, from its BTF.
func TestX86Slots(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the kernel's struct pt_regs is x86-64's only on amd64, not %s", runtime.GOARCH)
	}
	btf, err := kernel.Kernel()
	if err != nil {
		t.Fatalf("the kernel's BTF: %v", err)
	}
	regs, err := btf.TypeByName("pt_regs", kernel.KindStruct)
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[string]int{}
	members(t, btf, regs, 0, offsets)
	checked := 0
	for name, r := range arch.X86_64.Registers {
		if r.Size != 8 {
			continue
		}
		member := kernelMember(name)
		got, ok := offsets[member]
		if !ok {
			t.Errorf("%s: the kernel's struct pt_regs has no member %s", name, member)
		} else if got != r.Offset {
			t.Errorf("%s: at %d in the table, %s at %d in the kernel", name, r.Offset, member, got)
		}
		checked++
	}
	if checked != 21 {
		t.Errorf("checked %d 64-bit registers, want 21", checked)
	}
	x := arch.X86_64
	for what, pair := range map[string][2]int{"return": {x.Return, offsets["ax"]}, "ip": {x.IP, offsets["ip"]},
		"sp": {x.SP, offsets["sp"]}, "syscall nr": {x.SyscallNr, offsets[x.SyscallNrMember]}, "mode": {x.Mode, offsets["cs"]}} {
		if pair[0] != pair[1] {
			t.Errorf("%s at %d, the kernel's at %d", what, pair[0], pair[1])
		}
	}
}

// TestNarrow checks the narrow names against the slots they are part of.
func TestNarrow(t *testing.T) {
	r := arch.X86_64.Registers
	for name, want := range map[string]arch.Register{"eax": {r["rax"].Offset, 4}, "ax": {r["rax"].Offset, 2},
		"al": {r["rax"].Offset, 1}, "ah": {r["rax"].Offset + 1, 1}, "edi": {r["rdi"].Offset, 4}} {
		if r[name] != want {
			t.Errorf("%s = %+v, want %+v", name, r[name], want)
		}
	}
	args := []string{}
	for _, off := range arch.X86_64.SyscallArgs {
		for name, reg := range r {
			if reg.Offset == off && reg.Size == 8 && strings.HasPrefix(name, "r") {
				args = append(args, name)
			}
		}
	}
	if got := strings.Join(args, " "); got != "rdi rsi rdx r10 r8 r9" {
		t.Errorf("system call arguments in %s", got)
	}
}

// members records the byte offset of each named member of t, from base,
// with those of its anonymous unions and structs (x86's cs and ss are
// members of unions since FRED).
func members(t *testing.T, btf *kernel.BTF, typ *kernel.Type, base int, offsets map[string]int) {
	for _, m := range typ.Members {
		at := base + int(m.BitOffset/8)
		if m.Name != "" {
			offsets[m.Name] = at
			continue
		}
		inner, err := btf.Type(m.Type)
		if err != nil {
			t.Fatal(err)
		}
		members(t, btf, inner, at, offsets)
	}
}

// TestStackPointerName checks that each table's SPName is its whole
// stack pointer: the 8 bytes at SP.
func TestStackPointerName(t *testing.T) {
	for _, regs := range []*arch.Regs{arch.X86_64, arch.ARM64} {
		if got, want := regs.Registers[regs.SPName], (arch.Register{Offset: regs.SP, Size: 8}); got != want {
			t.Errorf("%s: %s is %+v, want %+v", regs.Name, regs.SPName, got, want)
		}
	}
}
