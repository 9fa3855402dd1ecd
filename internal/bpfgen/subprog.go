package bpfgen

import (
	"fmt"
	"slices"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Script functions as BPF subprograms.
//
// The verifier walks an inlined function once per call site and, inside a
// loop, once per iteration: the merged program of syscall.* inlines the
// tapset's flag formatters into 135 argument layouts, and strace_buffer's
// 32-byte loop inlined four sprintf calls 32 times. A global BPF function
// (BTF linkage "global") is verified once, on its own, whatever calls it:
// the caller's walk only checks the arguments against its BTF prototype.
//
// A script function called from a kernel probe becomes one when it takes
// at most three longs, returns a long or a string, has no loop (in its body
// or a function it calls: the verifier walks every iteration of a loop,
// and one bounded by an argument, a constant where the call was inlined,
// is bounded by MAXACTION alone in a subprogram), and compiles without
// what only its probe or its call site has (the context, the probe's
// name, the call's position for __error_at_call). Its prototype
// is int f(void *ret, void *scratch, long, ...): ret points at the
// caller's result (an 8-byte stack slot, or a string slot of the caller's
// scratch area), scratch at its scratch frame, the longs are the
// arguments. It has its own stack frame (long locals, loop action
// counter) and its own scratch frame (string locals, sprintf rooms), so
// nothing it uses overlaps its caller; a function calls itself only
// through recursion, which is refused.
//
// Scratch frames are laid out in the program's one scratch element as
// stack frames are: a caller passes the bytes past its own scratch (the
// largest offset its code uses, known when its code is compiled: the
// call's `add` is patched then, frameBase), and a function's frame is its
// own scratch and then the largest frame of the functions it calls. No
// function looks its frame up: the kernel inlines every array lookup by
// patching the whole program, which cost the merged program of syscall.*
// a quarter of its verification with a lookup in each of 60 functions. It
// returns 0, or 1 when it raised an error (the error record is sent):
// the caller then ends the probe as for its own errors. Inside a try block
// (try.go) a call is inlined, so that its errors reach the catch. One that
// compiles to fewer than minSubprogInsns instructions is inlined instead:
// the call would cost more than it saves.
//
// minSubprogInsns is the smallest body worth a subprogram.
const minSubprogInsns = 64

// subprogArgs is the most long arguments a subprogram takes (R3-R5).
const subprogArgs = 3

// subprog is a script function compiled for one program.
type subprog struct {
	label  string // its first instruction's symbol, the call target
	inline bool   // inlined instead
	insns  asm.Instructions
	pos    []syntax.Pos
	frame  int // bytes of its scratch frame, its callees' included
	// disjoint: a script function taking offsets, whose frame is its own
	// (scalarcalls.go)
	disjoint bool
}

// subprogs are a program's compiled functions, shared by the gens of the
// program and of its subprograms.
type subprogs struct {
	byFunc map[*syntax.Func]*subprog
	byKey  map[string]*subprog // sprintf's directives
	order  []*subprog
	// userStrings: a uprobe's code, the probe's or a function's, reads
	// user strings (sleepable.go)
	userStrings bool
	// tailCall: the program makes a tail call (TailMap)
	tailCall bool
	// scalar: the program calls a subprogram taking offsets
	// (scalarcalls.go)
	scalar bool
}

// label is the symbol of f's subprogram: fn_NAME, or fn_NAME_ARITY when
// an overload of NAME (another arity) took fn_NAME first.
func (s *subprogs) label(f *syntax.Func) string {
	label := "fn_" + f.Name
	for _, sp := range s.byFunc {
		if sp.label == label {
			return fmt.Sprintf("%s_%d", label, len(f.Params))
		}
	}
	return label
}

// asSubprog returns the subprogram of the function c calls, compiling it
// on first use, or nil when the call is to be inlined.
func (g *gen) asSubprog(c *syntax.Call) *subprog {
	f := c.Func
	if len(g.tries) > 0 || !subprogShape(f) || hasLoop(f.Decl.Body) || g.recursion(f) != "" || g.unknownBase && g.m.scalarCalls() {
		return nil
	}
	if sp, ok := g.subs.byFunc[f]; ok {
		return sp.callable()
	}
	sp := &subprog{label: g.subs.label(f)}
	g.subs.byFunc[f] = sp
	callee := g.compileSubprog(c, sp)
	if callee.err != nil || callee.probeBound || len(callee.insns) < minSubprogInsns {
		sp.inline = true
		return nil
	}
	g.subs.order = append(g.subs.order, sp)
	return sp
}

func (sp *subprog) callable() *subprog {
	if sp.inline {
		return nil
	}
	return sp
}

// subprogShape tells whether f's signature fits a subprogram.
func subprogShape(f *syntax.Func) bool {
	if len(f.Params) > subprogArgs {
		return false
	}
	return f.Result == syntax.TypeLong || f.Result == syntax.TypeString
}

// compileSubprog compiles the function c calls as sp, in a gen of its own
// whose chain of frames continues the caller's (for the recursion test).
func (g *gen) compileSubprog(c *syntax.Call, sp *subprog) *gen {
	f := c.Func
	s := newGen(g.m, g.probe)
	s.subs, s.subprog, s.exitLabel, s.together = g.subs, true, labelExit, g.together
	s.cur = f.Decl.Position()
	retSlot := s.pushSlot()
	var keySlot int16
	if s.m.scalarCalls() {
		s.ownBase, keySlot, sp.disjoint = sp.label, s.pushSlot(), true
	}
	slots := s.frameSlots(f)
	s.insns, s.pos = nil, nil         // the prologue zeroes the stack; params arrive in theirs
	params := map[*syntax.Var]int16{} // a string parameter's incoming pointer
	for _, p := range f.Params {
		if p.Type == syntax.TypeString {
			params[p] = s.pushSlot()
		}
	}
	s.emit(asm.Mov.Imm(asm.R1, 0))
	var cleared []int // in offset order, so that -p3 prints the same program every run
	for v, slot := range slots {
		if _, isParam := params[v]; slot.str && !isParam {
			cleared = append(cleared, slot.off)
		}
	}
	slices.Sort(cleared)
	for _, off := range cleared {
		s.emit(asm.StoreMem(regScratch, int16(off), asm.R1, asm.Byte))
	}
	var result value
	if f.Result == syntax.TypeString {
		result = s.strSlot(s.m.maxStr)
		s.emit(asm.StoreImm(regScratch, int16(result.off), 0, asm.Byte))
	}
	s.bind(slots)
	fr := frame{call: c, ret: "return", result: result, tail: tailReturn(f.Decl.Body)}
	if result.str {
		fr.retSlot, fr.returned = retSlot, s.newLabel("returned")
	}
	s.inlined, s.ownFrame = append(g.inlined[:len(g.inlined):len(g.inlined)], fr), len(g.inlined)
	s.stmt(f.Decl.Body)
	if fr.tail == nil {
		s.emit(asm.Mov.Imm(asm.R0, 0))
	}
	s.mark(fr.ret)
	s.subprogReturn(retSlot, result, fr.returned)
	if s.err != nil {
		return s
	}
	s.assembleSubprog(sp, f, retSlot, keySlot, slots, params)
	return s
}

// subprogReturn stores the result through the ret pointer (when not NULL)
// and returns 0; done, when not empty, is the label past the store.
func (s *gen) subprogReturn(retSlot int16, result value, done string) {
	if done == "" {
		done = s.newLabel("returned")
	}
	s.emit(
		asm.LoadMem(asm.R1, asm.R10, retSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, done),
	)
	if result.str {
		s.emit(asm.Mov.Imm(asm.R2, int32(result.width)))
		s.scratchAddr(result.off)()
		s.emit(asm.FnProbeReadKernelStr.Call())
	} else {
		s.emit(asm.StoreMem(asm.R1, 0, asm.R0, asm.DWord))
	}
	s.mark(done)
	s.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
}

// subprogRet compiles a string subprogram's `return x`. A literal, or a
// literal branch of a ternary (the tapset's tables of names), is stored
// through the ret pointer itself: the copy of the result slot at the end
// costs a bpf_probe_read_kernel_str call on every return. Other values go
// to the result slot, copied at the end.
func (s *gen) subprogRet(fr frame, e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.StringLit:
		if (len(e.Value)+8)&^7 <= s.m.maxStr { // the bytes storeLitAt writes
			s.emit(asm.LoadMem(asm.R2, asm.R10, fr.retSlot, asm.DWord), asm.JEq.Imm(asm.R2, 0, fr.returned))
			s.storeLitAt(asm.R2, 0, []byte(e.Value))
			s.jump(fr.returned)
			return
		}
	case *syntax.Ternary:
		other := s.newLabel("else")
		s.unless(e.Cond, other)
		s.subprogRet(fr, e.Then)
		s.mark(other)
		s.subprogRet(fr, e.Else)
		return
	}
	s.strInto(fr.result, e)
	s.jump(fr.ret)
}

