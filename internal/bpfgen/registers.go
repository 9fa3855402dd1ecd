package bpfgen

import (
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// The register readers of function probes. A uprobe's context is the
// user's struct pt_regs (arch.Regs): int_arg(n) and its kin read
// the n-th argument of the System V calling convention (rdi, rsi, rdx, rcx,
// r8, r9, then the stack above the return address), register("name") any
// register by stap's names, returnval() rax, uaddr() the instruction
// pointer. In a probe without registers they raise stap's errors (uaddr()
// is 0), as stap's tapset does at run time.

// registerProbe tells whether the running probe's context is the
// registers of a function probe.
func (g *gen) registerProbe() bool {
	a := g.ownProbe().Attach
	return a != nil && a.Regs && a.Func != nil && g.m.regs() != nil
}

// raiseAt jumps to stap's error msg at pos and leaves 0 in R0. The jump
// tests the context pointer, never null, rather than jumping outright:
// the verifier refuses code no path of the program reaches, and the
// caller's code follows.
func (g *gen) raiseAt(msg string, pos syntax.Pos) {
	g.emit(asm.JNE.Imm(regCtx, 0, g.errorSite(msg, pos, false)), asm.Mov.Imm(asm.R0, 0))
}

// extend keeps the low size bytes of R0, sign-extended when signed.
func (g *gen) extend(size int, signed bool) {
	bits := int32(64 - 8*size)
	switch {
	case bits == 0:
	case signed:
		g.emit(asm.LSh.Imm(asm.R0, bits), asm.ArSh.Imm(asm.R0, bits))
	case size == 4:
		g.emit(asm.Mov.Reg32(asm.R0, asm.R0))
	default:
		g.emit(asm.And.Imm(asm.R0, int32(1)<<(8*size)-1))
	}
}

// argReader compiles int_arg(n) and the other tapset.ArgReaders: the
// register of argument n, or for n > 6 the 8 bytes at rsp+8(n-6) of the
// user's stack (0 when unreadable), truncated and extended as the reader
// says.
func (g *gen) argReader(c *syntax.Call) {
	how := tapset.ArgReaders[c.Name]
	truncate := how.Truncate
	switch {
	case g.syscallProbe():
		g.syscallArg(c, how.SignExtend)
	case !g.registerProbe():
		g.raiseAt(tapset.MsgNoArgs, c.Pos)
		return
	case g.ownProbe().Attach.I386:
		g.i386Arg(c, !how.Truncate && !how.Word)
		truncate = truncate || how.Word
	default:
		g.functionArg(c)
	}
	if truncate {
		g.extend(4, how.SignExtend)
	}
}

// i386Arg leaves in R0 argument n of a 32-bit x86 program's function, by
// the i386 calling convention: the 4-byte word at esp+4n on entry (0 when
// unreadable), and with wide the word after it as its high half (a 64-bit
// value takes two).
func (g *gen) i386Arg(c *syntax.Call, wide bool) {
	g.long(c.Args[0])
	g.emit(asm.Mov.Reg(regRec, asm.R0),
		asm.JSLT.Imm(asm.R0, 1, g.errorSite(tapset.MsgBadArgnum, c.Pos, true)))
	size := int32(4)
	if wide {
		size = 8
	}
	slot := g.pushSlot()
	g.emit(
		asm.LSh.Imm(asm.R0, 2),
		asm.LoadMem(asm.R3, regCtx, int16(g.m.regs().SP), asm.DWord),
		asm.Mov.Reg32(asm.R3, asm.R3),
		asm.Add.Reg(asm.R3, asm.R0),
		asm.Mov.Imm(asm.R0, 0),
		asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, size),
		asm.FnProbeReadUser.Call(),
		asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord),
	)
	g.popStack(8)
}

// functionArg leaves in R0 argument n of a function probe's function.
func (g *gen) functionArg(c *syntax.Call) {
	g.long(c.Args[0])
	done, stack := g.newLabel("arg"), g.newLabel("stackarg")
	g.emit(asm.Mov.Reg(regRec, asm.R0))
	g.emit(asm.JSLT.Imm(asm.R0, 1, g.errorSite(tapset.MsgBadArgnum, c.Pos, true)))
	g.emit(asm.JGT.Imm(asm.R0, int32(len(g.m.regs().FuncArgs)), stack))
	for i, offset := range g.m.regs().FuncArgs {
		next := g.newLabel("argreg")
		g.emit(asm.JNE.Imm(regRec, int32(i+1), next),
			asm.LoadMem(asm.R0, regCtx, int16(offset), asm.DWord),
			asm.Ja.Label(done))
		g.mark(next)
	}
	g.mark(stack)
	g.userStackWord()
	g.mark(done)
}

