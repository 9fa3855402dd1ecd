package usdt

import (
	"bytes"
	"debug/elf"
	"os"
	"testing"

	"github.com/bpftap/bpftap/internal/probes/attach"
)

// testFile resolves symbols as a file of type typ whose symbol buf is at
// 0x4000 would; its probes are at 0x1000.
func testFile(typ elf.Type) (*File, *Probe) {
	return &File{Path: "test", Type: typ, symbols: map[string]uint64{"buf": 0x4000, "dup": ambiguous}}, &Probe{PC: 0x1000}
}

func user(disp int64, terms ...attach.RegTerm) *attach.UserAddr {
	return &attach.UserAddr{Disp: disp, Terms: terms}
}

// TestLoc parses each operand form x86-64 compilers emit and places it in
// a non-PIE executable and in PIE code.
func TestLoc(t *testing.T) {
	ip, rbp, rax, rsi := attach.RegTerm{Offset: 128, Scale: 1}, attach.RegTerm{Offset: 32, Scale: 1}, attach.RegTerm{Offset: 80, Scale: 1}, attach.RegTerm{Offset: 104, Scale: 4}
	cases := []struct {
		arg      string
		exec, pi attach.Loc // in ET_EXEC, in ET_DYN
	}{
		{"8@%rax", attach.Loc{Offset: 80, Size: 8}, attach.Loc{Offset: 80, Size: 8}},
		{"-4@%eax", attach.Loc{Offset: 80, Size: 4, Signed: true}, attach.Loc{Offset: 80, Size: 4, Signed: true}},
		{"-2@%ax", attach.Loc{Offset: 80, Size: 2, Signed: true}, attach.Loc{Offset: 80, Size: 2, Signed: true}},
		{"1@%al", attach.Loc{Offset: 80, Size: 1}, attach.Loc{Offset: 80, Size: 1}},
		{"-1@%ah", attach.Loc{Offset: 81, Size: 1, Signed: true}, attach.Loc{Offset: 81, Size: 1, Signed: true}},
		{"1@%bh", attach.Loc{Offset: 41, Size: 1}, attach.Loc{Offset: 41, Size: 1}},
		{"8@%r8", attach.Loc{Offset: 72, Size: 8}, attach.Loc{Offset: 72, Size: 8}},
		{"-4@%r8d", attach.Loc{Offset: 72, Size: 4, Signed: true}, attach.Loc{Offset: 72, Size: 4, Signed: true}},
		{"2@%r9w", attach.Loc{Offset: 64, Size: 2}, attach.Loc{Offset: 64, Size: 2}},
		{"-1@%r15b", attach.Loc{Offset: 0, Size: 1, Signed: true}, attach.Loc{Offset: 0, Size: 1, Signed: true}},
		{"1@%sil", attach.Loc{Offset: 104, Size: 1}, attach.Loc{Offset: 104, Size: 1}},
		{"8@%rsp", attach.Loc{Offset: 152, Size: 8}, attach.Loc{Offset: 152, Size: 8}},
		{"8@%ebx", attach.Loc{Offset: 40, Size: 4}, attach.Loc{Offset: 40, Size: 4}}, // wider than its register: zero-extended
		{"-4@%rdx", attach.Loc{Offset: 96, Size: 4, Signed: true}, attach.Loc{Offset: 96, Size: 4, Signed: true}},
		{"%rdi", attach.Loc{Offset: 112, Size: 8, Signed: true}, attach.Loc{Offset: 112, Size: 8, Signed: true}}, // no size: a long
		{"-4@$-5", attach.Loc{Const: true, Value: -5, Size: 4, Signed: true}, attach.Loc{Const: true, Value: -5, Size: 4, Signed: true}},
		{"1@$-1", attach.Loc{Const: true, Value: 255, Size: 1}, attach.Loc{Const: true, Value: 255, Size: 1}},
		{"8@$0x10", attach.Loc{Const: true, Value: 16, Size: 8}, attach.Loc{Const: true, Value: 16, Size: 8}},
		{"8@$buf", attach.Loc{User: user(0x4000), Size: 8, Address: true}, attach.Loc{User: user(0x3000, ip), Size: 8, Address: true}},
		{"-4@-16(%rbp)", attach.Loc{User: user(-16, rbp), Size: 4, Signed: true}, attach.Loc{User: user(-16, rbp), Size: 4, Signed: true}},
		{"8@(%rax)", attach.Loc{User: user(0, rax), Size: 8}, attach.Loc{User: user(0, rax), Size: 8}},
		{"-4@8(%rax,%rsi,4)", attach.Loc{User: user(8, rax, rsi), Size: 4, Signed: true}, attach.Loc{User: user(8, rax, rsi), Size: 4, Signed: true}},
		{"-4@(%rax,%rsi)", attach.Loc{User: user(0, rax, attach.RegTerm{Offset: 104, Scale: 1}), Size: 4, Signed: true}, attach.Loc{User: user(0, rax, attach.RegTerm{Offset: 104, Scale: 1}), Size: 4, Signed: true}},
		{"-4@buf(,%rsi,4)", attach.Loc{User: user(0x4000, rsi), Size: 4, Signed: true}, attach.Loc{User: user(0x3000, rsi, ip), Size: 4, Signed: true}},
		{"8@buf(%rip)", attach.Loc{User: user(0x4000), Size: 8}, attach.Loc{User: user(0x3000, ip), Size: 8}},
		{"-8@buf+8(%rip)", attach.Loc{User: user(0x4008), Size: 8, Signed: true}, attach.Loc{User: user(0x3008, ip), Size: 8, Signed: true}},
		{"-8@buf-8(%rip)", attach.Loc{User: user(0x3ff8), Size: 8, Signed: true}, attach.Loc{User: user(0x2ff8, ip), Size: 8, Signed: true}},
		{"2@16+buf(%rax)", attach.Loc{User: user(0x4010, rax), Size: 2}, attach.Loc{User: user(0x3010, rax, ip), Size: 2}},
		{"8@0x601040", attach.Loc{User: user(0x601040), Size: 8}, attach.Loc{User: user(0x601040), Size: 8}},
		{"4f@-8(%rbp)", attach.Loc{User: user(-8, rbp), Size: 4}, attach.Loc{User: user(-8, rbp), Size: 4}},
	}
	for _, c := range cases {
		checkLoc(t, elf.EM_X86_64, c.arg, map[elf.Type]attach.Loc{elf.ET_EXEC: c.exec, elf.ET_DYN: c.pi})
	}
}

