package bpfgen

import (
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// User strings that always read. bpf_probe_read_user_str cannot fault a
// page in: a string in a page the process has not touched yet (a string
// literal of a USDT marker at -O2, in read-only data nothing read before)
// reads as -EFAULT, stap's "user string copy fault". A uprobe program may
// sleep (BPF_F_SLEEPABLE, target.SleepableUprobes), and there
// bpf_copy_from_user faults the page in: a read that faults copies one
// byte of the string's first page, and of the next page if it faults
// again (a string of at most MAXSTRINGLEN bytes spans two), retrying the
// read after each. Only that fault path sleeps.
//
// The program must then be loaded sleepable. A program that takes stacks
// cannot be (the kernel lets sleepable programs use no stack trace map):
// its calls of bpf_copy_from_user become `r0 = -EFAULT` and its strings
// read as before, which Program.NoFaultIn says, as it says a kernel that
// lets no uprobe program sleep. While a program sleeps another may run on
// its CPU; a uprobe program can be preempted on a preemptible kernel
// already (nesting.go), so the per-CPU scratch area is shared as before.

// faultsIn tells whether the running probe's user string reads fault
// pages in: a uprobe's, on a kernel that lets uprobe programs sleep. (The
// probes of a set's program attach alike, so a function that reads user
// strings is the same code in each: it may be a subprogram.)
func (g *gen) faultsIn() bool {
	a := g.probe.Attach
	if a == nil || !a.User {
		return false
	}
	g.subs.userStrings = true
	return g.m.has(target.SleepableUprobes)
}

// retryFaulting follows a bpf_probe_read_user_str of size bytes into dst
// from the address in the stack slot addr, its result in R0: on -EFAULT
// it faults in the address's page, then the next, reading again after
// each (see above).
func (g *gen) retryFaulting(dst value, addr int16, size int) {
	done := g.newLabel("ustrdone")
	byte1 := g.pushSlot()
	for page := range 2 {
		g.emit(asm.JNE.Imm(asm.R0, efault, done),
			asm.LoadMem(asm.R3, asm.R10, addr, asm.DWord))
		if page == 1 {
			g.emit(asm.Or.Imm(asm.R3, pageSize-1), asm.Add.Imm(asm.R3, 1))
		}
		g.emit(asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, int32(byte1)),
			asm.Mov.Imm(asm.R2, 1),
			asm.FnCopyFromUser.Call(),
			asm.LoadMem(asm.R3, asm.R10, addr, asm.DWord),
			asm.Mov.Reg(asm.R1, regScratch), asm.Add.Imm(asm.R1, int32(dst.off)),
			asm.Mov.Imm(asm.R2, int32(size)),
			asm.FnProbeReadUserStr.Call())
	}
	g.mark(done)
	g.popStack(8)
}

const (
	efault   = -14
	pageSize = 4096
)

// settleSleep decides, once a program's code is complete, whether it is
// loaded sleepable: when it faults user pages in and takes no stacks;
// otherwise its bpf_copy_from_user calls become `r0 = -EFAULT`.
func settleSleep(prog *Program, userStrings, faultIn bool) {
	calls, stacks := 0, false
	for _, ins := range prog.Instructions {
		switch {
		case ins.IsBuiltinCall() && asm.BuiltinFunc(ins.Constant) == asm.FnCopyFromUser:
			calls++
		case ins.Reference() == StackMap || ins.Reference() == BuildIDStackMap:
			stacks = true
		}
	}
	switch {
	case !userStrings:
	case !faultIn:
		prog.NoFaultIn = "the kernel does not let uprobe programs sleep"
	case stacks:
		prog.NoFaultIn = "the program takes stacks, which a sleepable program cannot"
	}
	if calls == 0 || !stacks {
		prog.Sleepable = calls > 0
		return
	}
	for i, ins := range prog.Instructions {
		if ins.IsBuiltinCall() && asm.BuiltinFunc(ins.Constant) == asm.FnCopyFromUser {
			prog.Instructions[i] = asm.Mov.Imm(asm.R0, efault).WithMetadata(ins.Metadata)
		}
	}
}
