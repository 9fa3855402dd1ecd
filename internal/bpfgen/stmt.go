package bpfgen

import (
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// section compiles probe p's code, timed in TimingMap element timing when
// grouped: its Skip test, its locals, its body.
func (g *gen) section(p *sema.Probe, timing int) error {
	g.probe, g.sprinted, g.timingIndex = p, nil, timing
	g.cur = p.Point.Position()
	mark, stack := g.scratchMark(), g.stack
	g.exitLabel = labelExit
	if g.grouped {
		g.exitLabel = g.newLabel("section_exit")
	}
	end := g.exitLabel + "_end"
	if p.Skip != nil {
		g.long(p.Skip)
		g.emit(asm.JNE.Imm(asm.R0, 0, end))
	}
	longs := 0
	for _, v := range p.Locals {
		if v.Type != syntax.TypeString {
			longs++
		}
	}
	g.longsInScratch = longs > maxStackLocals
	for _, v := range p.Locals { // before any temporary, so never freed
		g.local(v)
	}
	g.counted = hasLoop(p.Body)
	if g.counted {
		g.actions = g.allocScratch(8)
	}
	if g.grouped {
		g.zeroLocals()
		if g.m.cfg.Timing {
			g.startTiming()
		}
	}
	g.stmt(p.Body)
	if g.grouped {
		g.mark(g.exitLabel)
		if g.m.cfg.Timing {
			g.stopTiming()
		}
	}
	g.mark(end)
	g.scratchRelease(mark)
	g.stack = stack
	return g.err
}

func (g *gen) stmt(s syntax.Stmt) {
	if s == nil || g.err != nil {
		return
	}
	defer g.at(g.at(s.Position()))
	switch s := s.(type) {
	case *syntax.Block:
		for _, x := range s.Stmts {
			g.stmt(x)
		}
	case *syntax.NullStmt:
	case *syntax.ExprStmt:
		g.effect(s.X)
	case *syntax.IfStmt:
		if !g.callTable(s) && !g.layoutTable(s) && !g.outline(s) {
			g.ifStmt(s)
		}
	case *syntax.WhileStmt:
		g.loop(nil, s.Cond, nil, s.Body)
	case *syntax.ForStmt:
		g.loop(s.Init, s.Cond, s.Post, s.Body)
	case *syntax.ForeachStmt:
		g.foreach(s)
	case *syntax.NextStmt:
		g.next()
	case *syntax.ReturnStmt:
		g.ret(s)
	case *syntax.BreakStmt:
		g.jump(g.loops[len(g.loops)-1].brk)
	case *syntax.ContinueStmt:
		g.jump(g.loops[len(g.loops)-1].cont)
	case *syntax.DeleteStmt:
		g.delete(s)
	case *syntax.TryStmt:
		g.try(s)
	default:
		g.refuse(s, "this statement")
	}
}

// jump leaves a statement for label (next, break, continue, return). The
// jump is conditional on a register just set to 0: the verifier's
// control-flow check rejects any instruction no edge reaches, such as the
// jump over an else branch that follows a `next`, while its path analysis
// knows the jump is taken and never explores what follows. Clobbers R1.
// Once the program is whole, tidyJumps (deadcode.go) makes it a goto and
// drops what follows where no other edge reaches it.
func (g *gen) jump(label string) {
	g.emit(asm.Mov.Imm(asm.R1, 0), asm.JEq.Imm(asm.R1, 0, label))
}

// effect compiles an expression for its side effects.
func (g *gen) effect(e syntax.Expr) {
	if e.Type() == syntax.TypeString {
		mark := g.scratchMark()
		g.str(e)
		g.scratchRelease(mark)
		return
	}
	g.long(e)
}

func (g *gen) ifStmt(s *syntax.IfStmt) {
	other, done := g.newLabel("else"), g.newLabel("endif")
	g.unless(s.Cond, other)
	g.stmt(s.Then)
	if s.Else != nil && !terminates(s.Then) {
		g.emit(asm.Ja.Label(done))
	}
	g.mark(other)
	g.stmt(s.Else)
	g.mark(done)
}

// unless compiles condition cond to jump to label when it is false (branch).
func (g *gen) unless(cond syntax.Expr, label string) { g.branch(cond, false, label) }

// branch compiles condition cond to jump to label when its truth is
// jumpIf, and to fall through otherwise. A comparison of longs branches on
// its operands, without the 0 or 1 it would leave in R0 to be tested (the
// dispatch trees of the merged syscall.* programs are comparisons, and
// syscall.*.return's set of calls a chain of `||` over ranges, run on
// every event); && and || jump as soon as an operand decides, ! swaps
// the jump's sense; anything else is computed and tested.
func (g *gen) branch(cond syntax.Expr, jumpIf bool, label string) {
	defer g.at(g.at(cond.Position()))
	switch c := cond.(type) {
	case *syntax.Unary:
		if c.Op == "!" {
			g.branch(c.X, !jumpIf, label)
			return
		}
	case *syntax.Binary:
		if c.X.Type() == syntax.TypeString {
			break
		}
		if c.Op == "&&" || c.Op == "||" {
			g.logicalBranch(c, jumpIf, label)
			return
		}
		if j, ok := compareOps[c.Op]; ok {
			if !jumpIf {
				j = opposite[j]
			}
			if lit, ok := c.Y.(*syntax.NumberLit); ok && lit.Value == int64(int32(lit.Value)) {
				g.long(c.X)
				g.emit(j.Imm(asm.R0, int32(lit.Value), label))
				return
			}
			g.operands(c.X, c.Y)
			g.emit(j.Reg(asm.R0, asm.R1, label))
			return
		}
	}
	g.long(cond)
	if jumpIf {
		g.emit(asm.JNE.Imm(asm.R0, 0, label))
	} else {
		g.emit(asm.JEq.Imm(asm.R0, 0, label))
	}
}

// logicalBranch is branch for && and ||: an operand whose value decides
// (false for &&, true for ||) jumps where the whole does when that is
// the sense jumped on, else past the right operand.
func (g *gen) logicalBranch(c *syntax.Binary, jumpIf bool, label string) {
	decides := c.Op == "||"
	if jumpIf == decides {
		g.branch(c.X, jumpIf, label)
		g.branch(c.Y, jumpIf, label)
		return
	}
	past := g.newLabel("decided")
	g.branch(c.X, decides, past)
	g.branch(c.Y, jumpIf, label)
	g.mark(past)
}

// terminates tells whether s always leaves its block (next, return, break,
// continue), so that no jump need follow it: code no path reaches is
// refused by the verifier's first check or, once proved dead, removed by
// the kernel a stretch at a time, each removal moving all the code that
// follows (seconds for the merged syscall.* program, whose dispatch tree
// ends its branches with next).
func terminates(s syntax.Stmt) bool {
	switch s := s.(type) {
	case *syntax.NextStmt, *syntax.ReturnStmt, *syntax.BreakStmt, *syntax.ContinueStmt:
		return true
	case *syntax.Block:
		return len(s.Stmts) > 0 && terminates(s.Stmts[len(s.Stmts)-1])
	case *syntax.IfStmt:
		return s.Else != nil && terminates(s.Then) && terminates(s.Else)
	}
	return false
}

// loop compiles while and for loops. Every iteration charges one action
// to the probe's total in the scratch area; past MAXACTION the probe ends
// with stap's error.
//
// What bounds the loop for the verifier is a may_goto at its head (Linux
// 6.9+): the kernel gives it a hidden budget of iterations, and the
// verifier, instead of walking the loop once per iteration, compares the
// state at the may_goto with the state of the iteration before, its
// imprecise scalars widened, and stops when nothing new can happen: a loop
// whose body prints, formats and reads kernel memory is verified in a few
// walks, where a counter bounded by MAXACTION made it walk every one of a
// thousand iterations (the jumps left to explore passed the verifier's
// 8192). The total lives in map memory, so the verifier never knows its
// value: it adds nothing a state must match; and the long locals the loop
// changes are made unknown at its head (forget). A budget that runs out
// before MAXACTION (set above it with -D) raises the same error.
func (g *gen) loop(init, cond, post syntax.Expr, body syntax.Stmt) {
	if init != nil {
		g.effect(init)
	}
	g.loopWith(post, body, loopCarried(cond, body, post), func(brk, _ string) {
		if cond != nil {
			g.unless(cond, brk)
		}
	})
}

// loopWith compiles a loop whose iterations start with head (after the
// action is charged and the long locals carried are forgotten), which
// jumps to brk to leave the loop or to cont for the next iteration, and
// go on with body and post.
func (g *gen) loopWith(post syntax.Expr, body syntax.Stmt, carried []*syntax.Var, head func(brk, cont string)) {
	top, cont, brk := g.newLabel("loop"), g.newLabel("continue"), g.newLabel("break")
	maxAction := g.errorSite(tapset.MsgMaxAction, g.cur, false)
	end := g.loopHead(top, maxAction, g.m.cfg.Limits.MaxAction)
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(g.actions), asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(regScratch, int16(g.actions), asm.R1, asm.DWord),
	)
	g.jumpAbove(asm.R1, g.m.cfg.Limits.MaxAction, maxAction)
	if g.m.hasMayGoto() {
		g.forget(carried)
	}
	head(brk, cont)
	g.loops = append(g.loops, loop{brk: brk, cont: cont})
	g.stmt(body)
	g.loops = g.loops[:len(g.loops)-1]
	g.mark(cont)
	if post != nil {
		g.effect(post)
	}
	g.emit(asm.Ja.Label(top))
	g.mark(brk)
	end()
}

