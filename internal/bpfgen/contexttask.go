package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// Context tasks (sema's contexttask.go). A probe with a ContextTask
// (scheduler.cpu_on: sched_switch's $next) compiles its context functions
// to read that task_struct, through bpf_probe_read_kernel as a $var
// chain, where other probes call the helpers of the running thread:
//
//	pid()  task->tgid           tid()  task->pid
//	uid()  task->cred->uid.val  gid()  task->cred->gid.val
//	euid() task->cred->euid.val ppid() task->real_parent->tgid
//	execname()  task->comm      task_current()  task
//
// The code reads the probe's context (the tracepoint's arguments): a
// function that calls these in such a probe is inlined, never a
// subprogram (ownProbe).

// contextTaskFields are the chains from task_struct of the context
// functions read from a task, by function.
var contextTaskFields = map[string]string{"pid": "tgid", "tid": "pid", "uid": "uid", "gid": "gid"}

// contextTask returns the probe's context task, nil when its context
// functions read the running thread, as they do in the code of the
// context task's own expression.
func (g *gen) contextTask() syntax.Expr {
	t := g.probe.ContextTask
	if t == nil || g.inContextTask {
		return nil
	}
	g.probeBound = true
	return t
}

// task loads the address of the task the probe's context functions read
// into R0: its context task, or the running thread's.
func (g *gen) task() {
	if t := g.contextTask(); t != nil {
		g.inContextTask = true
		g.long(t)
		g.inContextTask = false
		return
	}
	g.emit(asm.FnGetCurrentTask.Call())
}

// idField compiles pid(), tid(), uid() or gid(): fn's half (upper: tgid,
// gid) of the running thread's ids, or the context task's field.
func (g *gen) idField(c *syntax.Call, fn asm.BuiltinFunc, upper bool) {
	if g.contextTask() != nil {
		g.readTask(c, contextTaskFields[c.Name])
		return
	}
	g.halfOf(fn, upper)
}
