package bpfgen

import (
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// Calls of script functions (the user's and the tapset's written in the
// script language) that cannot be BPF subprograms (subprog.go) are
// inlined, which lets every callee's locals sit in fixed slots like the
// probe's own.
//
// At a call site the callee gets fresh slots for all its locals (8-byte
// stack slots for longs, MAXSTRINGLEN scratch slots for strings), zeroed
// as stap zeroes a new frame; the arguments are evaluated in the caller's
// context into the parameters' slots, and only then are the callee's
// variables bound to the slots (so an argument that calls the same function
// binds its own). The body is compiled in place; `return x` leaves x in R0
// (or copies it into the result's string slot, allocated before the callee's
// slots so it outlives them) and jumps to a label after the body (a return
// that ends the body just falls through to it), where falling off the end
// arrives with 0 (or ""). The slots are released after
// the call. A call chain that reaches a function being inlined is recursion,
// which cannot be inlined: it is refused at the call. `next` in a function
// raises stap's "all functions exhausted" (no other overload to try).

// frame is a call being inlined.
type frame struct {
	call   *syntax.Call
	ret    string // the label after the inlined body
	result value  // the result's slot, for a function returning a string
	// tail is the body's last statement when it is a return, which falls
	// through to the label instead of jumping.
	tail *syntax.ReturnStmt
	// retSlot and returned are set in a subprogram's own frame: the stack
	// slot of its ret pointer and the label past the copy of its result,
	// where a literal stored through ret itself jumps (subprogRet).
	retSlot  int16
	returned string
}

// scriptFunc tells whether c calls a function with a body in the script
// language.
func scriptFunc(c *syntax.Call) bool {
	return c.Func != nil && c.Func.Decl != nil && c.Func.Decl.Body != nil
}

// inline compiles the call c of a script function: a long result is left
// in R0, a string result in the returned slot.
func (g *gen) inline(c *syntax.Call) value { return g.inlineInto(c, value{}) }

// inlineInto is inline with a string result written straight into dst
// when dst is a slot (strInto: no copy from a result slot). dst is cleared
// only once the arguments are in the parameters' slots, so an argument may
// read it (`s = f(s)`).
func (g *gen) inlineInto(c *syntax.Call, dst value) value {
	if sp := g.asSubprog(c); sp != nil {
		return g.callSubprog(c, sp, dst)
	}
	f := c.Func
	result := dst
	if f.Result == syntax.TypeString && !dst.str {
		result = g.strSlot(g.m.maxStr)
	}
	if chain := g.recursion(f); chain != "" {
		g.fail(c, "recursive call of function %s() (%s) cannot be compiled in a kernel probe: BPF programs have no call stack", f.Name, chain)
		return result
	}
	smark, stack := g.scratchMark(), g.stack
	slots := g.frameSlots(f)
	g.passArgs(c, slots)
	if result.str {
		g.emit(asm.StoreImm(regScratch, int16(result.off), 0, asm.Byte))
	}
	saved := g.bind(slots)
	fr := frame{call: c, ret: g.newLabel("return_" + f.Name), result: result, tail: tailReturn(f.Decl.Body)}
	outer := g.inlined
	g.inlined = append(outer[:len(outer):len(outer)], fr)
	loops := g.loops
	g.loops = nil
	g.stmt(f.Decl.Body)
	g.loops = loops
	g.inlined = outer
	if fr.tail == nil {
		g.emit(asm.Mov.Imm(asm.R0, 0))
	}
	g.mark(fr.ret)
	g.bind(saved)
	g.scratchRelease(smark)
	g.stack = stack
	return result
}

// recursion returns the call chain "f → g → f" when f is being inlined
// already, else "".
func (g *gen) recursion(f *syntax.Func) string {
	frames := g.inlined
	for i, fr := range frames {
		if fr.call.Func == f {
			var names []string
			for _, outer := range frames[i:] {
				names = append(names, outer.call.Func.Name)
			}
			return strings.Join(append(names, f.Name), " → ")
		}
	}
	return ""
}

// frameSlots allocates and zeroes fresh slots for the locals of f
// (parameters included).
func (g *gen) frameSlots(f *syntax.Func) map[*syntax.Var]value {
	slots := make(map[*syntax.Var]value, len(f.Locals))
	g.emit(asm.Mov.Imm(asm.R1, 0))
	for _, v := range f.Locals {
		if v.Type == syntax.TypeString {
			s := g.strSlot(g.m.maxStr)
			g.emit(asm.StoreMem(regScratch, int16(s.off), asm.R1, asm.Byte))
			slots[v] = s
			continue
		}
		s := value{off: int(g.pushSlot())}
		g.emit(asm.StoreMem(asm.R10, int16(s.off), asm.R1, asm.DWord))
		slots[v] = s
	}
	return slots
}

// passArgs evaluates the arguments of c into the parameters' slots.
func (g *gen) passArgs(c *syntax.Call, slots map[*syntax.Var]value) {
	for i, a := range c.Args {
		if i >= len(c.Func.Params) {
			break
		}
		dst := slots[c.Func.Params[i]]
		if dst.str {
			g.strInto(dst, a)
			continue
		}
		g.long(a)
		g.emit(asm.StoreMem(asm.R10, int16(dst.off), asm.R0, asm.DWord))
	}
}

// bind makes the variables of slots live in them and returns the previous
// bindings (a zero value: none) for a later bind to restore.
func (g *gen) bind(slots map[*syntax.Var]value) map[*syntax.Var]value {
	saved := make(map[*syntax.Var]value, len(slots))
	for v, s := range slots {
		saved[v] = g.locals[v]
		if s == (value{}) {
			delete(g.locals, v)
			continue
		}
		g.locals[v] = s
	}
	return saved
}

// ret compiles `return [x]` in an inlined function.
func (g *gen) ret(s *syntax.ReturnStmt) {
	frames := g.inlined
	if len(frames) == 0 {
		g.fail(s, "return outside a function")
		return
	}
	fr := frames[len(frames)-1]
	switch {
	case s.Value == nil:
		g.emit(asm.Mov.Imm(asm.R0, 0))
	case fr.returned != "":
		g.subprogRet(fr, s.Value)
		return
	case fr.result.str:
		g.strInto(fr.result, s.Value)
	default:
		g.long(s.Value)
	}
	if s != fr.tail {
		g.jump(fr.ret)
	}
}

// tailReturn is the last statement of body if it is a return, else nil.
func tailReturn(body *syntax.Block) *syntax.ReturnStmt {
	if len(body.Stmts) == 0 {
		return nil
	}
	r, _ := body.Stmts[len(body.Stmts)-1].(*syntax.ReturnStmt)
	return r
}

// next compiles `next`: the end of the probe, or in a function stap's
// error for an overload that passes with none left.
func (g *gen) next() {
	frames := g.inlined
	if len(frames) == 0 {
		g.jump(g.exitLabel)
		return
	}
	g.jump(g.errorSite(tapset.MsgFunctionsExhausted, g.callSite(), false))
}

// callSite is the position of the call of the innermost function being
// compiled (none in a probe's own code). A subprogram has a call site per
// caller, so one that needs its own is inlined instead.
func (g *gen) callSite() syntax.Pos {
	n := len(g.inlined)
	if n == 0 {
		return syntax.Pos{}
	}
	if g.subprog && n == g.ownFrame+1 {
		g.probeBound = true
	}
	return g.inlined[n-1].call.Pos
}
