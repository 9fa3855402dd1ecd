package sema

import "github.com/bpftap/bpftap/internal/syntax"

// Arrays keyed by the current thread. The commonest idiom of SystemTap
// scripts saves a value when a call is entered and takes it back when the
// call returns, on the same thread:
//
//	probe syscall.read { start[tid()] = gettimeofday_ns() }
//	probe syscall.read.return { t = gettimeofday_ns() - start[tid()]; delete start[tid()] }
//
// and @entry (entry.go) compiles to exactly that. promoteByThread marks
// such arrays (Var.ByThread), which the BPF back end keeps in task-local
// storage: one element per thread, found from the task without hashing,
// and freed by the kernel when the thread exits (a hash keeps the entries
// of calls that never return, such as exit_group, until it overflows). An
// array qualifies when
//
//   - it has exactly one key, a long, and its values are longs or strings
//     (statistics stay in a hash);
//   - every index, `in` and `delete` of it, in every probe and function,
//     has the key expression tid() (the builtin call itself, nothing else);
//   - only kernel probes use it: no user-side probe (begin, end, timer,
//     error, the end-of-run display of a global written and never read)
//     and no function they call touches it, and no foreach walks it (task
//     storage cannot be listed, and in user space tid() names another
//     thread anyway), nor any kernel probe whose tid() is a context
//     task's (scheduler.cpu_on: the element would be the running thread's);
//   - it declares no size and does not wrap (task storage has no capacity
//     to honour: each thread holds one element).
func (e *elab) promoteByThread() {
	if !e.anyGlobal(byThreadShape) {
		return
	}
	candidate := map[*syntax.Var]bool{}
	for _, v := range e.prog.Globals {
		candidate[v] = byThreadShape(v)
	}
	for _, p := range e.prog.Probes {
		if p.Display != nil {
			candidate[p.Display] = false
		}
	}
	e.notByThread(func(n syntax.Node) bool {
		if id, ok := n.(*syntax.Ident); ok && id.Var != nil {
			candidate[id.Var] = false
		}
		return true
	})
	byTid := map[*syntax.Ident]bool{} // array operands of an index or `in` by tid()
	mark := func(array syntax.Expr, keys []syntax.Expr) {
		if id, ok := array.(*syntax.Ident); ok && len(keys) == 1 && isTidCall(keys[0]) {
			byTid[id] = true
		}
	}
	for _, n := range e.bodies() {
		syntax.Walk(n, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Index:
				mark(n.Array, n.Keys)
			case *syntax.In:
				mark(n.Array, n.Keys)
			case *syntax.Ident:
				if n.Var != nil && !byTid[n] {
					candidate[n.Var] = false
				}
			}
			return true
		})
	}
	for v, ok := range candidate {
		v.ByThread = ok
	}
}

// byThreadShape tells whether global v has the shape of an array keyed by
// the thread: one long key, elements that are not statistics, no size
// declared, no wrap, not per-CPU.
func byThreadShape(v *syntax.Var) bool {
	return v.IsArray && len(v.Keys) == 1 && v.Keys[0] == syntax.TypeLong &&
		v.Type != syntax.TypeStats && !v.PerCPU && !v.Wrap && (v.Decl == nil || v.Decl.Size == 0)
}

// isTidCall reports whether x is a call of the builtin tid().
func isTidCall(x syntax.Expr) bool {
	c, ok := x.(*syntax.Call)
	return ok && len(c.Args) == 0 && c.Func != nil && c.Func.Builtin == "tid"
}

// notByThread calls visit on every node of the code whose tid() is not
// the running thread's, each function once: the user-side probes, the
// kernel probes with a context task (contexttask.go), and the functions
// they reach.
func (e *elab) notByThread(visit func(syntax.Node) bool) {
	e.reachable(func(p *Probe) bool { return !p.Kernel || p.ContextTask != nil }, visit)
}
