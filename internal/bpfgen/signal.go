package bpfgen

import (
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// raiseSignal compiles raise(signo), guru mode's: bpf_send_signal_thread sends
// the signal to the current thread, as stap's send_sig(signo, current)
// does. A refusal (an invalid signal, a kernel thread) raises stap's
// error with the kernel's error number, which the record carries negated
// (ErrorSite formats an unsigned number).
func (g *gen) raiseSignal(c *syntax.Call) {
	g.long(c.Args[0])
	g.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.FnSendSignalThread.Call())
	sent := g.newLabel("raised")
	g.emit(asm.JEq.Imm(asm.R0, 0, sent), asm.Mov.Reg(regRec, asm.R0), asm.Neg.Imm(regRec, 0))
	msg := strings.Replace(tapset.RaiseError, "%d", "-%d", 1)
	g.emit(asm.Ja.Label(g.errorSite(msg, c.Pos, true)))
	g.mark(sent)
	g.emit(asm.Mov.Imm(asm.R0, 0))
}