// TestLocARM64 parses each operand form GCC emits for arm64 markers
// (and the w registers and '#' an assembler may write): without
// symbols, the same in a non-PIE executable and in PIE code.
func TestLocARM64(t *testing.T) {
	sp, x0, x29 := attach.RegTerm{Offset: 248, Scale: 1}, attach.RegTerm{Offset: 0, Scale: 1}, attach.RegTerm{Offset: 232, Scale: 1}
	cases := []struct {
		arg  string
		want attach.Loc
	}{
		{"8@x0", attach.Loc{Offset: 0, Size: 8}},
		{"-4@x1", attach.Loc{Offset: 8, Size: 4, Signed: true}},
		{"1@x2", attach.Loc{Offset: 16, Size: 1}},
		{"-2@x30", attach.Loc{Offset: 240, Size: 2, Signed: true}},
		{"-8@w3", attach.Loc{Offset: 24, Size: 4}}, // wider than its register: zero-extended
		{"8@sp", attach.Loc{Offset: 248, Size: 8}},
		{"8f@x7", attach.Loc{Offset: 56, Size: 8}},
		{"-4@5", attach.Loc{Const: true, Value: 5, Size: 4, Signed: true}},
		{"-4@-7", attach.Loc{Const: true, Value: -7, Size: 4, Signed: true}},
		{"1@#-1", attach.Loc{Const: true, Value: 255, Size: 1}},
		{"-4@[x0]", attach.Loc{User: user(0, x0), Size: 4, Signed: true}},
		{"-8@[x0, 8]", attach.Loc{User: user(8, x0), Size: 8, Signed: true}},
		{"-4@[sp, 36]", attach.Loc{User: user(36, sp), Size: 4, Signed: true}},
		{"4f@[sp, 4]", attach.Loc{User: user(4, sp), Size: 4}},
		{"-8@[x29, #-8]", attach.Loc{User: user(-8, x29), Size: 8, Signed: true}},
		{"x5", attach.Loc{Offset: 40, Size: 8, Signed: true}}, // no size: a long
	}
	for _, c := range cases {
		checkLoc(t, elf.EM_AARCH64, c.arg, map[elf.Type]attach.Loc{elf.ET_EXEC: c.want, elf.ET_DYN: c.want})
	}
}