// forget makes the verifier lose what it knows of the long locals vars
// on the stack: each goes through a cell of map memory, whose loads it
// cannot know. A loop variable it knew, compared with a literal
// (`for (i = 0; i < 100; i++)`), would decide the comparison and become
// precise, making every iteration a state of its own that the may_goto
// cannot fold: the verifier would walk them all, each branch of the body
// doubling the walk (it prunes no state of a loop it has not finished).
func (g *gen) forget(vars []*syntax.Var) {
	var slots []value
	for _, v := range vars {
		if slot := g.local(v); !slot.scratch { // scratch ones are loaded from map memory already
			slots = append(slots, slot)
		}
	}
	if len(slots) == 0 {
		return
	}
	mark := g.scratchMark() // after g.local, which may allocate a local's own cell
	cell := g.allocScratch(8)
	for _, slot := range slots {
		g.emit(
			asm.LoadMem(asm.R1, asm.R10, int16(slot.off), asm.DWord),
			asm.StoreMem(regScratch, int16(cell), asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, regScratch, int16(cell), asm.DWord),
			asm.StoreMem(asm.R10, int16(slot.off), asm.R1, asm.DWord),
		)
	}
	g.scratchRelease(mark)
}

// loopCarried returns the long locals and parameters a loop's condition,
// body or post expression assigns, in order of appearance: the values that
// change from one iteration to the next (what a called function assigns
// is its own).
func loopCarried(nodes ...syntax.Node) []*syntax.Var {
	var vars []*syntax.Var
	seen := map[*syntax.Var]bool{}
	for _, n := range nodes {
		if n == nil {
			continue
		}
		syntax.Walk(n, func(x syntax.Node) bool {
			var target syntax.Expr
			switch x := x.(type) {
			case *syntax.Assign:
				target = x.LHS
			case *syntax.IncDec:
				target = x.X
			}
			if id, ok := target.(*syntax.Ident); ok && id.Var != nil && id.Var.Kind != syntax.VarGlobal &&
				id.Var.Type == syntax.TypeLong && !seen[id.Var] {
				seen[id.Var] = true
				vars = append(vars, id.Var)
			}
			return true
		})
	}
	return vars
}

// jumpAbove jumps to label when the unsigned long in r is above limit,
// which may not fit an immediate. Clobbers R2 when it does not.
func (g *gen) jumpAbove(r asm.Register, limit int64, label string) {
	if limit == int64(int32(limit)) {
		g.emit(asm.JGT.Imm(r, int32(limit), label))
		return
	}
	g.emit(asm.LoadImm(asm.R2, limit, asm.DWord), asm.JGT.Reg(r, asm.R2, label))
}

// hasLoop tells whether a body, or a script function it calls (which is
// inlined), contains a loop.
func hasLoop(body syntax.Node) bool {
	found := false
	seen := map[*syntax.Func]bool{}
	var visit func(n syntax.Node) bool
	visit = func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.WhileStmt, *syntax.ForStmt, *syntax.ForeachStmt:
			found = true
		case *syntax.Call:
			if scriptFunc(n) && !seen[n.Func] {
				seen[n.Func] = true
				syntax.Walk(n.Func.Decl.Body, visit)
			}
		}
		return !found
	}
	syntax.Walk(body, visit)
	return found
}
