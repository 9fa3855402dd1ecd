package attach

// The registers of x86-64's struct pt_regs, the context of uprobe programs:
// each name stap's register() accepts, with the slot it reads and the width
// of the part it means (eax is the low 4 bytes of rax's slot, ah the second
// byte). Offsets are the kernel's (arch/x86/include/asm/ptrace.h).

// Register is a register's place in struct pt_regs: Size bytes at Offset.
type Register struct {
	Offset, Size int
}

// Registers maps register names to their place in struct pt_regs.
var Registers = registers()

// ArgRegisters are the registers of a function's first six integer
// arguments in the System V x86-64 calling convention.
var ArgRegisters = [...]string{"rdi", "rsi", "rdx", "rcx", "r8", "r9"}

// Register slots used directly: the return value, the instruction pointer
// and the stack pointer.
const (
	RegRAX = 80
	RegRIP = 128
	RegRSP = 152
)

func registers() map[string]Register {
	slots := []string{"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
		"rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "xcs", "eflags", "rsp", "xss"}
	regs := map[string]Register{}
	for i, name := range slots {
		regs[name] = Register{8 * i, 8}
	}
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
	return regs
}