// checkLoc parses arg as an operand of a file for machine and places it
// in a file of each type, where it must be want[type].
func checkLoc(t *testing.T, machine elf.Machine, arg string, want map[elf.Type]attach.Loc) {
	t.Helper()
	a, err := ParseArg(arg, machine)
	if err != nil {
		t.Errorf("%s: %v", arg, err)
		return
	}
	for typ, want := range want {
		f, p := testFile(typ)
		got, err := f.Loc(p, a)
		if err != nil || !sameLoc(got, want) {
			t.Errorf("%s in %s: %+v %+v, %v; want %+v %+v", arg, typ, got, got.User, err, want, want.User)
		}
	}
}

func sameLoc(a, b attach.Loc) bool {
	ua, ub := a.User, b.User
	a.User, b.User = nil, nil
	if a != b || (ua == nil) != (ub == nil) {
		return false
	}
	if ua == nil {
		return true
	}
	if ua.Disp != ub.Disp || len(ua.Terms) != len(ub.Terms) {
		return false
	}
	for i := range ua.Terms {
		if ua.Terms[i] != ub.Terms[i] {
			return false
		}
	}
	return true
}

// TestArgErrors: what does not parse, or cannot be placed, says which
// operand and why.
func TestArgErrors(t *testing.T) {
	cases := []struct {
		machine              elf.Machine
		arg, operand, reason string
	}{
		{elf.EM_X86_64, "8f@%xmm0", "%xmm0", "%xmm0 is not a general-purpose register"},
		{elf.EM_X86_64, "16@%rax", "%rax", "a value of 16 bytes"},
		{elf.EM_X86_64, "8@%fs:0x28", "%fs:0x28", "%fs:0x28 is not a general-purpose register"},
		{elf.EM_X86_64, "8@8(%eax)", "8(%eax)", "%eax is not a 64-bit register"},
		{elf.EM_X86_64, "8@8(%rax,%rsi,3)", "8(%rax,%rsi,3)", `scale "3" is not 1, 2, 4 or 8`},
		{elf.EM_X86_64, "8@8(%rax", "8(%rax", "an address that is not DISP(BASE,INDEX,SCALE)"},
		{elf.EM_X86_64, "8@16(%rip)", "16(%rip)", "a %rip-relative address without a symbol"},
		{elf.EM_X86_64, "8@x@GOTPCREL(%rip)", "x@GOTPCREL(%rip)", `"x@GOTPCREL" is not a number, a symbol or SYMBOL+NUMBER`},
		{elf.EM_X86_64, "8@", "", "an empty operand"},
		{elf.EM_X86_64, "8@()", "()", "an empty address"},
		{elf.EM_X86_64, "8@.LC0(%rip)", ".LC0(%rip)", "symbol .LC0 is not in the symbol tables of test"},
		{elf.EM_X86_64, "8@dup(%rip)", "dup(%rip)", "test has several symbols called dup"},
		{elf.EM_AARCH64, "8@%rax", "%rax", `"%rax" is not a register, a number or [BASE, OFFSET]`},
		{elf.EM_AARCH64, "8@v0", "v0", `"v0" is not a register, a number or [BASE, OFFSET]`},
		{elf.EM_AARCH64, "8@[w0, 8]", "[w0, 8]", `"w0" is not a 64-bit register`},
		{elf.EM_AARCH64, "8@[x0, x1]", "[x0, x1]", `offset "x1" is not a number`},
		{elf.EM_AARCH64, "8@[x0, 8", "[x0, 8", "an address that is not [BASE] or [BASE, OFFSET]"},
		{elf.EM_AARCH64, "8@[x0, 8, lsl 2]", "[x0, 8, lsl 2]", "an address that is not [BASE] or [BASE, OFFSET]"},
		{elf.EM_AARCH64, "4@", "", "an empty operand"},
		{elf.EM_RISCV, "8@a0", "a0", "bpftap reads the operands of x86-64 and arm64 markers, not of EM_RISCV"},
	}
	for _, c := range cases {
		a, err := ParseArg(c.arg, c.machine)
		if err == nil {
			f, p := testFile(elf.ET_DYN)
			_, err = f.Loc(p, a)
		}
		e, ok := err.(*ArgError)
		if !ok || e.Operand != c.operand || e.Reason != c.reason {
			t.Errorf("%s: %#v, want operand %q: %s", c.arg, err, c.operand, c.reason)
			continue
		}
		if want := "Can't parse SDT_V3 operand '" + c.operand + "' [man error::sdt]"; e.Error() != want {
			t.Errorf("%s: %q, want %q", c.arg, e.Error(), want)
		}
	}
}