// assembleSubprog puts the prologue before the body (zeroed stack, the
// arguments spilled to their slots, the scratch frame in R9; offsets made
// pointers first where they are given instead, through keySlot); an error
// ends it with 1.
func (s *gen) assembleSubprog(sp *subprog, f *syntax.Func, retSlot, keySlot int16, slots map[*syntax.Var]value, params map[*syntax.Var]int16) {
	s.assemble(sp, nil, func() {
		s.emit(asm.Mov.Imm(asm.R0, 0))
		for off := 8; off <= s.maxStack; off += 8 {
			s.emit(asm.StoreMem(asm.R10, int16(-off), asm.R0, asm.DWord))
		}
		s.emit(asm.StoreMem(asm.R10, retSlot, asm.R1, asm.DWord))
		for i, p := range f.Params {
			at, isStr := params[p]
			if !isStr {
				at = int16(slots[p].off)
			}
			s.emit(asm.StoreMem(asm.R10, at, asm.R3+asm.Register(i), asm.DWord))
		}
		if s.ownBase != "" {
			s.offsetsToPointers(f, retSlot, keySlot, params)
		}
		// never NULL: the check is for the verifier
		s.emit(asm.JEq.Imm(asm.R2, 0, labelExit), asm.Mov.Reg(regScratch, asm.R2))
		for _, p := range f.Params { // a string is copied in, up to its NUL
			if at, isStr := params[p]; isStr {
				s.emit(asm.Mov.Reg(asm.R1, regScratch), asm.Add.Imm(asm.R1, int32(slots[p].off)),
					asm.Mov.Imm(asm.R2, int32(slots[p].width)), asm.LoadMem(asm.R3, asm.R10, at, asm.DWord),
					asm.FnProbeReadKernelStr.Call())
			}
		}
	})
	sp.frame = max(s.scratchSize(), 8)
	setFrameBase(sp.insns, s.frameBase())
	sp.insns[0] = btf.WithFuncMetadata(sp.insns[0], subprogType(sp.label, f, s.m.maxStr, sp.frame, s.ownBase != ""))
}

