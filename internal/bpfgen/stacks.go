package bpfgen

import (
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Stacks and registers. backtrace(), sprint_backtrace(), ubacktrace() and
// sprint_ubacktrace() take the stack with bpf_get_stackid into StackMap,
// which keeps each distinct stack once under an id, and return a stack
// token: a short string that names the stack and the form the script asked
// for. A user stack is taken twice: as addresses into StackMap and as
// (build id, file offset) frames into BuildIDStackMap (a stack map made
// with BPF_F_STACK_BUILD_ID), whose frames name their code without the
// process, so that user space can symbolize them after it exited; its
// token names both stacks. A token is an ordinary string in the kernel, so a stack can be a map
// key (`s[backtrace()] <<< 1` counts samples per stack in the kernel) or a
// printf argument at the cost of a few bytes; user space replaces it with
// the stack's text (ParseStackToken, then package kernelside) wherever it
// reads a string the kernel made — records, keys, values — so a stack is
// symbolized once however often it was counted. A token is
//
//	ESC, the form, the id + 1 in four 6-bit digits each offset by '@',
//	[a user stack: the build-id stack's id + 1, the same way,] NUL
//
// (no NUL inside; id + 1 is 0 when the kernel could not take the stack).
// addr() and user_mode() read the registers of a perf event's context
// (struct pt_regs first); tracepoints have none (0, as in stap). uaddr()
// is the first frame of the user stack (bpf_get_stack), the user-space
// instruction pointer in any probe.

// StackMap is the name programs reference the stack trace map by.
const StackMap = "stacks"

// BuildIDStackMap is the name of the map of user stacks as build-id frames.
const BuildIDStackMap = "ustacks"

// BuildIDFrameSize is the size of a frame of BuildIDStackMap (struct
// bpf_stack_build_id: a status word, the 20-byte build id, the file
// offset or, when the status is BuildIDFrameIP, the address).
const BuildIDFrameSize = 32

// The status of a build-id frame.
const (
	BuildIDFrameEmpty = 0 // no frame
	BuildIDFrameValid = 1 // build id and file offset
	BuildIDFrameIP    = 2 // the kernel could not read the build id: an address
)

// MaxBacktrace is the most frames a stack keeps (stap's MAXBACKTRACE).
const MaxBacktrace = 20

// stackMapEntries is how many distinct stacks a run keeps.
const stackMapEntries = 16384

// StackForm is what a stack token stands for.
type StackForm byte

const (
	KernelHex  StackForm = 'k' // backtrace(): hex addresses
	KernelText StackForm = 'K' // sprint_backtrace(): a line per frame
	UserHex    StackForm = 'u' // ubacktrace()
	UserText   StackForm = 'U' // sprint_ubacktrace()
)

// User tells whether the form is of a user-space stack.
func (f StackForm) User() bool { return f == UserHex || f == UserText }

const (
	tokenMark       = 0x1b
	tokenDigits     = 4
	bpfUserStack    = 1 << 8 // BPF_F_USER_STACK
	bpfStackBuildID = 1 << 5 // BPF_F_STACK_BUILD_ID, a map flag
)

// tokenLen is the length of a token of form, without its NUL.
func tokenLen(form StackForm) int {
	if form.User() {
		return 2 + 2*tokenDigits
	}
	return 2 + tokenDigits
}

// StackToken is what a stack token names.
type StackToken struct {
	Form StackForm
	// ID is the stack's id in StackMap; Valid is false when the kernel
	// could not take the stack.
	ID    uint32
	Valid bool
	// BuildIDs is the id of a user stack's frames in BuildIDStackMap;
	// BuildIDsValid is false when the kernel could not take them.
	BuildIDs      uint32
	BuildIDsValid bool
}

// ParseStackToken recognizes a stack token; ok is false for any other
// string.
func ParseStackToken(s string) (tok StackToken, ok bool) {
	if len(s) < 2 || s[0] != tokenMark || len(s) != tokenLen(StackForm(s[1])) {
		return StackToken{}, false
	}
	tok.Form = StackForm(s[1])
	tok.ID, tok.Valid = tokenID(s[2:])
	if tok.Form.User() {
		tok.BuildIDs, tok.BuildIDsValid = tokenID(s[2+tokenDigits:])
	}
	return tok, true
}

// tokenID decodes the id + 1 in the first tokenDigits digits of s.
func tokenID(s string) (uint32, bool) {
	var n uint32
	for i := tokenDigits - 1; i >= 0; i-- {
		n = n<<6 | uint32(s[i]-'@')&63
	}
	return n - 1, n != 0
}

func stackMapSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: "stacks", Type: ebpf.StackTrace, KeySize: 4,
		ValueSize: 8 * MaxBacktrace, MaxEntries: stackMapEntries}
}

func buildIDStackMapSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: "ustacks", Type: ebpf.StackTrace, KeySize: 4, Flags: bpfStackBuildID,
		ValueSize: BuildIDFrameSize * MaxBacktrace, MaxEntries: stackMapEntries}
}

// stackToken compiles backtrace() and friends: the stack's id in
// StackMap (and a user stack's in BuildIDStackMap), then the token naming
// it.
func (g *gen) stackToken(form StackForm) value {
	g.m.stacks = true
	g.ownProbe()
	n := tokenLen(form)
	v := g.strSlot(n + 2)
	g.emit(
		asm.StoreImm(regScratch, int16(v.off), tokenMark, asm.Byte),
		asm.StoreImm(regScratch, int16(v.off+1), int64(form), asm.Byte),
		asm.StoreImm(regScratch, int16(v.off+n), 0, asm.Byte),
	)
	if !form.User() {
		g.stackID(StackMap, 0, v.off+2)
		return v
	}
	g.m.userStacks = true
	g.stackID(StackMap, bpfUserStack, v.off+2)
	g.stackID(BuildIDStackMap, bpfUserStack, v.off+2+tokenDigits)
	return v
}

// stackID takes the stack into stack map m and writes its id + 1 (0 when
// the kernel could not take it) as token digits at off in the scratch
// buffer.
func (g *gen) stackID(m string, flags int32, off int) {
	g.emit(
		asm.Mov.Reg(asm.R1, regCtx),
		asm.LoadMapPtr(asm.R2, 0).WithReference(m),
		asm.Mov.Imm(asm.R3, flags),
		asm.FnGetStackid.Call(),
	)
	ok := g.newLabel("stack")
	g.emit(asm.JSGE.Imm(asm.R0, 0, ok), asm.Mov.Imm(asm.R0, -1))
	g.mark(ok)
	g.emit(asm.Add.Imm(asm.R0, 1))
	for i := 0; i < tokenDigits; i++ {
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.RSh.Imm(asm.R1, int32(6*i)),
			asm.And.Imm(asm.R1, 63),
			asm.Add.Imm(asm.R1, '@'),
			asm.StoreMem(regScratch, int16(off+i), asm.R1, asm.Byte),
		)
	}
}

// x86-64 struct pt_regs, the start of a perf event program's context.
const (
	ptRegsIP = 128
	ptRegsCS = 136
)

// perfRegs tells whether the probe's context starts with the interrupted
// registers; without them addr() and user_mode() are 0.
func (g *gen) perfRegs() bool {
	if g.ownProbe().Attach.Kind == attach.PerfEvent {
		return true
	}
	g.emit(asm.Mov.Imm(asm.R0, 0))
	return false
}

// addr is the interrupted instruction pointer, user or kernel.
func (g *gen) addr(*syntax.Call) {
	if g.perfRegs() {
		g.emit(asm.LoadMem(asm.R0, regCtx, ptRegsIP, asm.DWord))
	}
}

// userMode tells whether the interrupted code ran in user mode (the low
// bits of CS are its privilege level).
func (g *gen) userMode(*syntax.Call) {
	if g.perfRegs() {
		kernelMode := g.newLabel("kmode")
		g.emit(
			asm.LoadMem(asm.R0, regCtx, ptRegsCS, asm.DWord),
			asm.And.Imm(asm.R0, 3),
			asm.JEq.Imm(asm.R0, 0, kernelMode),
			asm.Mov.Imm(asm.R0, 1),
		)
		g.mark(kernelMode)
		g.emit(asm.Mov.Reg(asm.R0, asm.R0))
	}
}

// uaddr is the user-space instruction pointer: in a function probe the
// registers' (the probed function's entry; the return address in a
// .return probe), elsewhere the first frame of the user stack, 0 when the
// task has none (a kernel thread).
func (g *gen) uaddr(*syntax.Call) {
	if g.registerProbe() {
		g.emit(asm.LoadMem(asm.R0, regCtx, attach.RegRIP, asm.DWord))
		return
	}
	slot := g.pushSlot()
	none := g.newLabel("nouser")
	g.emit(
		asm.StoreImm(asm.R10, slot, 0, asm.Word),
		asm.StoreImm(asm.R10, slot+4, 0, asm.Word),
		asm.Mov.Reg(asm.R1, regCtx),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(slot)),
		asm.Mov.Imm(asm.R3, 8),
		asm.Mov.Imm(asm.R4, bpfUserStack),
		asm.FnGetStack.Call(),
		asm.Mov.Imm(asm.R1, 0),
		asm.JSLT.Imm(asm.R0, 8, none),
		asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord),
	)
	g.mark(none)
	g.emit(asm.Mov.Reg(asm.R0, asm.R1))
}
