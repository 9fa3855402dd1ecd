package bpfgen

import (
	"fmt"
	"slices"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Registers with a fixed role for the whole program.
const (
	regCtx     = asm.R6 // the program's context
	regErr     = asm.R7 // error id on the way to the error tail; else free
	regRec     = asm.R8 // a reserved ring record, or a map value pointer
	regScratch = asm.R9 // the per-CPU scratch area
)

// Labels every program has.
const (
	labelExit  = "exit"  // the end of a run: timing (-t), then labelDone
	labelDone  = "done"  // return
	labelError = "error" // send the error record, then labelExit
)

// maxStack is the BPF stack size.
const maxStack = 512

// mayGotoStack is the stack the kernel takes for the budget of a
// program's may_goto instructions (its loops: stmt.go).
const mayGotoStack = 8

// gen compiles one probe.
type gen struct {
	m     *Module
	probe *sema.Probe // its Attach says where its arguments lie
	// probe is the one whose section is being compiled (CompileGroup),
	// and grouped tells whether there are several. exitLabel is where the
	// section's `next` goes.
	grouped   bool
	exitLabel string
	// together: a run of the program may send two records or more, which
	// carry its mark (together.go).
	together bool
	// points is the table of points of a set's program (sets.go), nil
	// in any other.
	points *pointTable

	insns   asm.Instructions
	pos     []syntax.Pos
	cur     syntax.Pos // position of the code being compiled
	pending []string   // labels for the next instruction
	nlabel  int

	stack    int // bytes of stack in use (slots below R10)
	maxStack int
	scratch  int // bytes of scratch in use
	maxScr   int
	// calleeFrames is the largest scratch frame of a function its code
	// calls (subprog.go), which starts at frameBase.
	calleeFrames int
	// snapshots are the per-CPU arrays of the program's foreach loops
	// (snapshot.go).
	snapshots []Map

	// compatSlot is the stack slot of what syscallCompat read, argsSlot
	// the six words of the call's arguments, in a program whose context
	// has compat arguments (0: none; syscalls.go)
	compatSlot, argsSlot int16
	// verdict is the point's, when the program's return value is a
	// verdict; verdictSlot is where it is kept (verdict.go).
	verdict     *attach.Verdict
	verdictSlot int16

	timeSlot    int16 // stack slot of the start time (-t), the map key after it
	timingIndex int

	inlined []frame // the script functions being inlined, innermost last (calls.go)
	// subs are the program's subprograms (subprog.go); subprog tells that
	// this gen compiles one (whose frame is inlined[ownFrame]), and
	// probeBound that its code uses what only its probe or its call site
	// has (then it is inlined instead).
	subs       *subprogs
	subprog    bool
	ownFrame   int
	probeBound bool
	// ownBase, in a script function taking offsets, is its subprogram's
	// label, by which its frame's offset in the scratch element is patched
	// in; unknownBase: this gen compiles a static subprogram (a callback,
	// an outlined subtree) of such a function (scalarcalls.go).
	ownBase     string
	unknownBase bool
	// disjointFrames are the bytes of the frames of the script functions
	// taking offsets, after the program's scratch (scalarcalls.go).
	disjointFrames int
	// inContextTask: the probe's context task expression is being
	// compiled, whose own context functions read the running thread.
	inContextTask bool

	locals map[*syntax.Var]value
	// sprinted are the locals sprintf renders into (sprintTargets).
	sprinted map[*syntax.Var]bool
	// longsInScratch: the probe has more long locals than maxStackLocals
	// (the merged entries of syscall.* have the union of every call's), so
	// they live in the scratch area, leaving the stack to temporaries.
	longsInScratch bool
	// actions is the scratch offset of the probe's count of loop actions,
	// when counted (stmt.go, loop).
	actions int
	counted bool
	mayGoto bool // the program has a may_goto (usesMayGoto)
	loops   []loop
	tries   []*tryBlock       // the try blocks being compiled, innermost last (try.go)
	errs    map[string]string // error label by site key, for sharing tails
	tails   []func()          // code emitted after the body (error tails)
	alias   map[string]string // a label that met another at one instruction → that one
	err     error
}

// value is where a variable lives: a stack slot for longs (or a scratch
// slot, when scratch is set), a scratch slot for strings.
type value struct {
	str     bool
	scratch bool // a long in the scratch area
	off     int  // stack offset (negative) or scratch offset
	width   int  // string slot width
	// sprintRoom marks a string local with a formatter's room
	// (sprintRoom(width) bytes): sprintf renders into it without a copy.
	sprintRoom bool
	// deferred marks a deferred string local's blob (deferred.go).
	deferred bool
}

// maxStackLocals is the most long locals a probe keeps on its stack.
const maxStackLocals = 24

// base is the register a long variable's offset is from.
func (v value) base() asm.Register {
	if v.scratch {
		return regScratch
	}
	return asm.R10
}

// loop holds the targets of break and continue.
type loop struct{ brk, cont string }

func newGen(m *Module, p *sema.Probe) *gen {
	return &gen{m: m, probe: p, locals: map[*syntax.Var]value{}, errs: map[string]string{}, alias: map[string]string{},
		subs: &subprogs{byFunc: map[*syntax.Func]*subprog{}, byKey: map[string]*subprog{}}}
}

// emit appends instructions at the current position, giving the first the
// pending labels. An instruction carries one label: when several meet, the
// others become aliases of it (program resolves them), not `goto +0`
// instructions to carry them, since the kernel removes every such no-op
// one at a time, moving all the code after it (bpf_remove_insns): seconds
// for the merged program of syscall.*.
func (g *gen) emit(ins ...asm.Instruction) {
	for _, in := range ins {
		if len(g.pending) > 0 {
			label := in.Symbol()
			if label == "" {
				label = g.pending[0]
				in = in.WithSymbol(label)
			}
			for _, l := range g.pending {
				if l != label {
					g.alias[l] = label
				}
			}
			g.pending = nil
		}
		g.raw(in)
	}
}

// resolveAliases makes the jumps to an alias jump to the label it stands
// for.
func (g *gen) resolveAliases() {
	for i, in := range g.insns {
		ref := in.Reference()
		if _, ok := g.alias[ref]; !ok {
			continue
		}
		for g.alias[ref] != "" {
			ref = g.alias[ref]
		}
		g.insns[i] = in.WithReference(ref)
	}
}

func (g *gen) raw(in asm.Instruction) {
	g.insns = append(g.insns, in)
	g.pos = append(g.pos, g.cur)
}

// newLabel returns a fresh label name.
func (g *gen) newLabel(what string) string {
	g.nlabel++
	return fmt.Sprintf("%s_%d", what, g.nlabel)
}

// mark places label at the next instruction.
func (g *gen) mark(label string) { g.pending = append(g.pending, label) }

// at sets the position of the code that follows and returns the previous.
func (g *gen) at(p syntax.Pos) syntax.Pos {
	old := g.cur
	if p.IsValid() {
		g.cur = p
	}
	return old
}

// fail records the first error; compilation goes on only to return it.
func (g *gen) fail(n syntax.Node, format string, args ...any) {
	if g.err == nil {
		g.err = &Error{Pos: n.Position(), Msg: fmt.Sprintf(format, args...)}
	}
}

// needs fails at pos, where the script needs f for what it does (use:
// "foreach in a kernel probe"), unless the target kernel offers f; it
// tells whether the kernel does.
func (g *gen) needs(pos syntax.Pos, f *target.Feature, use string) bool {
	err := g.m.cfg.Kernel.Check(f)
	if err != nil && g.err == nil {
		err = target.For(err, use)
		g.err = &Error{Pos: pos, Msg: err.Error(), Err: err}
	}
	return err == nil
}

// refuse fails at n, a construct the elaborator refuses in kernel probes,
// with the elaborator's message (sema.KernelRefusal), so that both passes
// say the same; what describes n should the elaborator have none.
func (g *gen) refuse(n syntax.Node, what string) {
	if msg := sema.KernelRefusal(n, false); msg != "" {
		g.fail(n, "%s", msg)
		return
	}
	g.fail(n, "%s cannot be compiled in a kernel probe", what)
}

// pushSlot reserves an 8-byte stack slot and returns its offset from R10.
func (g *gen) pushSlot() int16 { return g.pushStack(8) }

func (g *gen) pushStack(n int) int16 {
	g.stack += (n + 7) &^ 7
	if g.stack > maxStack && g.err == nil {
		g.err = &Error{Pos: g.cur, Msg: "the probe needs more than the 512 bytes of stack a BPF program has"}
	}
	g.maxStack = max(g.maxStack, g.stack)
	g.checkMayGotoStack()
	return int16(-g.stack)
}

// usesMayGoto notes that the program has a may_goto (a loop: stmt.go,
// strfuncs.go), for which the kernel takes 8 bytes of its stack.
func (g *gen) usesMayGoto() {
	g.mayGoto = true
	g.checkMayGotoStack()
}

// checkMayGotoStack refuses a program with a may_goto whose stack leaves
// the kernel no room for its budget.
func (g *gen) checkMayGotoStack() {
	if g.mayGoto && g.maxStack > maxStack-mayGotoStack && g.err == nil {
		g.err = &Error{Pos: g.cur, Msg: fmt.Sprintf("the probe needs more than %d bytes of stack: a BPF program has 512, "+
			"of which the kernel keeps %d for the iteration budget of its loops", maxStack-mayGotoStack, mayGotoStack)}
	}
}

func (g *gen) popStack(n int) { g.stack -= (n + 7) &^ 7 }

// allocScratch reserves n bytes (8-aligned) of the scratch area.
func (g *gen) allocScratch(n int) int {
	off := g.scratch
	g.scratch += (n + 7) &^ 7
	g.maxScr = max(g.maxScr, g.scratch)
	return off
}

// mark and release scratch temporaries in a stack discipline.
func (g *gen) scratchMark() int     { return g.scratch }
func (g *gen) scratchRelease(m int) { g.scratch = m }

// program assembles prologue, body and tails.
func (g *gen) program() (*Program, error) {
	body, bodyPos, pending := g.insns, g.pos, g.pending
	g.insns, g.pos, g.pending = nil, nil, nil
	g.cur = g.probe.Point.Position()
	perCPU := g.scratchPerCPU() && !g.subs.scalar // its subprograms look up a plain array's element
	g.prologue(perCPU)
	g.insns = append(g.insns, body...)
	g.pos = append(g.pos, bodyPos...)
	g.pending = pending // labels at the end of the body
	g.epilogue()
	g.resolveAliases()
	if len(g.subs.order) > 0 {
		g.insns[0] = btf.WithFuncMetadata(g.insns[0], mainType)
	}
	n := 0
	for _, sp := range g.subs.order {
		n += len(sp.insns)
	}
	g.insns, g.pos = slices.Grow(g.insns, n), slices.Grow(g.pos, n) // one copy of a large program, not one per growth
	for _, sp := range g.subs.order {
		g.insns = append(g.insns, sp.insns...)
		g.pos = append(g.pos, sp.pos...)
	}
	setFrameBase(g.insns, g.frameBase()) // the calls of main and its static subprograms
	if g.subs.scalar {
		g.layDisjointFrames()
	}
	insns, pos := farJumps(tidyJumps(g.insns, g.pos))
	prog := &Program{Instructions: insns, Pos: pos}
	settleSleep(prog, g.subs.userStrings, g.m.has(target.SleepableUprobes))
	m, err := g.scratchMap(perCPU)
	if err != nil {
		return nil, &Error{Pos: g.cur, Msg: err.Error()}
	}
	if m != nil {
		prog.Maps = []Map{{ScratchMap, m}}
	}
	if g.subs.tailCall {
		prog.Maps = append(prog.Maps, Map{TailMap, tailMapSpec()})
	}
	if usesTokenize(prog.Instructions) {
		prog.Maps = append(prog.Maps, g.tokenizeMap())
	}
	prog.Maps = append(prog.Maps, g.snapshots...)
	return prog, nil
}

// prologue: context, session state (after exit() a probe does nothing,
// as stap's handlers check the session state first; a direct load of the
// map value, no helper call), target filter, scratch area, zeroed locals.
func (g *gen) prologue(perCPU bool) {
	g.emit(
		asm.Mov.Reg(regCtx, asm.R1),
		asm.LoadMapValue(asm.R1, 0, 0).WithReference(StateMap),
		asm.LoadMem(asm.R1, asm.R1, 0, asm.DWord),
		asm.JNE.Imm(asm.R1, 0, labelDone),
	)
	if g.m.cfg.Target {
		g.emit(
			asm.FnGetCurrentPidTgid.Call(),
			asm.RSh.Imm(asm.R0, 32),
			asm.StoreMem(asm.R10, -8, asm.R0, asm.Word),
		)
		g.emit(emitLookup(TargetMap, -8, labelDone)...)
	}
	if g.scratchSize() > 0 {
		g.lookupScratch(perCPU)
	}
	g.emit(asm.Mov.Imm(asm.R0, 0))
	for off := 8; off <= g.maxStack; off += 8 {
		g.emit(asm.StoreMem(asm.R10, int16(-off), asm.R0, asm.DWord))
	}
	g.initVerdict()
	if g.argsSlot != 0 {
		g.fillSyscallArgs()
	}
	if g.grouped {
		return // each section zeroes its locals and times itself
	}
	g.zeroLocals()
	if g.m.cfg.Timing {
		g.startTiming()
	}
}

// zeroLocals gives the current probe's locals their initial values: an
// empty string, 0 — those some path may read before assigning them
// (readBeforeWritten). (The prologue zeroes the whole stack once; a section
// of a group zeroes its stack locals too, which an earlier section may
// have used.)
func (g *gen) zeroLocals() {
	g.emit(asm.Mov.Imm(asm.R0, 0))
	read := readBeforeWritten(g.probe.Body)
	for _, lv := range g.probe.Locals {
		if !read[lv] {
			continue
		}
		switch v, ok := g.locals[lv]; {
		case ok && v.str:
			g.emit(asm.StoreMem(regScratch, int16(v.off), asm.R0, asm.Byte))
		case ok && (v.scratch || v.deferred):
			g.emit(asm.StoreMem(regScratch, int16(v.off), asm.R0, asm.DWord))
		case ok && g.grouped:
			g.emit(asm.StoreMem(asm.R10, int16(v.off), asm.R0, asm.DWord))
		}
	}
	if g.counted {
		g.emit(asm.StoreMem(regScratch, int16(g.actions), asm.R0, asm.DWord))
	}
}

// epilogue: the exit and the error tail.
func (g *gen) epilogue() {
	g.mark(labelExit)
	g.endRun()
	if g.m.cfg.Timing && !g.grouped {
		g.stopTiming()
	}
	g.returnVerdict()
	g.emitTails()
}

// emitTails emits the code kept for after the body: the out-of-line
// parts, then the error tail if an error can be raised.
func (g *gen) emitTails() {
	for _, t := range g.tails {
		t()
	}
	if len(g.errs) > 0 {
		g.errorTail()
	}
}
