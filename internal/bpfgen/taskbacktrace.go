package bpfgen

import (
	"math"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// task_backtrace(task): the kernel stack of a task, backtrace()'s form (a
// stack token). The task is a number (task_current(), pid2task(),
// task_parent()), which bpf_get_task_stack (Linux 5.9) does not take: it
// takes the verifier's trusted task pointer. So:
//
//   - the running thread's stack is backtrace()'s, taken as backtrace()
//     takes it (its frame 0 the probe point's, the tracing machinery
//     trimmed in user space);
//   - another task is found again by its thread id with bpf_task_from_pid
//     (as pid2task finds a task: tasklookup.go), which gives the trusted
//     pointer, with a reference the program gives back: when the task
//     found is the one asked for (not a task that took the id of one
//     gone), bpf_get_task_stack copies its saved stack, where it will
//     resume, into kernelStore, as a context task's stack is kept
//     (taskStackID); "" when there is no such task any more.
//
// Where no program of the probe's kind may call bpf_task_from_pid
// (Config.FindsTasks: before Linux 6.2, uprobes and kprobes on 6.18),
// another task's stack is a run-time error naming why.

// taskBacktrace compiles task_backtrace(task).
func (g *gen) taskBacktrace(c *syntax.Call) value {
	g.needs(c.Position(), target.TaskStack, c.Name+"()")
	v := g.strSlot(tokenLen(KernelHex) + 2)
	task := g.pushSlot()
	other, found := g.newLabel("other_task"), g.newLabel("task_stack")
	g.long(c.Args[0])
	g.emit(
		asm.StoreMem(asm.R10, task, asm.R0, asm.DWord),
		asm.StoreImm(regScratch, int16(v.off), tokenMark, asm.Byte),
		asm.StoreImm(regScratch, int16(v.off+1), int64(KernelHex.storedByte()), asm.Byte),
		asm.StoreImm(regScratch, int16(v.off+tokenLen(KernelHex)), 0, asm.Byte),
		asm.FnGetCurrentTask.Call(),
		asm.LoadMem(asm.R1, asm.R10, task, asm.DWord),
		asm.JNE.Reg(asm.R0, asm.R1, other),
		asm.StoreImm(regScratch, int16(v.off+1), int64(KernelHex), asm.Byte),
	)
	g.m.stacks = true
	g.kernelStackID(KernelHex, v.off+1)
	g.emit(asm.Ja.Label(found))
	g.mark(other)
	g.otherTaskStackID(c, task)
	g.mark(found)
	g.tokenDigits(v.off + 2)
	g.popStack(8)
	return v
}

// otherTaskStackID leaves in R0 the id in kernelStore of the stack of the
// task whose address is in stack slot task (not the running thread's), -1
// when there is no such task (or the address is 0), or raises the error
// that says why the probe cannot find it.
func (g *gen) otherTaskStackID(c *syntax.Call, task int16) {
	ids, err := g.findsTasks()
	if err != nil {
		g.emit(asm.Ja.Label(g.errorSite(c.Name+"() of another task than the running thread: "+err.Error(), c.Pos, false)))
		return
	}
	path, err := g.m.facts.taskPaths["pid"]()
	if err != nil {
		g.fail(c, "%s() needs task_struct from the kernel's BTF: %v", c.Name, err)
		return
	}
	ref := g.pushSlot()
	none, release, done := g.newLabel("no_task"), g.newLabel("task_release"), g.newLabel("task_released")
	g.emit(asm.LoadMem(asm.R0, asm.R10, task, asm.DWord), asm.JEq.Imm(asm.R0, 0, none))
	g.readPath(path, false, c.Pos)
	g.emit(
		asm.JGT.Imm(asm.R0, math.MaxInt32, none),
		asm.Mov.Reg(asm.R1, asm.R0),
		kernel.KfuncCall(ids[0]),
		asm.JEq.Imm(asm.R0, 0, none),
		asm.StoreMem(asm.R10, ref, asm.R0, asm.DWord), // a spilled pointer stays trusted
		asm.LoadMem(asm.R1, asm.R10, task, asm.DWord),
		asm.Mov.Imm(asm.R2, -1),
		asm.JNE.Reg(asm.R0, asm.R1, release), // another task took the id
	)
	g.m.taskStacks = true
	g.countedStackID(kernelStore, func(frames int32) {
		g.emit(
			asm.LoadMem(asm.R1, asm.R10, ref, asm.DWord),
			asm.Mov.Reg(asm.R2, regScratch),
			asm.Add.Imm(asm.R2, frames),
			asm.Mov.Imm(asm.R3, 8*MaxBacktrace),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnGetTaskStack.Call(), // the bytes it wrote, the rest zeroed
		)
	})
	g.emit(asm.Mov.Reg(asm.R2, asm.R0))
	g.mark(release)
	g.emit(
		asm.StoreMem(asm.R10, task, asm.R2, asm.DWord),
		asm.LoadMem(asm.R1, asm.R10, ref, asm.DWord),
		kernel.KfuncCall(ids[1]),
		asm.LoadMem(asm.R0, asm.R10, task, asm.DWord),
		asm.Ja.Label(done),
	)
	g.mark(none)
	g.emit(asm.Mov.Imm(asm.R0, -1))
	g.mark(done)
	g.popStack(8)
}

// findsTasks returns the BTF ids of bpf_task_from_pid and
// bpf_task_release when the probe's programs may call them, else why
// not.
func (g *gen) findsTasks() ([]int32, error) {
	if err := g.m.cfg.Kernel.Check(target.TaskFromPid); err != nil {
		return nil, err
	}
	if finds := g.m.cfg.FindsTasks; finds != nil {
		if err := finds(g.ownProbe().Attach); err != nil {
			return nil, err
		}
	}
	return g.m.facts.taskKfuncs()
}
