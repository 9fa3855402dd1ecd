package bpfgen

import (
	"math"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// Finding a task by its pid: pid2task(pid) and pid2execname(pid). BPF has
// one way, the kfunc bpf_task_from_pid (Linux 6.2). It looks the number up
// in the root pid namespace (the numbers pid() and tid() give; stap looks
// in the caller's namespace, the same one outside containers) as a thread
// id, and returns the task_struct with a reference taken (its rcu_users
// count), or NULL; the verifier refuses a program that does not give the
// reference back with bpf_task_release before it ends. So pid2task finds
// the task, keeps its address as a plain number (stored to the scratch
// area and loaded back: the verifier forgets what a map value held), and
// releases it at once:
//
//	R0 = pid; unsigned R0 > INT_MAX: R0 = 0, done (a pid is an int)
//	R0 = bpf_task_from_pid(R0); R0 == 0: done
//	cell = R0; bpf_task_release(R0); R0 = cell
//
// The address stays good until the program ends. bpf_task_release drops
// rcu_users (put_task_struct_rcu_user); when it was the last, the
// task_struct is freed by an RCU callback (delayed_put_task_struct), that
// is after a grace period. Every program bpftap loads runs inside an RCU
// read-side critical section — __bpf_trace_run (tp_btf and raw
// tracepoints), trace_call_bpf (classic tracepoints, uprobes) and the perf
// overflow handler (perf events) hold rcu_read_lock() around the program,
// with preemption off — so no grace period that started after the release
// can end before the program returns. The task's fields are read with
// bpf_probe_read_kernel anyway (task.stp's @cast), which cannot fault.
//
// Which programs may call the kfuncs is the kernel's choice: on Linux
// 6.18 tp_btf, classic tracepoint and perf event programs may, raw
// tracepoint and kprobe-type programs (uprobes) may not ("calling kernel
// function bpf_task_from_pid is not allowed"). The elaborator asks the
// kernel before it accepts a probe that finds tasks (TaskLookupProbe,
// kernelside.CanFindTasks).

// TaskLookupProbe returns a program that finds the task of pid 1 and
// releases it, as pid2task does: it loads where the kernel lets a program
// find tasks.
func TaskLookupProbe(k *target.Kernel) (asm.Instructions, error) {
	if err := k.Check(target.TaskFromPid); err != nil {
		return nil, err
	}
	ids, err := newKernelFacts(k).taskKfuncs()
	if err != nil {
		return nil, err
	}
	return asm.Instructions{
		asm.Mov.Imm(asm.R1, 1),
		kernel.KfuncCall(ids[0]),
		asm.JEq.Imm(asm.R0, 0, "none"),
		asm.Mov.Reg(asm.R1, asm.R0),
		kernel.KfuncCall(ids[1]),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("none"),
		asm.Return(),
	}, nil
}

// pid2task compiles pid2task(pid) into R0: the address of the task whose
// thread id is pid, 0 when there is none.
func (g *gen) pid2task(c *syntax.Call) {
	if !g.needs(c.Position(), target.TaskFromPid, c.Name+"()") {
		return
	}
	ids, err := g.m.facts.taskKfuncs()
	if err != nil {
		g.fail(c, "%s() needs the kernel function bpf_task_from_pid to find a task by its pid: %v", c.Name, err)
		return
	}
	none, done := g.newLabel("no_task"), g.newLabel("task_found")
	g.long(c.Args[0])
	mark := g.scratchMark()
	cell := int16(g.allocScratch(8))
	g.emit(
		asm.JGT.Imm(asm.R0, math.MaxInt32, none),
		asm.Mov.Reg(asm.R1, asm.R0),
		kernel.KfuncCall(ids[0]),
		asm.JEq.Imm(asm.R0, 0, done),
		asm.StoreMem(regScratch, cell, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R0),
		kernel.KfuncCall(ids[1]),
		asm.LoadMem(asm.R0, regScratch, cell, asm.DWord),
		asm.Ja.Label(done),
	)
	g.scratchRelease(mark)
	g.mark(none)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.mark(done)
}

// pid2execname compiles pid2execname(pid): the name of the task pid2task
// finds, "" when there is none.
func (g *gen) pid2execname(c *syntax.Call) value {
	v := g.strSlot(commLen)
	none, done := g.newLabel("no_task"), g.newLabel("task_named")
	g.pid2task(c)
	g.emit(asm.JEq.Imm(asm.R0, 0, none))
	g.taskComm(c, v.off)
	g.emit(asm.Ja.Label(done))
	g.mark(none)
	g.emit(asm.StoreImm(regScratch, int16(v.off), 0, asm.Byte))
	g.mark(done)
	g.cutComm(v.off)
	return v
}

// taskComm writes at off the comm (commLen bytes) of the task whose
// address is in R0; n is blamed should the kernel's BTF lack task_struct.
func (g *gen) taskComm(n syntax.Node, off int) {
	path, err := g.m.facts.taskPaths["comm"]()
	if err != nil {
		g.fail(n, "reading a task's name needs task_struct from the kernel's BTF: %v", err)
		return
	}
	g.readPath(path, true, n.Position())
	g.readStr(asm.FnProbeReadKernel, value{str: true, off: off, width: commLen},
		func() { g.emit(asm.Mov.Reg(asm.R3, asm.R0)) }, commLen)
}
