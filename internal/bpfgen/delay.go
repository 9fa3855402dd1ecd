package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// mdelay(ms) and udelay(us) in kernel probes: stap's busy delays (guru
// mode's). A BPF program cannot sleep, but it can spin: a loop that reads
// bpf_ktime_get_ns until the deadline passes, bounded for the verifier by
// a may_goto at its head (loops.go). The kernel ends such a loop once its
// budget is spent (on x86-64 since Linux 6.14 a time budget of about
// 250 ms: measured here, a 2 s spin ended after 253 ms), so a longer
// delay cannot be made: the loop's exit by budget raises stap-style
// error tapset.DelayTooLong rather than return early. Kernels without
// may_goto (before 6.9) bound loops by counting, which cannot spin on
// time: there a kernel probe refuses the call.

// delayUnits are the nanoseconds of a unit of mdelay's and udelay's.
var delayUnits = map[string]int32{"mdelay": 1_000_000, "udelay": 1_000}

// maxDelay bounds the delay in ns before its deadline is computed (an
// hour), so that the deadline cannot wrap.
const maxDelay = 3600_000_000_000

// delay compiles mdelay(ms) and udelay(us).
func (g *gen) delay(c *syntax.Call) {
	if !g.needs(c.Position(), target.MayGoto, c.Name+"() in a kernel probe") {
		return
	}
	g.long(c.Args[0])
	deadline := g.pushSlot()
	top, done, clamped := g.newLabel("delay"), g.newLabel("delay_done"), g.newLabel("delay_clamped")
	g.emit(
		asm.JSLE.Imm(asm.R0, 0, done),
		asm.Mul.Imm(asm.R0, delayUnits[c.Name]),
		asm.LoadImm(asm.R1, maxDelay, asm.DWord),
		asm.JLE.Reg(asm.R0, asm.R1, clamped),
		asm.Mov.Reg(asm.R0, asm.R1),
	)
	g.mark(clamped)
	g.emit(
		asm.StoreMem(asm.R10, deadline, asm.R0, asm.DWord),
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R1, asm.R10, deadline, asm.DWord),
		asm.Add.Reg(asm.R0, asm.R1),
		asm.StoreMem(asm.R10, deadline, asm.R0, asm.DWord),
	)
	end := g.loopHead(top, g.errorSite(tapset.DelayTooLong, c.Pos, false), 0)
	g.emit(
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R1, asm.R10, deadline, asm.DWord),
		asm.JLT.Reg(asm.R0, asm.R1, top),
	)
	end()
	g.mark(done)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.popStack(8)
}