// offsetsToPointers, in the prologue of a script function given offsets,
// looks the scratch element up and makes pointers of the result's and the
// string arguments' offsets (in their slots), and of its frame, in R2.
func (s *gen) offsetsToPointers(f *syntax.Func, retSlot, keySlot int16, params map[*syntax.Var]int16) {
	s.lookupElement(keySlot)
	ret := 8
	if f.Result == syntax.TypeString {
		ret = s.m.maxStr
	}
	s.offsetPointer(retSlot, ret)
	for _, p := range f.Params {
		if at, isStr := params[p]; isStr {
			s.offsetPointer(at, 1) // the source of a string copy
		}
	}
	s.emit(asm.Mov.Reg(asm.R2, asm.R0))
	s.emit(baseAdd(asm.R2, s.ownBase))
}

// assemble puts prologue before the body compiled in s, then the exit
// (return 1: an error ended it, or a lookup failed) when something jumps
// to it, and the tails. Every label is prefixed with the subprogram's;
// the first instruction carries its symbol and BTF prototype fn (when
// not nil).
func (s *gen) assemble(sp *subprog, fn *btf.Func, prologue func()) {
	body, bodyPos, pending := s.insns, s.pos, s.pending
	s.insns, s.pos, s.pending = nil, nil, nil
	prologue()
	s.insns = append(s.insns, body...)
	s.pos = append(s.pos, bodyPos...)
	s.pending = pending
	if len(s.errs) > 0 || s.jumpsTo(labelExit, labelDone) {
		s.mark(labelExit)
		s.mark(labelDone)
		s.emit(asm.Mov.Imm(asm.R0, 1), asm.Return())
	}
	s.emitTails()
	s.resolveAliases()
	prefix := sp.label + "."
	for i, in := range s.insns {
		if sym := in.Symbol(); sym != "" {
			s.insns[i] = in.WithSymbol(prefix + sym)
		}
		if isJump(in) && in.Reference() != "" {
			s.insns[i] = s.insns[i].WithReference(prefix + in.Reference())
		}
	}
	s.insns[0] = s.insns[0].WithSymbol(sp.label)
	if fn != nil {
		s.insns[0] = btf.WithFuncMetadata(s.insns[0], fn)
	}
	sp.insns, sp.pos = s.insns, s.pos
}

