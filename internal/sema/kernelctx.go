package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/regexdfa"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Kernel context. The code of kernel probes, and of every function they
// call, runs as BPF programs. checkKernel refuses there what bpftap's BPF
// back end cannot run (docs/bpf-backend.md lists it), naming the construct
// and its position, with the message the code generator would give: for a
// builtin, tapset's table decides (Builtin.KernelError); a Captured builtin
// is allowed where its value is only printed; a =~ pattern must become an
// automaton of package regexdfa's size. promotePerCPU marks the
// globals that kernel code only updates, which the back end may keep per
// CPU.

// kernelCode calls visit on every node of the kernel probes' bodies and of
// the functions they reach, each function once.
func (e *elab) kernelCode(visit func(syntax.Node) bool) {
	e.reachable(func(p *Probe) bool { return p.Kernel }, visit)
}

// kernelCodeIn is kernelCode telling enter, before the nodes of each body,
// the function it is (nil for a probe's).
func (e *elab) kernelCodeIn(enter func(*syntax.Func), visit func(syntax.Node) bool) {
	e.reachableIn(func(p *Probe) bool { return p.Kernel }, enter, visit)
}

// reachable calls visit on every node of the bodies of the probes keep
// selects and of the functions they reach, each function once.
func (e *elab) reachable(keep func(*Probe) bool, visit func(syntax.Node) bool) {
	e.reachableIn(keep, func(*syntax.Func) {}, visit)
}

// reachableIn is reachable telling enter, before the nodes of each body,
// the function it is (nil for a probe's).
func (e *elab) reachableIn(keep func(*Probe) bool, enter func(*syntax.Func), visit func(syntax.Node) bool) {
	seen := map[*syntax.Func]bool{}
	var walk func(fn *syntax.Func, n syntax.Node)
	walk = func(fn *syntax.Func, n syntax.Node) {
		enter(fn)
		syntax.Walk(n, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.Call); ok && c.Func != nil && c.Func.Decl != nil && c.Func.Decl.Body != nil && !seen[c.Func] {
				seen[c.Func] = true
				walk(c.Func, c.Func.Decl.Body)
				enter(fn)
			}
			return visit(n)
		})
	}
	for _, p := range e.prog.Probes {
		if keep(p) {
			walk(nil, p.Body)
		}
	}
}

// checkKernel refuses the constructs kernel probes cannot run.
func (e *elab) checkKernel() {
	printed := map[syntax.Node]bool{} // values a kernel probe only prints
	matched := map[syntax.Node]bool{} // the '*' keys of deletes and foreach slices, which kernel probes run
	e.kernelCode(func(n syntax.Node) bool {
		markPrinted(n, printed)
		for _, k := range starKeys(n) {
			matched[k] = true
		}
		if _, star := n.(*syntax.Star); star && matched[n] {
			return true
		}
		if msg := KernelRefusal(n, printed[n]); msg != "" {
			e.rep.errorAt("kernelctx", RefusalNode(n), msg)
		}
		return true
	})
}

// checkUserSide refuses, in user-side probes, the calls that read what
// only a kernel probe has (its system call, the task it names:
// KernelOnly builtins), directly or through a script function, blamed at
// the call in the probe's own body (its stack is empty there: Stack
// builtins). Kernel data read through
// types (@cast, autocasts, task_current(), pid2task()) runs there: the
// interpreter reads it through package kmem.
func (e *elab) checkUserSide() {
	readsKernel := e.reaching(func(b *tapset.Builtin) bool { return b.KernelOnly })
	for _, p := range e.prog.Probes {
		if p.Kernel {
			continue
		}
		for _, c := range callsReaching(p, readsKernel) {
			msg := tapset.KernelOnlyMsg(c.Name + "()")
			if b := Builtin(c); b != nil && b.Unsupported != "" {
				msg = b.Unsupported
			}
			e.rep.errorAt("userside", c, msg)
		}
	}
}

