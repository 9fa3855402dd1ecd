package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Tokens in kernel code. In a kernel probe, usymname(), usymdata() and
// umodname() give a symbol token and the stack builtins a stack token:
// short strings that user space replaces with their text wherever it reads
// a string the kernel made (bpfgen/usymbols.go, bpfgen/stacks.go). Kernel
// code may keep a token (in a local, a global, a key or a value),
// concatenate it, print it, pass it to a builtin that user space computes
// or makes (tapset.Captured, tapset.Deferred: warn, printk) and count by
// it, but what would read its text there reads the token instead: a
// comparison (but with "": a token is empty when its text is), a string
// function (but strtol of a source line's: sourceTokens), sprintf's width
// or precision. A
// symbol token names one address, and user space gathers the elements of
// every address with the same text into one, summing them, so kernel code
// may add to an element keyed by one (<<<, ++, --, +=, -=), but not read,
// assign, test or delete it.
// checkTokens follows tokens through locals, parameters, globals and the
// results of script functions, to a fixed point, and refuses those uses.

// symbolTokens and stackTokens are the builtins whose value is a token in
// a kernel probe.
var (
	symbolTokens = map[string]bool{"usymname": true, "usymdata": true, "umodname": true,
		"usymfile": true, "usymline": true, "usymfileline": true}
	stackTokens = map[string]bool{"backtrace": true, "sprint_backtrace": true, "ubacktrace": true, "sprint_ubacktrace": true,
		"__callers": true, "__ucallers": true, "task_backtrace": true}
	// sourceTokens are the symbol tokens strtol() reads in the kernel:
	// their address, stap's value for an address without source lines
	// (bpfgen/strtol.go), which scripts test for (fileline-profile.stp).
	sourceTokens = map[string]bool{"usymfile": true, "usymline": true, "usymfileline": true}
)

// tokenFlow is what holds tokens in kernel code: each variable and script
// function whose value may, by the builtin that made it.
type tokenFlow struct {
	vars  map[*syntax.Var]string
	funcs map[*syntax.Func]string
}

// holds returns the builtin whose token e's value may hold, or "".
func (f *tokenFlow) holds(e syntax.Expr) string {
	switch e := e.(type) {
	case *syntax.Call:
		if e.Func == nil {
			return ""
		}
		if symbolTokens[e.Func.Builtin] || stackTokens[e.Func.Builtin] {
			return e.Func.Builtin
		}
		return f.funcs[e.Func]
	case *syntax.Ident:
		return f.vars[e.Var]
	case *syntax.Index:
		if id, ok := e.Array.(*syntax.Ident); ok {
			return f.vars[id.Var]
		}
	case *syntax.Binary:
		if e.Op == "." {
			return firstOf(f.holds(e.X), f.holds(e.Y))
		}
	case *syntax.Ternary:
		return firstOf(f.holds(e.Then), f.holds(e.Else))
	case *syntax.Assign:
		if e.Op == "=" || e.Op == ".=" {
			return firstOf(f.holds(e.RHS), f.holds(e.LHS))
		}
	case *syntax.PrintCall:
		if e.Name[0] == 's' {
			for _, a := range e.Args {
				if b := f.holds(a); b != "" {
					return b
				}
			}
		}
	}
	return ""
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// flow finds what holds tokens in kernel code, to a fixed point: the
// targets of assignments of tokens, the parameters passed one, the
// functions returning one.
func (e *elab) flow() *tokenFlow {
	f := &tokenFlow{vars: map[*syntax.Var]string{}, funcs: map[*syntax.Func]string{}}
	for changed := true; changed; {
		changed = false
		mark := func(v *syntax.Var, b string) {
			if v != nil && b != "" && f.vars[v] == "" {
				f.vars[v], changed = b, true
			}
		}
		var fn *syntax.Func // the function whose body is being walked
		e.kernelCodeIn(func(in *syntax.Func) { fn = in }, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Assign:
				mark(lvalueVar(n.LHS), f.holds(n.RHS))
			case *syntax.Call:
				if n.Func != nil && n.Func.Decl != nil {
					for i, a := range n.Args {
						if i < len(n.Func.Params) {
							mark(n.Func.Params[i], f.holds(a))
						}
					}
				}
			case *syntax.ReturnStmt:
				if b := f.holds(n.Value); fn != nil && n.Value != nil && b != "" && f.funcs[fn] == "" {
					f.funcs[fn], changed = b, true
				}
			}
			return true
		})
	}
	return f
}

