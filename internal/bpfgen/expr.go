package bpfgen

import (
	"math"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// long compiles a long-valued expression, leaving the value in R0.
// Clobbers R0-R5 and regRec.
func (g *gen) long(e syntax.Expr) {
	defer g.at(g.at(e.Position()))
	switch e := e.(type) {
	case *syntax.NumberLit:
		g.constant(asm.R0, e.Value)
	case *syntax.Ident:
		g.readVar(e)
	case *syntax.Index:
		g.readElement(e)
	case *syntax.Unary:
		g.unary(e)
	case *syntax.Binary:
		g.binary(e)
	case *syntax.Ternary:
		g.ternary(e)
	case *syntax.Assign:
		g.assign(e)
	case *syntax.IncDec:
		g.incDec(e)
	case *syntax.In:
		g.in(e)
	case *syntax.Call:
		g.call(e)
	case *syntax.StatOp:
		g.statRead(e)
	case *syntax.PrintCall:
		g.print(e)
	case *syntax.TargetVar, *syntax.Cast, *syntax.Autocast, *syntax.AtVar:
		g.targetVar(e)
	default:
		g.fail(e, "%s cannot be compiled in a kernel probe", syntax.ExprString(e))
	}
}

// constant loads v into r.
func (g *gen) constant(r asm.Register, v int64) {
	if v >= math.MinInt32 && v <= math.MaxInt32 {
		g.emit(asm.Mov.Imm(r, int32(v)))
		return
	}
	g.emit(asm.LoadImm(r, v, asm.DWord))
}

// readVar loads a long variable.
func (g *gen) readVar(id *syntax.Ident) {
	if id.Var.Kind == syntax.VarGlobal {
		g.readGlobal(id.Var, nil)
		return
	}
	v := g.local(id.Var)
	g.emit(asm.LoadMem(asm.R0, v.base(), int16(v.off), asm.DWord))
}

// local is the slot of a probe local, allocated on first use.
func (g *gen) local(v *syntax.Var) value {
	if s, ok := g.locals[v]; ok {
		return s
	}
	var s value
	switch {
	case g.m.prog.Deferred[v] != nil:
		_, size := g.m.deferredLayouts(v)
		s = value{deferred: true, width: size, off: g.allocScratch(size)}
	case v.Type == syntax.TypeString && g.sprintTargets()[v]:
		s = value{str: true, width: g.m.maxStr, sprintRoom: true}
		s.off = g.allocScratch(sprintRoom(s.width))
	case v.Type == syntax.TypeString:
		s = value{str: true, width: g.m.maxStr}
		s.off = g.allocScratch(s.width)
	case g.longsInScratch:
		s = value{scratch: true, off: g.allocScratch(8)}
	default:
		s = value{off: int(g.pushSlot())}
	}
	g.locals[v] = s
	return s
}

// operands evaluates x into R0 and y into R1, spilling x to the stack while
// y is computed unless y is a constant or a local.
func (g *gen) operands(x, y syntax.Expr) {
	if g.simple(y) {
		g.long(x)
		g.emit(asm.Mov.Reg(asm.R2, asm.R0))
		g.long(y)
		g.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.Mov.Reg(asm.R0, asm.R2))
		return
	}
	g.long(x)
	slot := g.pushSlot()
	g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	g.long(y)
	g.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord))
	g.popStack(8)
}

// simple tells whether e compiles to one instruction that touches only R0.
func (g *gen) simple(e syntax.Expr) bool {
	switch e := e.(type) {
	case *syntax.NumberLit:
		return true
	case *syntax.Ident:
		return e.Var.Kind != syntax.VarGlobal
	}
	return false
}

var aluOps = map[string]asm.ALUOp{
	"+": asm.Add, "-": asm.Sub, "*": asm.Mul, "&": asm.And, "|": asm.Or, "^": asm.Xor,
	"<<": asm.LSh, ">>": asm.ArSh, ">>>": asm.RSh, "/": asm.SDiv, "%": asm.SMod,
}

var compareOps = map[string]asm.JumpOp{
	"==": asm.JEq, "!=": asm.JNE, "<": asm.JSLT, "<=": asm.JSLE, ">": asm.JSGT, ">=": asm.JSGE,
}

func (g *gen) binary(e *syntax.Binary) {
	switch {
	case e.Op == "&&" || e.Op == "||":
		g.logical(e)
	case e.Op == "=~" || e.Op == "!~":
		g.regexMatch(e)
	case e.X.Type() == syntax.TypeString:
		g.stringBinary(e)
	default:
		g.operands(e.X, e.Y)
		g.arith(e.Op, e.Pos)
	}
}

// arith computes R0 = R0 op R1 with stap's semantics; at is where a
// division by 0 is reported.
func (g *gen) arith(op string, at syntax.Pos) {
	if j, ok := compareOps[op]; ok {
		done := g.newLabel("cmp")
		g.emit(
			asm.Mov.Reg(asm.R2, asm.R0),
			asm.Mov.Imm(asm.R0, 1),
			j.Reg(asm.R2, asm.R1, done),
			asm.Mov.Imm(asm.R0, 0),
		)
		g.mark(done)
		return
	}
	alu, ok := aluOps[op]
	if !ok {
		g.fail(&syntax.Binary{Typed: syntax.Typed{Pos: at}}, "operator '%s' cannot be compiled in a kernel probe", op)
		return
	}
	switch op {
	case "/", "%":
		g.emit(asm.JEq.Imm(asm.R1, 0, g.errorSite(tapset.MsgDivisionByZero, at, false)))
		g.signedDiv(asm.R0, asm.R1, op == "%")
		return
	case "<<", ">>", ">>>":
		g.emit(asm.And.Imm(asm.R1, 63))
	}
	g.emit(alu.Reg(asm.R0, asm.R1))
}

