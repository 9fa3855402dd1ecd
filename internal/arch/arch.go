// Package arch describes, one table per architecture, struct pt_regs: the
// registers the kernel saves when a probe fires, which is the context of
// kprobe, uprobe and perf-sample programs and what tp_btf's
// raw_syscalls:sys_enter points to. Everything that reads a register by
// its offset asks this package: register() and int_arg(n) in function
// probes, a USDT marker's register operands, a system call's arguments
// and number, the instruction and stack pointers of sampled code. Offsets
// are the kernel's (arch/*/include/asm/ptrace.h).
package arch

import (
	"runtime"
	"slices"
	"strconv"
)

// Register is a register's place in struct pt_regs: Size bytes at Offset
// (a narrower name for a register is the low bytes of its slot; x86's %ah
// is the second byte).
type Register struct {
	Offset, Size int
}

// Regs is one architecture's struct pt_regs.
type Regs struct {
	// Name is the architecture as stap names it ("x86_64").
	Name string
	// Registers are the registers by the names stap's register() takes.
	Registers map[string]Register
	// FuncArgs are the offsets of the registers holding a function's
	// first integer arguments, in order, by the C calling convention;
	// further arguments are on the stack above the return address.
	FuncArgs []int
	// AggregateByReference: a structure or union argument of more than 16
	// bytes is passed as the address of a copy, in the next argument
	// register (AAPCS64); else it goes on the stack, taking no register
	// (x86-64 psABI). One of 16 bytes or less takes one or two registers
	// where enough are left; else it goes on the stack, and with
	// StackEndsRegisters so does every argument after it (AAPCS64), where
	// x86-64 gives the registers left to the next arguments.
	AggregateByReference, StackEndsRegisters bool
	// SyscallArgs are the offsets of a system call's arguments at entry.
	SyscallArgs []int
	// SyscallNr is the offset of the number of the call in progress,
	// SyscallNrMember its member in the kernel's struct pt_regs.
	SyscallNr       int
	SyscallNrMember string
	// SyscallPrefix starts the names of the functions the system call
	// table calls, each "sys_" and the name of the call's SYSCALL_DEFINE
	// (Linux 4.17's syscall wrappers, which take the registers):
	// "__x64_sys_openat"; probefunc() of a system call probe names it.
	SyscallPrefix string
	// DWARF names the registers by their DWARF numbers, in order (the
	// psABI's): a debuginfo location's register is the slot of that name.
	DWARF []string
	// Return, IP and SP are the offsets of the return value, the
	// instruction pointer and the stack pointer.
	Return, IP, SP int
	// SPName is the stack pointer's name for register() (x86-64's "sp"
	// is its low 16 bits). CallPush is the size of the return address a
	// call pushes on the stack and its return pops: at a function's
	// return the stack pointer is CallPush above where it was at its
	// entry (0 where a call leaves the return address in a register).
	SPName   string
	CallPush int
	// Mode is the offset of the word that says whether the interrupted
	// code ran in user mode: it did when the word's ModeMask bits are
	// ModeUser (x86's CS, privilege level 3; arm64's pstate, EL0).
	Mode               int
	ModeMask, ModeUser int32
	// Compat describes the 32-bit system calls of a 64-bit kernel that
	// runs 32-bit code; nil where bpftap knows of none.
	Compat *Compat
	// ThreadSize is the size of a task's kernel stack (THREAD_SIZE) in a
	// kernel built without KASAN (which doubles it): a thread's user
	// registers are saved in the struct pt_regs at its top
	// (task_pt_regs).
	ThreadSize int
}

// Compat is how a 64-bit kernel makes a 32-bit (compat) system call: its
// arguments are the 32-bit registers SyscallArgs, and the calling thread's
// struct thread_info has the bits StatusFlag in its member StatusMember
// while the call runs (x86's TS_COMPAT in status; arm64's TIF_32BIT,
// bit 22 of flags, which a 32-bit process has all along: it makes
// compat calls only).
type Compat struct {
	SyscallArgs  []int
	StatusMember string
	StatusFlag   int32
	// PerProcess says the bits are the process's mode, not the call's
	// (arm64): an exec that switches modes returns in the new one, its
	// registers cleared but syscallno kept. NativeNrReg and CompatNrReg
	// are the offsets of the registers a call's number comes in (x8; r7,
	// x7's low half), CompatExecs the compat numbers of execve and
	// execveat.
	PerProcess               bool
	NativeNrReg, CompatNrReg int
	CompatExecs              []int32
}