// reaching returns a test of whether a function's code, or the code of a
// function it calls, calls a builtin that builtin selects. The answers are
// kept.
func (e *elab) reaching(builtin func(*tapset.Builtin) bool) func(*syntax.Func) bool {
	reaches := map[*syntax.Func]bool{}
	var test func(f *syntax.Func) bool
	test = func(f *syntax.Func) bool {
		if done, seen := reaches[f]; seen {
			return done
		}
		reaches[f] = false // recursion: decided by the other paths
		if b := tapset.Builtins[f.Builtin]; b != nil {
			reaches[f] = builtin(b)
		} else if f.Decl != nil && f.Decl.Body != nil {
			syntax.Walk(f.Decl.Body, func(n syntax.Node) bool {
				reaches[f] = reaches[f] || isCall(n) && test(n.(*syntax.Call).Func)
				return !reaches[f]
			})
		}
		return reaches[f]
	}
	return test
}

// callsReaching returns the calls in p's own body of functions reaches
// accepts, but those in the arguments of another such call.
func callsReaching(p *Probe, reaches func(*syntax.Func) bool) []*syntax.Call {
	var calls []*syntax.Call
	syntax.Walk(p.Body, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.Call); ok && c.Func != nil && reaches(c.Func) {
			calls = append(calls, c)
			return false
		}
		return true
	})
	return calls
}

// checkTaskLookups refuses, in a kernel probe whose program the kernel
// does not let find a task by its pid (pid2task: bpfgen/tasklookup.go),
// the calls of its body that reach pid2task or pid2execname, with the
// kernel's reason.
func (e *elab) checkTaskLookups() {
	isLookup := func(name string) bool { return name == "pid2task" || name == "pid2execname" }
	if e.kernel == nil || !e.mayCallNative(isLookup) {
		return
	}
	findsTasks := e.reaching(func(b *tapset.Builtin) bool { return isLookup(b.Name) })
	for _, p := range e.prog.Probes {
		if !p.Kernel || p.Attach == nil {
			continue
		}
		calls := callsReaching(p, findsTasks)
		if len(calls) == 0 {
			continue
		}
		if err := e.kernel.FindsTasks(p.Attach); err != nil {
			for _, c := range calls {
				e.rep.errorAt("kernelctx", c, fmt.Sprintf("%s() finds a task by its pid, which this probe cannot do: %v", c.Name, err))
			}
		}
	}
}

// mayCallNative tells whether the program may call a native function
// whose name accept accepts: a builtin resolved (Program.builtinsUsed, a
// superset of those called) or a tapset function implemented natively.
// The checks of what a few builtins do skip their walks without them.
func (e *elab) mayCallNative(accept func(name string) bool) bool {
	for _, fs := range [][]*syntax.Func{e.prog.builtinsUsed, e.prog.Funcs} {
		for _, f := range fs {
			if f.Builtin != "" && accept(f.Builtin) {
				return true
			}
		}
	}
	return false
}

func isCall(n syntax.Node) bool {
	c, ok := n.(*syntax.Call)
	return ok && c.Func != nil
}

// markPrinted marks the arguments of n whose value is only printed: those
// of a print-family call, of a Deferred builtin (system, log, warn: user
// space gets them as it gets a print's), and of a Captured builtin whose
// own value is.
func markPrinted(n syntax.Node, printed map[syntax.Node]bool) {
	switch n := n.(type) {
	case *syntax.PrintCall:
		if n.Name[0] != 's' {
			for _, a := range n.Args {
				printed[a] = true
			}
		}
	case *syntax.Call:
		if b := Builtin(n); b != nil && (b.Kernel == tapset.Captured && printed[n] || b.Kernel == tapset.Deferred) {
			for _, a := range n.Args {
				printed[a] = true
			}
		}
	}
}

// Builtin returns the tapset builtin c calls, or nil for a script function.
func Builtin(c *syntax.Call) *tapset.Builtin {
	if c.Func == nil || c.Func.Builtin == "" {
		return nil
	}
	return tapset.Builtins[c.Func.Builtin]
}

// WholeStack tells whether x, an argument of c, is a stack c takes whole:
// backtrace() or ubacktrace() given to a Text builtin (print_backtrace's
// and print_ubacktrace's lines). Its text is never cut at MAXSTRINGLEN,
// as stap prints every frame of a stack.
func WholeStack(c *syntax.Call, x syntax.Expr) bool {
	s, ok := x.(*syntax.Call)
	if b := Builtin(c); b == nil || !b.Text || !ok || Builtin(s) == nil {
		return false
	}
	return s.Name == "backtrace" || s.Name == "ubacktrace"
}