// staticSubprog compiles sp, a static subprogram of g's program (a
// callback, a formatter's conversion, an outlined subtree), with BTF
// prototype fn: body compiles its code with c, a gen of a stack frame of
// its own that shares the program's subprograms, and returns its prologue
// (run before the code, once the frame's size is known); sp is then
// appended to the program's subprograms and c's error passed on to g.
// It returns c.
func (g *gen) staticSubprog(sp *subprog, fn *btf.Func, body func(c *gen) (prologue func())) *gen {
	c := newGen(g.m, g.probe)
	c.subs, c.subprog, c.cur, c.together = g.subs, true, g.cur, g.together
	c.unknownBase = g.unknownBase || g.ownBase != ""
	c.assemble(sp, fn, body(c))
	g.subs.order = append(g.subs.order, sp)
	g.calleeFrames = max(g.calleeFrames, c.calleeFrames)
	if c.err != nil && g.err == nil {
		g.err = c.err
	}
	return c
}

// jumpsTo tells whether an instruction compiled so far jumps to one of
// labels.
func (s *gen) jumpsTo(labels ...string) bool {
	for _, in := range s.insns {
		if isJump(in) && slices.Contains(labels, in.Reference()) {
			return true
		}
	}
	return false
}

// isJump tells whether in jumps within its function, conditionally or
// not (not a call of another function, a helper or a kfunc; not an exit).
func isJump(in asm.Instruction) bool {
	op := in.OpCode.JumpOp()
	return in.OpCode.Class().IsJump() && op != asm.Call && op != asm.Exit
}

// callSubprog compiles the call c of sp: the long arguments evaluated in
// order to scratch cells (a pointer the verifier tracks, $regs say, passes
// as the scalar a global function takes only once stored in a map), then
// R1 = the result's address, R2 = the callee's scratch frame, past the
// caller's (frameBase), R3.. = the arguments; a nonzero return ends the
// probe (the error is sent). A long
// result is left in R0, a string result in dst (when a slot) or a new
// slot.
func (g *gen) callSubprog(c *syntax.Call, sp *subprog, dst value) value {
	result := dst
	if c.Func.Result == syntax.TypeString && !dst.str {
		result = g.strSlot(g.m.maxStr)
	}
	stack, mark := g.stack, g.scratchMark()
	var args []value
	for _, a := range c.Args {
		if a.Type() == syntax.TypeString {
			v := g.str(a)
			g.maxScr = max(g.maxScr, v.off+g.m.maxStr) // the callee's view: maxStr bytes
			args = append(args, v)
			continue
		}
		g.long(a)
		cell := g.allocScratch(8)
		g.emit(asm.StoreMem(regScratch, int16(cell), asm.R0, asm.DWord))
		args = append(args, value{off: cell})
	}
	scalar := g.m.scalarCalls()
	g.subs.scalar = g.subs.scalar || scalar
	// address leaves in r where the callee finds scratch offset off: a
	// pointer, or the offset in the element (scalarcalls.go)
	address := func(r asm.Register, off int) {
		if scalar {
			g.scratchOffset(r, off)
			return
		}
		g.emit(asm.Mov.Reg(r, regScratch), asm.Add.Imm(r, int32(off)))
	}
	switch {
	case result.str:
		address(asm.R1, result.off)
	case scalar:
		result = value{scratch: true, off: g.allocScratch(8)}
		address(asm.R1, result.off)
	default:
		result = value{off: int(g.pushSlot())}
		g.emit(asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, int32(result.off)))
	}
	if scalar { // the callee's frame is its own (scalarcalls.go)
		g.emit(asm.Mov.Imm(asm.R2, 0))
	} else {
		g.emit(asm.Mov.Reg(asm.R2, regScratch), frameAdd())
		g.calleeFrames = max(g.calleeFrames, sp.frame)
	}
	for i, a := range args {
		r := asm.R3 + asm.Register(i)
		if a.str {
			address(r, a.off)
			continue
		}
		// reloaded from the map: a scalar, even if the value was a pointer
		g.emit(asm.LoadMem(r, regScratch, int16(a.off), asm.DWord))
	}
	g.emit(asm.Call.Label(sp.label), asm.JNE.Imm(asm.R0, 0, labelExit))
	if !result.str {
		g.emit(asm.LoadMem(asm.R0, result.base(), int16(result.off), asm.DWord))
		result = value{}
	}
	g.stack = stack
	g.scratchRelease(mark)
	return result
}