// syscallProbe tells whether the running probe fires at a system call's
// entry or exit in the calling thread (attach.Point.Syscall), whose user
// registers then hold the call's arguments.
func (g *gen) syscallProbe() bool {
	a := g.ownProbe().Attach
	return a != nil && a.Syscall && g.m.regs() != nil
}

// syscallArg leaves in R0 argument n (1 to 6) of the system call the
// thread is making: its register of the syscall convention (rdi, rsi,
// rdx, r10, r8, r9 on x86-64; ebx, ecx, edx, esi, edi, ebp for a compat
// call, whose 32 bits are extended as signed says) in the thread's user
// registers (bpf_task_pt_regs), which keep the arguments until the call
// returns.
func (g *gen) syscallArg(c *syntax.Call, signed bool) {
	g.long(c.Args[0])
	bad := g.errorSite(tapset.MsgBadArgnum, c.Pos, true)
	g.emit(asm.Mov.Reg(regRec, asm.R0),
		asm.JSLT.Imm(asm.R0, 1, bad),
		asm.JGT.Imm(asm.R0, int32(len(g.m.regs().SyscallArgs)), bad))
	flag := g.pushSlot()
	g.syscallCompat()
	g.emit(asm.StoreMem(asm.R10, flag, asm.R0, asm.DWord))
	slot := g.pushSlot()
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	if !g.userRegs(c, slot) {
		return
	}
	g.emit(asm.LoadMem(asm.R1, asm.R10, flag, asm.DWord))
	native, done := g.newLabel("sysargnative"), g.newLabel("sysargdone")
	if g.m.regs().Compat != nil {
		g.emit(asm.JEq.Imm(asm.R1, 0, native))
		g.readRegister(g.m.regs().Compat.SyscallArgs, slot)
		g.emit(asm.Mov.Reg32(asm.R0, asm.R0))
		g.extend(4, signed)
		g.emit(asm.Ja.Label(done))
	}
	g.mark(native)
	g.readRegister(g.m.regs().SyscallArgs, slot)
	g.mark(done)
	g.popStack(16)
}

// syscallReturnval leaves in R0 the value of the system call the thread
// returns from: its user registers' return register (rax, x0), where the
// kernel stores the value before the exit events fire.
func (g *gen) syscallReturnval(c *syntax.Call) {
	slot := g.pushSlot()
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	if g.userRegs(c, slot) {
		g.emit(asm.Mov.Imm(regRec, 1))
		g.readRegister([]int{g.m.regs().Return}, slot)
	}
	g.popStack(8)
}

// userRegs leaves in R0 the address of the current thread's user
// registers: bpf_task_pt_regs's (Linux 5.15), or before it the struct
// pt_regs at the top of the thread's kernel stack, where the kernel saves
// them (task->stack + THREAD_SIZE - sizeof(struct pt_regs)), read through
// slot. c is blamed should the kernel's BTF place neither.
func (g *gen) userRegs(c *syntax.Call, slot int16) bool {
	return g.userRegsAt(slot) || g.needs(c.Position(), target.TaskPtRegs, c.Name+"() in this probe (it reads the thread's user registers)")
}

// userRegsAt is userRegs without the blame: false, with no code emitted,
// where the kernel's BTF places neither.
func (g *gen) userRegsAt(slot int16) bool {
	if g.m.has(target.TaskPtRegs) {
		g.emit(asm.FnGetCurrentTaskBtf.Call(), asm.Mov.Reg(asm.R1, asm.R0), asm.FnTaskPtRegs.Call())
		return true
	}
	stack, size, ok := g.m.facts.userRegs()
	top := g.m.cfg.Kernel.ThreadSize()
	if !ok || top == 0 {
		return false
	}
	g.emit(asm.FnGetCurrentTask.Call(), asm.Mov.Reg(asm.R3, asm.R0), asm.Add.Imm(asm.R3, int32(stack)))
	g.readKernelAt(slot, 8)
	g.emit(asm.Add.Imm(asm.R0, int32(top-size)))
	return true
}