// RefusalNode is the node a refusal of n blames: the pattern of a regular
// expression match (which cannot become an automaton), else n.
func RefusalNode(n syntax.Node) syntax.Node {
	if b, ok := n.(*syntax.Binary); ok && (b.Op == "=~" || b.Op == "!~") {
		return b.Y
	}
	return n
}

// KernelRefusal is the message for n when a kernel probe cannot run it, or
// ""; printed tells whether n's value is only printed. The code generator
// gives the same message should such a node reach it.
func KernelRefusal(n syntax.Node, printed bool) string {
	switch n := n.(type) {
	case *syntax.Call:
		if b := Builtin(n); b != nil {
			return b.KernelError(n.Args, printed)
		}
	case *syntax.ForeachStmt:
		return foreachRefusal(n)
	case *syntax.Hist:
		return tapset.UserSpaceOnly("histogram (@hist_log, @hist_linear)")
	case *syntax.TryStmt:
		if n.CatchVar != nil {
			return tapset.UserSpaceOnly("a catch variable (the error's message)")
		}
	case *syntax.Binary:
		if lit, ok := n.Y.(*syntax.StringLit); ok && (n.Op == "=~" || n.Op == "!~") {
			if _, err := regexdfa.Compile(lit.Value); err != nil {
				return err.Error()
			}
		}
	case *syntax.Star:
		return tapset.UserSpaceOnly("a '*' key")
	}
	return ""
}

// promotePerCPU sets Var.PerCPU on the globals that kernel code updates
// only by ++, --, +=, -= and <<< used as statements, and never reads,
// assigns or deletes; user-side code may do anything with them.
func (e *elab) promotePerCPU() {
	if len(e.prog.Globals) == 0 {
		return
	}
	updated, other := map[*syntax.Var]bool{}, map[*syntax.Var]bool{}
	var visit func(n syntax.Node) bool
	visit = func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ExprStmt:
			target, rest := updateOf(n.X)
			if v := globalOf(target); v != nil {
				updated[v] = true
				for _, r := range rest {
					syntax.Walk(r, visit)
				}
				return false
			}
		case *syntax.Ident:
			if n.Var != nil && n.Var.Kind == syntax.VarGlobal {
				other[n.Var] = true
			}
		}
		return true
	}
	e.kernelCode(visit)
	live := e.liveUserGlobals()
	for v := range updated {
		v.PerCPU = !other[v]
		v.LiveUser = live[v]
	}
}

// liveUserGlobals returns the globals that user-side code which may run
// while the kernel probes are attached mentions (Var.LiveUser).
func (e *elab) liveUserGlobals() map[*syntax.Var]bool {
	live := map[*syntax.Var]bool{}
	e.reachable(func(p *Probe) bool { return !p.Kernel && !outsideRun[p.Family] }, func(n syntax.Node) bool {
		if id, ok := n.(*syntax.Ident); ok && id.Var != nil && id.Var.Kind == syntax.VarGlobal {
			live[id.Var] = true
		}
		return true
	})
	return live
}

// outsideRun are the user-side families whose probes run before the
// kernel probes are attached (begin) or after they are detached (end,
// error), or never.
var outsideRun = map[string]bool{"begin": true, "end": true, "error": true, "never": true}

// updateOf returns the operand an update statement changes and the
// expressions it evaluates besides (the keys, the added value); a nil
// target when x is no update.
func updateOf(x syntax.Expr) (syntax.Expr, []syntax.Expr) {
	switch x := x.(type) {
	case *syntax.IncDec:
		return x.X, keysOf(x.X)
	case *syntax.Assign:
		switch x.Op {
		case "+=", "-=", "<<<":
			return x.LHS, append(keysOf(x.LHS), x.RHS)
		}
	}
	return nil, nil
}

func keysOf(x syntax.Expr) []syntax.Expr {
	if ix, ok := x.(*syntax.Index); ok {
		return ix.Keys
	}
	return nil
}

// globalOf returns the global a (possibly indexed) operand names, or nil.
func globalOf(x syntax.Expr) *syntax.Var {
	if ix, ok := x.(*syntax.Index); ok {
		x = ix.Array
	}
	if id, ok := x.(*syntax.Ident); ok && id.Var != nil && id.Var.Kind == syntax.VarGlobal {
		return id.Var
	}
	return nil
}