// logical compiles && and || with short-circuit evaluation.
func (g *gen) logical(e *syntax.Binary) {
	short, done := g.newLabel("short"), g.newLabel("logic")
	jump, result := asm.JEq, int32(0) // &&: a false operand decides
	if e.Op == "||" {
		jump, result = asm.JNE, 1
	}
	g.long(e.X)
	g.emit(jump.Imm(asm.R0, 0, short))
	g.long(e.Y)
	g.emit(jump.Imm(asm.R0, 0, short), asm.Mov.Imm(asm.R0, 1-result), asm.Ja.Label(done))
	g.mark(short)
	g.emit(asm.Mov.Imm(asm.R0, result))
	g.mark(done)
}

func (g *gen) unary(e *syntax.Unary) {
	g.long(e.X)
	switch e.Op {
	case "-":
		g.emit(asm.Neg.Imm(asm.R0, 0))
	case "~":
		g.emit(asm.Xor.Imm(asm.R0, -1))
	case "!":
		g.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.Mov.Imm(asm.R0, 0))
		done := g.newLabel("not")
		g.emit(asm.JNE.Imm(asm.R1, 0, done), asm.Mov.Imm(asm.R0, 1))
		g.mark(done)
	}
}

func (g *gen) ternary(e *syntax.Ternary) {
	other, done := g.newLabel("else"), g.newLabel("fi")
	g.unless(e.Cond, other)
	g.long(e.Then)
	g.emit(asm.Ja.Label(done))
	g.mark(other)
	g.long(e.Else)
	g.mark(done)
}

// assign compiles `x op= y` on longs; the value of the expression (the new
// value) is left in R0.
func (g *gen) assign(e *syntax.Assign) {
	if e.Op == "<<<" {
		g.statAdd(e)
		return
	}
	if e.LHS.Type() == syntax.TypeString {
		g.assignString(e)
		return
	}
	op := e.Op[:len(e.Op)-1]
	switch lhs := e.LHS.(type) {
	case *syntax.Ident:
		if lhs.Var.Kind == syntax.VarGlobal {
			g.updateGlobal(lhs, op, e.RHS, e.Pos, false)
			return
		}
		g.updateLocal(lhs.Var, op, e.RHS, e.Pos)
	case *syntax.Index:
		g.updateGlobal(lhs, op, e.RHS, e.Pos, false)
	default:
		if g.isVerdict(lhs) {
			g.updateVerdict(op, e.RHS, e.Pos)
			return
		}
		g.unassignable(e)
	}
}

// unassignable fails an assignment to what a kernel probe cannot write:
// a context variable ($fd, $return, a member of one) is the kernel's
// memory or registers, which stap writes in guru mode (-g) and a BPF
// program may not write at all.
func (g *gen) unassignable(e *syntax.Assign) {
	if _, ok := e.LHS.(*syntax.TargetVar); ok {
		g.fail(e, "cannot assign to %s: a BPF program cannot write the kernel's memory or registers (stap does it in guru mode, -g, with a kernel module)", syntax.ExprString(e.LHS))
		return
	}
	g.fail(e, "cannot assign to %s in a kernel probe", syntax.ExprString(e.LHS))
}

// updateLocal stores `local op rhs` (op "" for a plain store) and leaves
// the new value in R0.
func (g *gen) updateLocal(v *syntax.Var, op string, rhs syntax.Expr, at syntax.Pos) {
	loc := g.local(v)
	slot := int16(loc.off)
	g.long(rhs)
	if op != "" {
		g.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.LoadMem(asm.R0, loc.base(), slot, asm.DWord))
		g.arith(op, at)
	}
	g.emit(asm.StoreMem(loc.base(), slot, asm.R0, asm.DWord))
}

// one is the literal 1 that ++ and -- add or subtract.
var one = &syntax.NumberLit{Typed: syntax.Typed{T: syntax.TypeLong}, Value: 1}

func (g *gen) incDec(e *syntax.IncDec) {
	op := e.Op[:1]
	switch x := e.X.(type) {
	case *syntax.Ident:
		if x.Var.Kind == syntax.VarGlobal {
			g.updateGlobal(x, op, one, e.Pos, !e.Prefix)
			return
		}
		g.updateLocal(x.Var, op, one, e.Pos)
	case *syntax.Index:
		g.updateGlobal(x, op, one, e.Pos, !e.Prefix)
		return
	default:
		if !g.isVerdict(x) {
			g.fail(e, "cannot %s %s in a kernel probe", e.Op, syntax.ExprString(e.X))
			return
		}
		g.updateVerdict(op, one, e.Pos)
	}
	if !e.Prefix { // the old value
		g.emit(undo(op))
	}
}

// indexVar is the global an Index names.
func indexVar(x *syntax.Index) *syntax.Var {
	if id, ok := x.Array.(*syntax.Ident); ok {
		return id.Var
	}
	return nil
}

// undo turns the new value of x++ or x-- in R0 back into the old one.
func undo(op string) asm.Instruction {
	if op == "+" {
		return asm.Sub.Imm(asm.R0, 1)
	}
	return asm.Add.Imm(asm.R0, 1)
}