// readKernelAt leaves in R0 the size bytes (4 or 8) at the kernel
// address in R3, read through stack slot (whatever the slot held where
// the read faults).
func (g *gen) readKernelAt(slot int16, size int) {
	g.emit(asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, int32(size)),
		asm.FnProbeReadKernel.Call(),
		asm.LoadMem(asm.R0, asm.R10, slot, sizeOf(size)))
}

// readRegister leaves in R0 the register offsets[n-1] (n in regRec) of
// the struct pt_regs R0 points to, read through slot.
func (g *gen) readRegister(offsets []int, slot int16) {
	read := g.newLabel("sysargread")
	for i, offset := range offsets {
		next := g.newLabel("sysargreg")
		g.emit(asm.JNE.Imm(regRec, int32(i+1), next),
			asm.Mov.Reg(asm.R3, asm.R0), asm.Add.Imm(asm.R3, int32(offset)),
			asm.Ja.Label(read))
		g.mark(next)
	}
	g.mark(read)
	g.readKernelAt(slot, 8)
}

// userStackWord replaces argument number R0 (> 6) by its 8 bytes on the
// user's stack, at rsp + 8·(n-6) on entry, or by 0 when unreadable.
func (g *gen) userStackWord() {
	slot := g.pushSlot()
	g.emit(
		asm.Add.Imm(asm.R0, -int32(len(g.m.regs().FuncArgs))),
		asm.LSh.Imm(asm.R0, 3),
		asm.LoadMem(asm.R3, regCtx, int16(g.m.regs().SP), asm.DWord),
		asm.Add.Reg(asm.R3, asm.R0),
		asm.Mov.Imm(asm.R0, 0),
		asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, 8),
		asm.FnProbeReadUser.Call(),
		asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord),
	)
	g.popStack(8)
}

// registerRead compiles register("name") (sign-extended) and
// u_register("name") (zero-extended); the name is a literal.
func (g *gen) registerRead(c *syntax.Call) {
	if !g.registerProbe() {
		g.raiseAt(tapset.MsgNoRegisters, c.Pos)
		return
	}
	name := c.Args[0].(*syntax.StringLit).Value
	reg, ok := g.m.regs().Registers[name]
	if !ok {
		g.raiseAt(tapset.UnknownRegister(name), c.Pos)
		return
	}
	g.emit(asm.LoadMem(asm.R0, regCtx, int16(reg.Offset), sizeOf(reg.Size)))
	if c.Name == "register" {
		g.extend(reg.Size, true)
	}
}

// dwarfRegister compiles @kregister(n) and @uregister(n): the register of
// DWARF number n (arch.Regs.DWARF) of a kernel or a user function probe's
// registers, whole; elsewhere, and for a number the architecture does not
// give, stap's register access fault.
func (g *gen) dwarfRegister(c *syntax.Call) {
	n := c.Args[0].(*syntax.NumberLit).Value
	regs := g.m.regs()
	if !g.registerProbe() || g.ownProbe().Attach.User != (c.Name == "@uregister") || n < 0 || n >= int64(len(regs.DWARF)) {
		g.raiseAt(tapset.MsgRegisterFault, c.Pos)
		return
	}
	g.emit(asm.LoadMem(asm.R0, regCtx, int16(regs.Registers[regs.DWARF[n]].Offset), asm.DWord))
}

// returnval compiles returnval(): rax, or on fexit the return value's word,
// or at a system call's exit the call's value.
func (g *gen) returnval(c *syntax.Call) {
	if a := g.ownProbe().Attach; a != nil && a.Func != nil && a.Func.Return != nil && !a.Regs {
		// fexit: the return value is the context's word after the arguments
		g.emit(asm.LoadMem(asm.R0, regCtx, int16(a.Func.Return.Offset), asm.DWord))
		return
	}
	if g.syscallProbe() && g.ownProbe().Attach.SyscallExit() && g.syscallFamily() {
		g.syscallReturnval(c)
		return
	}
	if !g.registerProbe() {
		g.raiseAt(tapset.NoReturnval(g.ownProbe().Name), c.Pos)
		return
	}
	g.emit(asm.LoadMem(asm.R0, regCtx, int16(g.m.regs().Return), asm.DWord))
	if g.ownProbe().Attach.I386 {
		g.extend(4, true) // eax
	}
}