// TestPython reads the markers of Debian's python3.11: every argument
// parses and has a location, and the semaphores are in .probes.
func TestPython(t *testing.T) {
	const path = "/usr/bin/python3.11"
	f, err := Open(path)
	if os.IsNotExist(err) {
		t.Skip(path + " is not installed")
	}
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	probes := ef.Section(".probes")
	entry := f.Lookup("python", "function__entry")
	if len(entry) != 1 || len(entry[0].Args) != 3 {
		t.Fatalf("python:function__entry: %v", entry)
	}
	for _, p := range f.Probes {
		if probes == nil || p.SemaphoreOffset < probes.Offset || p.SemaphoreOffset >= probes.Offset+probes.Size {
			t.Errorf("%s:%s: semaphore at file offset 0x%x, not in .probes", p.Provider, p.Name, p.SemaphoreOffset)
		}
		for _, a := range p.Args {
			err := a.Err
			if err == nil {
				_, err = f.Loc(p, a)
			}
			if err != nil {
				t.Errorf("%s:%s %s: %v", p.Provider, p.Name, a.Text, err)
			}
		}
	}
}

// TestBaseAdjustment moves the .stapsdt.base a note records, as prelink
// leaves it after moving the sections: the pc and the semaphore move by
// the difference (the semaphore stays in .probes).
func TestBaseAdjustment(t *testing.T) {
	const path = "/usr/bin/python3.11"
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skip(path + " is not installed")
	}
	if err != nil {
		t.Fatal(err)
	}
	orig, err := Read(path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	ef, _ := elf.NewFile(bytes.NewReader(data))
	notes := ef.Section(".note.stapsdt")
	// The first note: a 12-byte header, "stapsdt\0", then pc, base.
	baseAt := notes.Offset + 12 + 8 + 8
	ef.ByteOrder.PutUint64(data[baseAt:], orig.Probes[0].NoteBase+0x10)
	moved, err := Read(path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	p, q := orig.Probes[0], moved.Probes[0]
	if q.PC != p.PC-0x10 || q.Offset != p.Offset-0x10 || q.Semaphore != p.Semaphore-0x10 || q.SemaphoreOffset != p.SemaphoreOffset-0x10 {
		t.Errorf("after moving the note's base by +0x10: pc 0x%x (offset 0x%x), semaphore 0x%x (0x%x); before: 0x%x (0x%x), 0x%x (0x%x)",
			q.PC, q.Offset, q.Semaphore, q.SemaphoreOffset, p.PC, p.Offset, p.Semaphore, p.SemaphoreOffset)
	}
}