// Host returns the table of the architecture bpftap runs on, nil where
// bpftap has none.
func Host() *Regs { return byGOARCH[runtime.GOARCH] }

var byGOARCH = map[string]*Regs{"amd64": X86_64, "arm64": ARM64}

// X86_64's slots, in struct pt_regs's order, 8 bytes each.
var x86Slots = []string{"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
	"rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "xcs", "eflags", "rsp", "xss"}

// X86_64 is x86-64's struct pt_regs.
var X86_64 = func() *Regs {
	regs := slots(x86Slots)
	narrow := func(size int, pairs ...string) {
		for i := 0; i < len(pairs); i += 2 {
			regs[pairs[i]] = Register{regs[pairs[i+1]].Offset, size}
		}
	}
	narrow(4, "ebp", "rbp", "ebx", "rbx", "eax", "rax", "ecx", "rcx", "edx", "rdx", "esi", "rsi",
		"edi", "rdi", "orig_eax", "orig_rax", "eip", "rip", "esp", "rsp")
	narrow(2, "bp", "rbp", "bx", "rbx", "ax", "rax", "cx", "rcx", "dx", "rdx", "si", "rsi", "di", "rdi",
		"orig_ax", "orig_rax", "ip", "rip", "cs", "xcs", "flags", "eflags", "sp", "rsp", "ss", "xss")
	narrow(1, "al", "rax", "bl", "rbx", "cl", "rcx", "dl", "rdx")
	for _, high := range []string{"ah", "bh", "ch", "dh"} {
		regs[high] = Register{regs["r"+high[:1]+"x"].Offset + 1, 1}
	}
	at := func(names ...string) []int {
		offsets := make([]int, len(names))
		for i, name := range names {
			offsets[i] = regs[name].Offset
		}
		return offsets
	}
	return &Regs{Name: "x86_64", Registers: regs,
		FuncArgs:    at("rdi", "rsi", "rdx", "rcx", "r8", "r9"),
		SyscallArgs: at("rdi", "rsi", "rdx", "r10", "r8", "r9"),
		SyscallNr:   regs["orig_rax"].Offset, SyscallNrMember: "orig_ax", SyscallPrefix: "__x64_",
		DWARF: []string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
			"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"},
		Return: regs["rax"].Offset, IP: regs["rip"].Offset, SP: regs["rsp"].Offset,
		SPName: "rsp", CallPush: 8,
		Mode: regs["xcs"].Offset, ModeMask: 3, ModeUser: 3,
		Compat:     &Compat{SyscallArgs: at("rbx", "rcx", "rdx", "rsi", "rdi", "rbp"), StatusMember: "status", StatusFlag: 2},
		ThreadSize: 16 << 10}
}()

// ARM64 is arm64's struct pt_regs: x0 ... x30, sp, pc, pstate, then the
// kernel's orig_x0 and syscallno.
var ARM64 = func() *Regs {
	names := []string{}
	for i := range 31 {
		names = append(names, "x"+strconv.Itoa(i))
	}
	regs := slots(append(names, "sp", "pc", "pstate", "orig_x0", "syscallno"))
	first := func(n int) []int {
		offsets := make([]int, n)
		for i := range offsets {
			offsets[i] = 8 * i
		}
		return offsets
	}
	return &Regs{Name: "arm64", Registers: regs, FuncArgs: first(8), SyscallArgs: first(6),
		AggregateByReference: true, StackEndsRegisters: true,
		SyscallNr: regs["syscallno"].Offset, SyscallNrMember: "syscallno", SyscallPrefix: "__arm64_",
		DWARF:  append(slices.Clip(names), "sp"), // x0-x30, sp (31)
		Return: regs["x0"].Offset, IP: regs["pc"].Offset, SP: regs["sp"].Offset,
		SPName: "sp", CallPush: 0,
		Mode: regs["pstate"].Offset, ModeMask: 0xf, ModeUser: 0,
		// an AArch32 process's r0-r5 are x0-x5's low halves
		Compat: &Compat{SyscallArgs: first(6), StatusMember: "flags", StatusFlag: 1 << 22,
			PerProcess: true, NativeNrReg: regs["x8"].Offset, CompatNrReg: regs["x7"].Offset,
			CompatExecs: []int32{11, 387}}, // 32-bit ARM's execve, execveat
		ThreadSize: 16 << 10}
}()

// slots gives each name an 8-byte slot, in order.
func slots(names []string) map[string]Register {
	regs := map[string]Register{}
	for i, name := range names {
		regs[name] = Register{8 * i, 8}
	}
	return regs
}