// frameBaseKey marks the `R2 += base` of a call (frameAdd), whose base is
// the caller's scratch size, known once the caller is compiled.
type frameBaseKey struct{}

// frameAdd is the `R2 += base` that makes the caller's scratch address in
// R2 the callee's frame, its base set later (setFrameBase).
func frameAdd() asm.Instruction {
	in := asm.Add.Imm(asm.R2, 0)
	in.Metadata.Set(frameBaseKey{}, true)
	return in
}

// setFrameBase gives the calls' frameAdds in insns that are not set yet
// base as their constant.
func setFrameBase(insns asm.Instructions, base int) {
	for i, in := range insns {
		if in.Dst == asm.R2 && in.OpCode == asm.Add.Op(asm.ImmSource) && in.Metadata.Get(frameBaseKey{}) != nil {
			in.Constant = int64(base)
			in.Metadata.Set(frameBaseKey{}, nil)
			insns[i] = in
		}
	}
}

// frameBase is where the frames of the functions g's code calls start in
// g's scratch: past the scratch g uses.
func (g *gen) frameBase() int { return (g.maxScr + 7) &^ 7 }

// subprogType is the BTF prototype of a subprogram: int NAME(void *ret,
// void *scratch, long, ...), ret a pointer to its result's bytes, scratch
// to its frame of frame bytes; longs all (offsets for the pointers) when
// scalar (scalarcalls.go).
func subprogType(name string, f *syntax.Func, maxStr, frame int, scalar bool) *btf.Func {
	size := 8
	if f.Result == syntax.TypeString {
		size = maxStr
	}
	pointer := func(n int) btf.Type {
		if scalar {
			return longType
		}
		return bytesPointer(n)
	}
	params := []btf.FuncParam{{Name: "ret", Type: pointer(size)}, {Name: "scratch", Type: pointer(max(frame, 8))}}
	for i, p := range f.Params {
		var t btf.Type = longType
		if p.Type == syntax.TypeString {
			t = pointer(maxStr)
		}
		params = append(params, btf.FuncParam{Name: fmt.Sprintf("a%d", i), Type: t})
	}
	return &btf.Func{Name: name, Linkage: btf.GlobalFunc, Type: &btf.FuncProto{Return: intType, Params: params}}
}

var (
	intType  = &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	longType = &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}
)

// mainType is the BTF prototype of a program's main function, which the
// kernel wants first among the functions of a program that has several.
var mainType = &btf.Func{Name: "probe", Linkage: btf.GlobalFunc, Type: &btf.FuncProto{
	Return: intType, Params: []btf.FuncParam{{Name: "ctx", Type: &btf.Pointer{Target: &btf.Void{}}}}}}

// ownProbe is the probe being compiled, for code that depends on which
// probe it is in: a function using it is inlined.
func (g *gen) ownProbe() *sema.Probe {
	g.probeBound = true
	return g.probe
}

// A formatter's integer conversions are subprograms too, one for each
// directive shape (verb, flags, static width and precision) in a program:
// int f(void *out, void *work, long v), out the formatter's output (2L+8
// bytes), work its stage, digit table and cells (contiguous), v the value.
// The merged entry of syscall.* formats a few hundred numbers in a dozen
// shapes.

// workSize is the bytes of a formatter's stage, table and cells.
const workSize = 2*digitRoom + len(digitTable) + cellsSize