// probefunc compiles probefunc(): a function probe's function; in a
// system call probe the kernel function that serves the call (known when
// the probe serves one call, else looked up by number); in a perf
// event's probe, as stap, symname(addr()) of the interrupted instruction
// (the kernel's function, or a user address in hex); elsewhere stap's
// symname(addr()) of a probe without registers, "0x0".
func (g *gen) probefunc(c *syntax.Call) value {
	switch a := g.ownProbe().Attach; {
	case a != nil && a.Func != nil:
		return g.pointText(columnName, a.Func.Name)
	case g.syscallFunction() != "":
		return g.strLit(g.syscallFunction())
	case g.syscallsByNumber():
		return g.syscallTextByNumber(c, SyscallFuncMap)
	case g.sampledRegs():
		return g.symbolName(func() { g.addr(nil) })
	}
	return g.strLit("0x0")
}

// pp compiles pp(): the probe's point, or in a program that serves many
// system calls, the point of the call's own entry or return event.
func (g *gen) pp(c *syntax.Call) value {
	if g.syscallsByNumber() {
		return g.syscallTextByNumber(c, g.onSyscallSide(SyscallPPMap, SyscallReturnPPMap))
	}
	return g.pointText(columnPP, g.ownProbe().Name)
}

// pn compiles pn(): the point as the script names it; in a program that
// serves many system calls and that the script knows by the family's
// names (syscall.*, nd_syscall.*.return: no alias of its own without a
// wildcard), the call's (syscall.NAME, syscall.NAME.return).
func (g *gen) pn(c *syntax.Call) value {
	p := g.ownProbe()
	if g.syscallsByNumber() && (p.PN() == p.Name || probes.SyscallFamilyPoint(p.Script)) {
		return g.syscallTextByNumber(c, g.onSyscallSide(SyscallPNMap, SyscallReturnPNMap))
	}
	return g.strLit(p.PN())
}

// onSyscallSide is entry, or ret in a program on the system calls'
// returns (raw_syscalls:sys_exit).
func (g *gen) onSyscallSide(entry, ret string) string {
	if g.ownProbe().Attach.Event == "sys_exit" {
		return ret
	}
	return entry
}

// syscallFunction is the kernel function of the one system call the
// running probe serves (probes.SyscallFunction), "" for none: a probe of
// the syscall family on the call's own trace event, or joined to a merged
// program behind a test of the call's number. (A merged program's probe
// keeps the point of its first call, which it does not stand for alone.)
func (g *gen) syscallFunction() string {
	p := g.ownProbe()
	if a := p.Attach; a == nil || !a.Syscall || a.System != "syscalls" && p.Joins == nil {
		return ""
	}
	return probes.SyscallFunction(p.Script, g.m.regs())
}

// syscallsByNumber tells whether the running probe is a program of the
// syscall family that serves many calls on a raw syscall tracepoint (the
// merged syscall.*, syscall.*.return), on an architecture whose calls
// bpftap can name; not one that serves a compat call no native call is
// (syscall.statfs64 on x86_64), which no table by number names.
func (g *gen) syscallsByNumber() bool {
	p := g.ownProbe()
	a := p.Attach
	return a != nil && a.Syscall && a.System == "raw_syscalls" && p.Joins == nil &&
		g.syscallFamily() && probes.SyscallFunctions(g.m.regs()) != nil && !probes.CompatOnlyPoint(p.Script)
}

// syscallFamily tells whether the running probe is one of the syscall
// family's (or its aliases'), not a script's own tracepoint probe, where
// stap's registers-only builtins have no registers to read.
func (g *gen) syscallFamily() bool {
	p := g.ownProbe()
	return p.Family == "syscall" || probes.SyscallFamilyPoint(p.Script)
}

// registersValid compiles registers_valid(): whether register() can read
// this probe's registers, known when it is compiled.
func (g *gen) registersValid(*syntax.Call) {
	valid := int32(0)
	if g.registerProbe() {
		valid = 1
	}
	g.emit(asm.Mov.Imm(asm.R0, valid))
}