// emptinessTest tells whether b compares a string with "", which a
// token's text is exactly when the token is (no stack taken).
func emptinessTest(b *syntax.Binary) bool {
	isEmpty := func(e syntax.Expr) bool { lit, ok := e.(*syntax.StringLit); return ok && lit.Value == "" }
	return (b.Op == "==" || b.Op == "!=") && (isEmpty(b.X) || isEmpty(b.Y))
}

// checkTokens refuses, in kernel code, the comparisons and string
// functions of tokens, the reads, tests and deletes of elements keyed by a
// symbol token, and foreach over arrays keyed by tokens.
func (e *elab) checkTokens() {
	if !e.mayCallNative(func(name string) bool { return symbolTokens[name] || stackTokens[name] }) {
		return // nothing makes a token: nothing holds one
	}
	f := e.flow()
	added := map[syntax.Node]bool{} // elements written or added to
	loops := &tokenLoops{keyedBy: map[*syntax.Var]string{}}
	e.kernelCode(func(n syntax.Node) bool {
		loops.visit(f, n)
		switch n := n.(type) {
		case *syntax.Assign:
			added[n.LHS] = true
			if ix, ok := n.LHS.(*syntax.Index); ok && n.Op != "<<<" && n.Op != "+=" && n.Op != "-=" {
				e.refuseSymbolKey(f, n, ix.Keys, fmt.Sprintf("assigned with '%s'", n.Op))
			}
		case *syntax.IncDec:
			added[n.X] = true
		case *syntax.Binary:
			if n.Op != "." && n.Op != "&&" && n.Op != "||" && !emptinessTest(n) {
				if b := firstOf(f.holds(n.X), f.holds(n.Y)); b != "" {
					e.rep.errorAt("kernelctx", n, tokenTextMsg(b, fmt.Sprintf("operator '%s'", n.Op)))
				}
			}
		case *syntax.Call:
			if bi := Builtin(n); bi != nil && bi.Kernel != tapset.Captured && bi.Kernel != tapset.Deferred {
				for _, a := range n.Args {
					if b := f.holds(a); b != "" && !(n.Name == "strtol" && sourceTokens[b]) {
						e.rep.errorAt("kernelctx", a, tokenTextMsg(b, n.Name+"()"))
						break
					}
				}
			}
		case *syntax.PrintCall:
			e.refusePaddedToken(f, n)
		case *syntax.In:
			e.refuseSymbolKey(f, n, n.Keys, "tested")
		case *syntax.Index:
			if !added[n] {
				e.refuseSymbolKey(f, n, n.Keys, "read")
			}
		case *syntax.DeleteStmt:
			if ix, ok := n.Target.(*syntax.Index); ok {
				added[ix] = true
				e.refuseSymbolKey(f, n, ix.Keys, "deleted")
			}
		}
		return true
	})
	loops.refuse(e)
}

// refusePaddedToken refuses, in sprintf's format, a width or precision
// of a token, which the kernel formats: it would pad or cut the token, not
// its text (printf formats in user space, after the tokens became text).
func (e *elab) refusePaddedToken(f *tokenFlow, n *syntax.PrintCall) {
	if n.Name != "sprintf" || n.Format == nil {
		return
	}
	pf, err := PrintFormat(n)
	if err != nil {
		return
	}
	arg := 0
	for _, d := range pf.Directives() {
		if d.Verb == 0 {
			continue
		}
		arg += btoi(d.WidthArg) + btoi(d.PrecArg)
		if arg < len(n.Args) && (d.Width >= 0 || d.WidthArg || d.Prec >= 0 || d.PrecArg) {
			if b := f.holds(n.Args[arg]); b != "" {
				e.rep.errorAt("kernelctx", n.Args[arg], tokenTextMsg(b, "sprintf's width or precision"))
			}
		}
		arg++
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// refuseSymbolKey refuses n, which uses an element keyed by keys as how
// says, when a key holds a symbol token.
func (e *elab) refuseSymbolKey(f *tokenFlow, n syntax.Node, keys []syntax.Expr, how string) {
	for _, k := range keys {
		if b := f.holds(k); symbolTokens[b] {
			e.rep.errorAt("kernelctx", n, fmt.Sprintf("an element keyed by %s() gathers in user space the elements "+
				"of every address with that text, summed: a kernel probe may add to it (<<<, ++, --, +=, -=), "+
				"not have it %s", b, how))
			return
		}
	}
}

// tokenTextMsg is the message for what, which would read the text of
// builtin b's token in kernel code.
func tokenTextMsg(b, what string) string {
	return fmt.Sprintf("%s would read the token a kernel probe holds for %s(), which becomes its text in user space "+
		"only: a kernel probe may keep, concatenate, print or count by it; compare it in a user-side probe", what, b)
}
