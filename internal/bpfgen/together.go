package bpfgen

import (
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// Keeping a run's output together. stap prints what one run of a probe
// handler printed in one piece, at the handler's end; a probe's records
// here go to a ring all CPUs share, each print as it runs, so that two
// CPUs printing at once would interleave their lines (and split a line
// made of several printf). A program one of whose runs may send two
// records or more (mayRecordTwice) therefore marks each of its records
// with its run — the thread's id and CPU + 1, which no other run under
// way shares (a program runs on one CPU to its end; a sleepable one, which
// may let another run on its CPU, runs for its thread) — notes in RunMap,
// a per-CPU word, that the run sent one, and, at its end, when the word
// is set, clears it and sends a RecordRunEnd with the same mark. The
// reader (kernelside) holds a run's records until its RecordRunEnd comes
// and hands them on at once; what is held when the session stops is
// handed on then. A program that sends one record at most per run pays
// nothing: its records' mark is 0 and the reader hands them on at once.

// RunMap is the per-CPU word a run of a program that keeps its records
// together sets when it sent one.
const RunMap = "run_sent"

// mayRecordTwice tells whether one run of a program running the bodies
// of ps may send two records or more: two sites of prints, deferred
// calls (system, warn, log) or exit(), one of them in a loop, or one in a
// function called twice. (An error ends the run: its record needs no
// company.)
func (m *Module) mayRecordTwice(ps []*sema.Probe) bool {
	if m.records.funcs == nil {
		m.records.funcs = map[*syntax.Func]int{}
	}
	n := 0
	for _, p := range ps {
		n += m.records.sites(p.Body)
	}
	return n >= 2
}

// recordCounter counts the record sites a tree reaches, the functions it
// calls included (each counted once for the module, memoized: recursion
// has no BPF code).
type recordCounter struct {
	funcs map[*syntax.Func]int
}

// sites is the number of records one run of n may send, 2 standing for
// "two or more".
func (c *recordCounter) sites(n syntax.Node) int {
	total := 0
	syntax.Walk(n, func(x syntax.Node) bool {
		if total >= 2 {
			return false
		}
		switch x := x.(type) {
		case *syntax.WhileStmt, *syntax.ForStmt, *syntax.ForeachStmt:
			if c.loopSites(x) > 0 {
				total = 2
			}
			return false
		case *syntax.PrintCall:
			if x.Name[0] != 's' {
				total++
			}
		case *syntax.Call:
			total += c.callSites(x)
		}
		return true
	})
	return min(total, 2)
}

// loopSites counts the sites of a loop's parts.
func (c *recordCounter) loopSites(loop syntax.Node) int {
	n := 0
	syntax.Walk(loop, func(x syntax.Node) bool {
		if x == loop {
			return true
		}
		n += c.sites(x)
		return false
	})
	return n
}

// callSites counts a call's own record (a deferred builtin, exit()) or
// the sites of the script function it calls.
func (c *recordCounter) callSites(call *syntax.Call) int {
	if scriptFunc(call) {
		n, ok := c.funcs[call.Func]
		if !ok {
			c.funcs[call.Func] = 0 // while counting it
			n = c.sites(call.Func.Decl.Body)
			c.funcs[call.Func] = n
		}
		return n
	}
	if b := sema.Builtin(call); b != nil && (b.Kernel == tapset.Deferred || call.Name == "exit") {
		return 1
	}
	return 0
}

// storeRun fills the run mark of the record regRec points to: 0, or this
// run's when the program keeps its records together, noting then in
// RunMap that the run sent one. Clobbers R0-R5.
func (g *gen) storeRun() {
	if !g.together {
		g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(regRec, runOffset, asm.R1, asm.DWord))
		return
	}
	g.emitRunMark()
	sent := g.newLabel("run_noted")
	g.lookupRunWord(sent)
	g.emit(asm.Mov.Imm(asm.R1, 1), asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord))
	g.mark(sent)
}

// lookupRunWord leaves in R0 this CPU's RunMap word, jumping to miss when
// the lookup fails. Clobbers R0-R5.
func (g *gen) lookupRunWord(miss string) {
	key := g.pushSlot()
	g.emit(emitLookupIndex(RunMap, key, 0, miss)...)
	g.popStack(8)
}

// emitRunMark stores this run's mark in the record regRec points to.
func (g *gen) emitRunMark() {
	g.emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(regRec, runOffset, asm.R0, asm.Word),
		asm.FnGetSmpProcessorId.Call(),
		asm.Add.Imm(asm.R0, 1),
		asm.StoreMem(regRec, runOffset+4, asm.R0, asm.Word),
	)
	g.m.together = true
}

// endRun, at the program's end, sends RecordRunEnd when this run sent a
// record (RunMap), clearing the word. Clobbers R0-R5 and regRec.
func (g *gen) endRun() {
	if !g.together {
		return
	}
	done := g.newLabel("run_ended")
	g.lookupRunWord(done)
	g.emit(
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, done),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
	)
	// a full ring drops the mark uncounted: it is no output, and the
	// reader hands the run on with the next mark of its thread and CPU,
	// or at the end
	full := g.reserveOr(headerSize)
	g.emit(
		asm.JEq.Imm(asm.R0, 0, full),
		asm.Mov.Reg(regRec, asm.R0),
		asm.StoreImm(regRec, 0, int64(RecordRunEnd), asm.Word),
		asm.StoreImm(regRec, 4, 0, asm.Word),
	)
	g.emitRunMark()
	// submitted quietly: the run's records woke the reader if the ring
	// needed it, and a run-end alone can wait for its next poll
	g.emit(
		asm.Mov.Reg(asm.R1, regRec),
		asm.Mov.Imm(asm.R2, rbNoWakeup),
		asm.FnRingbufSubmit.Call(),
	)
	g.mark(full)
	g.mark(done)
}