// numberCall compiles an integer conversion as a call of its shape's
// subprogram (inline when the formatter's work area is not contiguous).
func (s *sprint) numberCall(d format.Directive, v longAt) {
	g := s.g
	scalar := g.m.scalarCalls()
	if s.table != s.stage+2*digitRoom || s.cells != s.table+len(digitTable) ||
		scalar && (g.unknownBase || s.outReg != regScratch || s.work != regScratch) {
		s.number(d, v)
		return
	}
	sp := s.numberSubprog(d)
	g.emit(v.load(asm.R0))
	s.store(cellNum, asm.R0) // reloaded from the map: a scalar, even if it was a pointer
	s.load(asm.R3, cellNum)
	if scalar {
		g.subs.scalar = true
		g.scratchOffset(asm.R1, s.out)
		g.scratchOffset(asm.R2, s.stage)
	} else {
		g.emit(asm.Mov.Reg(asm.R1, s.outReg), asm.Add.Imm(asm.R1, int32(s.out)),
			asm.Mov.Reg(asm.R2, s.work), asm.Add.Imm(asm.R2, int32(s.stage)))
	}
	g.emit(asm.Call.Label(sp.label))
}

// numberSubprog returns the subprogram of d's shape, compiled on first
// use: R8 = out, R9 = work (returning when either is NULL), v spilled to
// a stack slot, then the directive's code.
func (s *sprint) numberSubprog(d format.Directive) *subprog {
	g := s.g
	key := fmt.Sprintf("%c_%d_%t_%t_%t_%d_%d", d.Verb, d.Flags, s.hasWidth, s.hasPrec, s.isLeft, s.widthMost, s.precMost)
	if sp, ok := g.subs.byKey[key]; ok {
		return sp
	}
	sp := &subprog{label: fmt.Sprintf("fmt_%d", len(g.subs.byKey))}
	g.subs.byKey[key] = sp
	scalar := g.m.scalarCalls()
	g.staticSubprog(sp, numberType(sp.label, sprintRoom(s.limit), scalar), func(c *gen) func() {
		slot := c.pushSlot()
		var out, work, key int16
		if scalar {
			out, work, key = c.pushSlot(), c.pushSlot(), c.pushSlot()
		}
		cs := *s
		cs.g, cs.outReg, cs.work = c, regRec, regScratch
		cs.out, cs.stage, cs.table, cs.cells = 0, 0, 2*digitRoom, 2*digitRoom+len(digitTable)
		cs.number(d, longAt{asm.R10, slot})
		c.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
		return func() {
			done := c.newLabel("null")
			if scalar { // offsets: made pointers into the element (scalarcalls.go)
				c.emit(asm.StoreMem(asm.R10, out, asm.R1, asm.DWord), asm.StoreMem(asm.R10, work, asm.R2, asm.DWord),
					asm.StoreMem(asm.R10, slot, asm.R3, asm.DWord))
				c.lookupElement(key)
				c.offsetPointer(out, sprintRoom(s.limit))
				c.offsetPointer(work, workSize)
				c.emit(asm.LoadMem(asm.R1, asm.R10, out, asm.DWord), asm.LoadMem(asm.R2, asm.R10, work, asm.DWord),
					asm.LoadMem(asm.R3, asm.R10, slot, asm.DWord))
			}
			c.emit(
				asm.JEq.Imm(asm.R1, 0, done),
				asm.JEq.Imm(asm.R2, 0, done),
				asm.Mov.Reg(regRec, asm.R1),
				asm.Mov.Reg(regScratch, asm.R2),
				asm.StoreMem(asm.R10, slot, asm.R3, asm.DWord),
			)
			c.tails = append(c.tails, func() {
				c.mark(done)
				c.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
			})
		}
	})
	return sp
}

// bytesPointer is the BTF type of a pointer to n bytes.
func bytesPointer(n int) btf.Type {
	return &btf.Pointer{Target: &btf.Array{Index: &btf.Int{Name: "unsigned int", Size: 4},
		Type: &btf.Int{Name: "unsigned char", Size: 1}, Nelems: uint32(n)}}
}

// numberType is the BTF prototype of a directive's subprogram: longs all
// (offsets for out and work) when scalar.
func numberType(name string, outSize int, scalar bool) *btf.Func {
	out, work := bytesPointer(outSize), bytesPointer(workSize)
	if scalar {
		out, work = longType, longType
	}
	return &btf.Func{Name: name, Linkage: btf.GlobalFunc, Type: &btf.FuncProto{Return: intType, Params: []btf.FuncParam{
		{Name: "out", Type: out}, {Name: "work", Type: work}, {Name: "v", Type: longType}}}}
}
