package bpfgen

import (
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// What proves to the verifier that a loop ends.
//
// From Linux 6.9 a may_goto at the loop's head (stmt.go, loop): the
// verifier compares states from one pass to the next and stops when a
// pass adds nothing, whatever the bound. Older kernels (Debian 12's 6.1,
// which refuses the instruction as "unknown opcode e5") get a bounded
// loop instead (Linux 5.3): a counter in a stack slot of the loop's own,
// zeroed before the loop, counted at its head and compared there with
// the loop's bound (MAXACTION for a script's loop, the string's width for
// a byte loop), leaving for the same label as the may_goto. The verifier
// knows the counter, so it walks the loop once per iteration up to the
// bound, or to the end a condition it can decide sets: a script loop's
// own long locals are then left known (no forget), so that `for (i = 0;
// i < 10; i++)` ends its walk after ten passes. That walk is what limits
// loops on these kernels: a million instructions, 8192 pending branches.
// The target kernel's answer (target.MayGoto) is asked once per process, when a
// program first has a loop; on 6.9 and later the code is what it was.

// hasMayGoto tells whether the kernel knows may_goto.
func (m *Module) hasMayGoto() bool { return m.has(target.MayGoto) }

// loopHead marks top, the head of a loop, and emits what bounds the loop
// for the verifier: a may_goto to exit, or a counter that goes to exit
// past limit passes. Clobbers R1 and R2. The returned function, called
// after the loop's last instruction, releases the counter's slot (when
// it is the top of the stack).
func (g *gen) loopHead(top, exit string, limit int64) (end func()) {
	if g.m.hasMayGoto() {
		g.usesMayGoto()
		g.mark(top)
		g.emit(target.MayGotoJump(exit)) // the instruction may_goto
		return func() {}
	}
	count := g.pushSlot()
	g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.R10, count, asm.R1, asm.DWord))
	g.mark(top)
	g.emit(
		asm.LoadMem(asm.R1, asm.R10, count, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R10, count, asm.R1, asm.DWord),
	)
	g.jumpAbove(asm.R1, limit, exit)
	return func() {
		if g.stack == -int(count) { // nothing the loop pushed stays
			g.popStack(8)
		}
	}
}
