package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// try/catch in kernel probes. An error raised in a try block, by its own
// code or by a function it calls, jumps to the block's catch instead of
// the error tail: no error record is sent, the probe goes on with the
// catch block, as stap's does. Every error is a jump to the label
// errorSite returns, so inside a try block errorSite returns the catch's
// label; functions called there are inlined (a subprogram sends its own
// error record and returns 1), and what they raise reaches the same
// catch. MAXACTION exceeded is raised whatever the try blocks, as in the
// interpreter. Nothing is left to undo at the catch: print records are
// reserved only once their arguments are computed, and a loop left by an
// error has nothing of its own on the stack (stmt.go, loop). A catch
// variable would need the message of the error that jumped, which the
// elaborator refuses (sema.KernelRefusal).

// tryBlock is a try block being compiled.
type tryBlock struct {
	catch string // the label of its catch block
	used  bool   // something in the block may raise an error
}

// catchLabel returns the label an error with message msg jumps to in the
// innermost try block, "" outside one or for MAXACTION's.
func (g *gen) catchLabel(msg string) string {
	if len(g.tries) == 0 || msg == tapset.MsgMaxAction {
		return ""
	}
	t := g.tries[len(g.tries)-1]
	t.used = true
	return t.catch
}

// try compiles `try { Body } catch { Catch }`. A body that cannot raise an
// error keeps no catch block: no jump would reach it, and the verifier
// refuses unreachable code.
func (g *gen) try(s *syntax.TryStmt) {
	t := &tryBlock{catch: g.newLabel("catch")}
	g.tries = append(g.tries, t)
	g.stmt(s.Body)
	g.tries = g.tries[:len(g.tries)-1]
	if !t.used {
		return
	}
	done := g.newLabel("end_try")
	if !terminates(s.Body) {
		g.emit(asm.Ja.Label(done))
	}
	g.mark(t.catch)
	g.stmt(s.Catch)
	g.mark(done)
}
