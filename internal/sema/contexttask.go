package sema

import (
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Context tasks. stap's scheduler.cpu_on runs in finish_task_switch, in
// the context of the task coming back on the CPU; the only tracepoint
// there, sched_switch, runs before the switch, in the context of the task
// leaving. The tapset's alias puts the call __context_task($next) first
// in its body, and checkContextTasks records its argument as the probe's
// ContextTask: the back end then compiles the context functions (pid(),
// tid(), uid(), execname(), task_current(), ...) of that probe to read
// that task, not the running thread. What only the running thread has —
// its registers, its user memory and user stack — would be the leaving
// task's, so those functions are refused there, and an array keyed by
// tid() in such a probe stays a hash (bythread.go). The kernel stack is the
// context task's own: off the CPU, its saved stack is where it will
// resume, and bpf_get_task_stack takes it when the context task is a
// task_struct pointer argument of a BTF-typed tracepoint (ContextTaskArg),
// the trusted pointer that helper needs.

// contextTaskCall is the tapset builtin that names a probe's context task.
const contextTaskCall = "__context_task"

// checkContextTasks takes the context task of every kernel probe whose
// body calls __context_task, and refuses there the calls that read the
// running thread.
func (e *elab) checkContextTasks() {
	for _, p := range e.prog.Probes {
		if !p.Kernel {
			continue
		}
		syntax.Walk(p.Body, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.Call); ok && isBuiltinCall(c, contextTaskCall) && p.ContextTask == nil {
				p.ContextTask = c.Args[0]
			}
			return p.ContextTask == nil
		})
		if p.ContextTask != nil {
			e.refuseRunningThread(p)
		}
	}
}

// refuseRunningThread refuses, in the code probe p reaches, the calls of
// builtins that read the thread running on the CPU, and the kernel stack
// where the context task is not an argument bpf_get_task_stack takes.
func (e *elab) refuseRunningThread(p *Probe) {
	_, taskStack := e.prog.ContextTaskArg(p)
	e.reachable(func(q *Probe) bool { return q == p }, func(n syntax.Node) bool {
		c, ok := n.(*syntax.Call)
		switch {
		case !ok || c.Func == nil:
		case readsRunningThread(c.Func.Builtin):
			e.rep.errorAt("kernelctx", c, tapset.RunningThreadMsg(c.Func.Builtin))
		case kernelStack(c.Func.Builtin) && !taskStack:
			e.rep.errorAt("kernelctx", c, tapset.NoTaskStackMsg(c.Func.Builtin, syntax.ExprString(p.ContextTask)))
		}
		return true
	})
}

// readsRunningThread tells whether builtin name reads the registers, the
// user memory or the user stack of the thread running on the CPU (or its
// kernel stack by depth: stack(n), callers(n)).
func readsRunningThread(name string) bool {
	switch name {
	case "register", "u_register", "@uregister", "@uderef", "uaddr", "user_mode", "cmdline_str", "returnval",
		"ubacktrace", "sprint_ubacktrace", "__ustack_raw", "__ucallers", "__stack_raw", "__callers",
		"usymname", "usymdata", "umodname", "usymfile", "usymline", "usymfileline",
		"sprint_ustack", "__ustack_lines", "__ustack_brief_lines", "__ustack_fileline_lines",
		"sprint_usyms", "__usyms_lines":
		return true
	}
	return strings.HasPrefix(name, "user_")
}

// kernelStack tells whether builtin name takes the kernel stack.
func kernelStack(name string) bool { return name == "backtrace" || name == "sprint_backtrace" }

// ContextTaskArg returns the index in p.Attach.Args of p's context task
// when it is a task_struct pointer argument of a BTF-typed tracepoint
// (sched_switch's $next), which the code generator passes unchanged to
// bpf_get_task_stack; ok is false for any other context task, and for a
// probe without one.
func (prog *Program) ContextTaskArg(p *Probe) (i int, ok bool) {
	if p.ContextTask == nil || !p.Attach.Kind.BTFTyped() {
		return 0, false
	}
	a := prog.Targets[p.ContextTask]
	if a == nil || a.Param < 0 || a.Path != nil {
		return 0, false
	}
	arg := p.Attach.Args[a.Param]
	return a.Param, arg.Pointer && arg.Loc.Plain()
}

// isBuiltinCall tells whether c calls the builtin name.
func isBuiltinCall(c *syntax.Call, name string) bool {
	return c.Func != nil && c.Func.Builtin == name
}
