package bpfgen

import (
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
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
//	ESC, the form (its stored byte for a stack kept by value, below), the
//	id + 1 in four 6-bit digits each offset by '@',
//	[a user stack: the build-id stack's id + 1, the same way,]
//	[callers(n), ucallers(n): n + 1 in one such digit, 0 for n = -1,] NUL
//
// (no NUL inside; id + 1 is 0 when the kernel could not take the stack).
//
// In a probe whose context functions read another task than the running
// thread (sched_switch's next, for scheduler.cpu_on: sema's context tasks),
// backtrace() and sprint_backtrace() are that task's kernel stack, which
// bpf_get_task_stack takes from the task off the CPU (its saved stack,
// where it will resume), into a buffer: a program cannot add a stack to a
// stack trace map. Such a stack is kept by value, once under an id as
// StackMap keeps its stacks, in a store of stacks (stackStore, here
// kernelStore): its ids map finds the id of a stack by its frames; a new
// stack takes the next id (an atomic add on its count map), is stored
// under it in its values map, then published in the ids map unless
// another program published the same stack in between (its id is then
// taken, and the one drawn is wasted). Every step is an atomic add or a
// single map update, so programs that nest on a CPU, or run on others,
// keep a stack once and never see an id before its frames are stored.
// Its token differs from a StackMap token only by the form's stored byte,
// and user space reads its frames by id from the store's values as from
// StackMap.
//
// The stack maps keep Limits.MaxStacks stacks (-D MAXSTACKS). A stack
// trace map has as many buckets as elements and keeps one stack per
// bucket: bpf_get_stackid answers -EEXIST for a stack whose bucket another
// stack holds, long before the map is full (~2 % of the stacks of a
// profile at the default size). A stack that collides so, or that finds
// no free element (-ENOMEM), is kept by value instead: bpf_get_stack
// copies its frames into a store. A kernel stack goes to kernelStore, with
// the context tasks' stacks (kernelStackID). A user stack goes to
// userStore when either of its maps fails it, its addresses and its
// build-id frames side by side (userStackID): both digit groups of its
// token then hold its one id there. A stack costs its bpf_get_stackid
// calls unless it collides. So the stacks kept number MaxStacks in the
// maps and as many again by value. A stack the kernel cannot keep at all
// is a token of no stack, the empty string, and is counted in StackFailMap
// (an atomic add on a shared word: exact when programs nest and across
// CPUs), which the driver reports at exit: a colliding stack that found
// its store full, a context task's stack that bpf_get_task_stack could
// not take, or that found kernelStore full. A colliding user stack that
// finds userStore full keeps what its maps kept: its addresses, when only
// BuildIDStackMap failed it (-ENOMEM there also for a stack it has, once
// every element is in use, since the kernel takes an element before it
// compares), named only where user space knows them from elsewhere and
// counted in StackFailMap's second word; or nothing, counted as lost. Not
// counted: -EFAULT from bpf_get_stackid, the kernel's answer for a stack
// with no frame (the kernel stack of a sample taken in user mode, the
// user stack of a kernel thread), which is "" in stap too, and an empty
// stack.
// BPF_F_REUSE_STACKID is not used: with it a stack whose bucket is taken
// replaces the stack there under the same id, and every token taken
// before, a key counted in a map meanwhile, would then name the new stack,
// its count silently moved to a stack it never had.
//
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

// StackFailMap counts the stacks the kernel could not keep: an ARRAY of
// one element, two u64 words at these offsets (a program reaches the one
// element of an array directly).
const StackFailMap = "stack_failures"

// The words of StackFailMap.
const (
	StackFailLost     = 0 // stacks that read as ""
	StackFailBuildIDs = 8 // user stacks kept without their build-id frames
)

// The maps of kernelStore: the kernel stacks kept by value.
const (
	TaskStackMap      = "taskstacks"      // ARRAY id → MaxBacktrace addresses
	TaskStackIDMap    = "taskstack_ids"   // HASH MaxBacktrace addresses → u32 id
	TaskStackCountMap = "taskstack_count" // ARRAY of one u64: the ids given
)

// The maps of userStore: the user stacks kept by value.
const (
	UserStackMap      = "ustack_vals"  // ARRAY id → MaxBacktrace UserStackFrameSize frames
	UserStackIDMap    = "ustack_ids"   // HASH those frames → u32 id
	UserStackCountMap = "ustack_count" // ARRAY of one u64: the ids given
)

// UserStackFrameSize is the size of a frame of a user stack kept by
// value: UserStackMap's value is the stack's MaxBacktrace addresses, then
// its MaxBacktrace build-id frames (as BuildIDStackMap's).
const UserStackFrameSize = 8 + BuildIDFrameSize

// MaxBacktrace is the most frames a stack keeps (stap's MAXBACKTRACE).
const MaxBacktrace = 20

// StackForm is what a stack token stands for.
type StackForm byte

const (
	KernelHex  StackForm = 'k' // backtrace(): hex addresses
	KernelText StackForm = 'K' // sprint_backtrace(): a line per frame
	UserHex    StackForm = 'u' // ubacktrace()
	UserText   StackForm = 'U' // sprint_ubacktrace()
	// backtrace() and ubacktrace() as a Text builtin's argument
	// (print_backtrace's, print_ubacktrace's lines): every frame, whose
	// text is never cut at MAXSTRINGLEN, as stap prints a whole stack.
	KernelWhole StackForm = 'w'
	UserWhole   StackForm = 'x'
	// callers(n) and ucallers(n): the first n + 1 frames (every frame
	// for n = -1, the token's depth 0), "0x%x" each, separated by spaces
	KernelCallers StackForm = 'c'
	UserCallers   StackForm = 'y'
)

// User tells whether the form is of a user-space stack.
func (f StackForm) User() bool {
	return f == UserHex || f == UserText || f == UserWhole || f == UserCallers
}

// Callers tells whether the form's token has a depth (callers(n)'s).
func (f StackForm) Callers() bool { return f == KernelCallers || f == UserCallers }

// Whole tells whether the form's text is every frame, never cut.
func (f StackForm) Whole() bool { return f == KernelWhole || f == UserWhole }

// The bytes that name the form of a token of a stack kept by value,
// whose id is in kernelStore or userStore.
var storedForms = map[StackForm]byte{KernelHex: 't', KernelText: 'T', UserHex: 'v', UserText: 'V',
	KernelWhole: 'W', UserWhole: 'X', KernelCallers: 'C', UserCallers: 'Y'}

// stackForms are the builtins that return a stack token, by the form of
// its text.
var stackForms = map[string]StackForm{"backtrace": KernelHex, "sprint_backtrace": KernelText,
	"ubacktrace": UserHex, "sprint_ubacktrace": UserText}

// wholeForms are the forms of stack tokens a Text builtin takes.
var wholeForms = map[StackForm]StackForm{KernelHex: KernelWhole, UserHex: UserWhole}

// wholeStack compiles x, an argument of c, when c takes it whole
// (sema.WholeStack): a token of the whole stack.
func (g *gen) wholeStack(c *syntax.Call, x syntax.Expr) (value, bool) {
	if !sema.WholeStack(c, x) {
		return value{}, false
	}
	form := wholeForms[stackForms[x.(*syntax.Call).Name]]
	return g.stackToken(form), true
}

// storedByte is the byte naming form f in a token of a stack kept by
// value.
func (f StackForm) storedByte() byte { return storedForms[f] }

const (
	tokenMark       = 0x1b
	tokenDigits     = 4
	bpfUserStack    = 1 << 8 // BPF_F_USER_STACK
	bpfStackBuildID = 1 << 5 // BPF_F_STACK_BUILD_ID, a map flag
)

// tokenLen is the length of a token of form, without its NUL.
func tokenLen(form StackForm) int {
	n := 2 + tokenDigits
	if form.User() {
		n += tokenDigits
	}
	if form.Callers() {
		n++
	}
	return n
}

// StackToken is what a stack token names.
type StackToken struct {
	Form StackForm
	// Stored: a stack kept by value, whose ID is in TaskStackMap, or for a
	// user stack in UserStackMap (BuildIDs then the same).
	Stored bool
	// ID is the stack's id in StackMap (or its store's, above); Valid is
	// false when the kernel could not take the stack.
	ID    uint32
	Valid bool
	// BuildIDs is the id of a user stack's frames in BuildIDStackMap;
	// BuildIDsValid is false when the kernel could not take them.
	BuildIDs      uint32
	BuildIDsValid bool
	// Depth is how many frames a callers form keeps, 0 for all.
	Depth int
}

// ParseStackToken recognizes a stack token at the start of s (Len bytes
// of it); ok is false for any other string.
func ParseStackToken(s string) (tok StackToken, ok bool) {
	if len(s) < 2 || s[0] != tokenMark {
		return StackToken{}, false
	}
	if tok.Form, ok = tokenForm(s[1]); !ok {
		return StackToken{}, false
	}
	tok.Stored = s[1] != byte(tok.Form)
	if len(s) < tokenLen(tok.Form) || !digits(s[2:tokenLen(tok.Form)]) {
		return StackToken{}, false
	}
	tok.ID, tok.Valid = tokenID(s[2:])
	if tok.Form.User() {
		tok.BuildIDs, tok.BuildIDsValid = tokenID(s[2+tokenDigits:])
	}
	if tok.Form.Callers() {
		tok.Depth = int(s[tok.Len()-1] - '@')
	}
	return tok, true
}

// tokenForm is the form a token's form byte b names.
func tokenForm(b byte) (StackForm, bool) {
	for form, stored := range storedForms {
		if b == byte(form) || b == stored {
			return form, true
		}
	}
	return 0, false
}

// Len is the length of the token.
func (tok StackToken) Len() int { return tokenLen(tok.Form) }

// digits tells whether every byte of s is a 6-bit digit.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '@' || s[i] > '@'+63 {
			return false
		}
	}
	return true
}

// tokenID decodes the id + 1 in the first tokenDigits digits of s.
func tokenID(s string) (uint32, bool) {
	n := uint32(tokenNumber(s, tokenDigits))
	return n - 1, n != 0
}

// stackStore is a store of stacks kept by value (see above), in three
// maps: values, an ARRAY id → the stack's frames; ids, a HASH frames →
// id; count, an ARRAY of one u64, the ids given. Each of its stacks takes
// frameSize bytes a frame, MaxBacktrace frames.
type stackStore struct {
	values, ids, count string
	frameSize          int
}

// The stores of stacks kept by value: kernelStore has kernel stacks (a
// context task's, or one that collided in StackMap), their addresses;
// userStore has user stacks that collided in StackMap or
// BuildIDStackMap, their addresses and then their build-id frames.
var (
	kernelStore = stackStore{TaskStackMap, TaskStackIDMap, TaskStackCountMap, 8}
	userStore   = stackStore{UserStackMap, UserStackIDMap, UserStackCountMap, UserStackFrameSize}
)

// size is the size of a stack in the store.
func (s stackStore) size() int { return s.frameSize * MaxBacktrace }

// maps describes the store's maps, keeping n stacks; its values are a
// hash where the kernel has no atomic fetch-and-add (drawStackID).
func (s stackStore) maps(n uint32, fetch bool) []Map {
	size := uint32(s.size())
	values := ebpf.Array
	if !fetch {
		values = ebpf.Hash
	}
	return []Map{
		{s.values, &ebpf.MapSpec{Name: s.values, Type: values, KeySize: 4, ValueSize: size, MaxEntries: n}},
		{s.ids, &ebpf.MapSpec{Name: s.ids, Type: ebpf.Hash, KeySize: size, ValueSize: 4, MaxEntries: n}},
		{s.count, wordSpec(s.count)},
	}
}

// stackMaps describes the stack maps the programs use, each keeping
// MaxStacks stacks, and StackFailMap.
func (m *Module) stackMaps() []Map {
	if !m.stacks && !m.taskStacks {
		return nil
	}
	n := uint32(m.cfg.Limits.MaxStacks)
	maps := []Map{{StackFailMap, &ebpf.MapSpec{Name: "stack_failures", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1}}}
	if m.stacks {
		maps = append(maps, Map{StackMap, &ebpf.MapSpec{Name: "stacks", Type: ebpf.StackTrace, KeySize: 4,
			ValueSize: 8 * MaxBacktrace, MaxEntries: n}})
	}
	if m.userStacks {
		maps = append(maps, Map{BuildIDStackMap, &ebpf.MapSpec{Name: "ustacks", Type: ebpf.StackTrace, KeySize: 4,
			Flags: bpfStackBuildID, ValueSize: BuildIDFrameSize * MaxBacktrace, MaxEntries: n}})
		if m.has(target.BigKeys) { // userStackID keeps none by value before
			maps = append(maps, userStore.maps(n, m.has(target.AtomicFetch))...)
		}
	}
	if m.taskStacks {
		maps = append(maps, kernelStore.maps(n, m.has(target.AtomicFetch))...)
	}
	return maps
}

// stackToken compiles backtrace() and friends: the stack's id in
// StackMap (and a user stack's in BuildIDStackMap), or in a store of
// stacks kept by value, then the token naming it.
func (g *gen) stackToken(form StackForm) value {
	p := g.ownProbe()
	n := tokenLen(form)
	v := g.strSlot(n + 2)
	formByte := byte(form)
	taskArg, task := g.m.prog.ContextTaskArg(p)
	task = task && !form.User() && g.contextTask() != nil
	if task {
		formByte = form.storedByte()
	}
	g.emit(
		asm.StoreImm(regScratch, int16(v.off), tokenMark, asm.Byte),
		asm.StoreImm(regScratch, int16(v.off+1), int64(formByte), asm.Byte),
		asm.StoreImm(regScratch, int16(v.off+n), 0, asm.Byte),
	)
	switch {
	case task:
		g.taskStackID(taskArg)
	case form.User():
		g.m.stacks, g.m.userStacks = true, true
		g.userStackID(form, v.off+1)
		return v
	default:
		g.m.stacks = true
		g.kernelStackID(form, v.off+1)
	}
	g.tokenDigits(v.off + 2)
	return v
}

// kernelStackID takes the current kernel stack into StackMap and leaves
// its id in R0. A stack whose bucket another stack holds (-EEXIST), or
// that finds no free element (-ENOMEM), is kept by value instead, as a
// context task's stack is (storedStackID in kernelStore):
// the token's form byte at formOff then names the store. Negative when
// the stack has no frame or could not be kept (counted).
func (g *gen) kernelStackID(form StackForm, formOff int) {
	kept, collided := g.newLabel("stack_kept"), g.newLabel("stack_collided")
	g.emit(
		asm.Mov.Reg(asm.R1, regCtx),
		asm.LoadMapPtr(asm.R2, 0).WithReference(StackMap),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnGetStackid.Call(),
		asm.JSGE.Imm(asm.R0, 0, kept),
		asm.JEq.Imm(asm.R0, -int32(unix.EFAULT), kept),
	)
	g.jumpIfCollided(asm.R0, collided)
	g.countStackFailure(StackFailLost)
	g.emit(asm.Ja.Label(kept))
	g.mark(collided)
	g.emit(asm.StoreImm(regScratch, int16(formOff), int64(form.storedByte()), asm.Byte))
	g.m.taskStacks = true
	g.countedStackID(kernelStore, func(frames int32) { g.getStack(frames, 0, 8*MaxBacktrace) })
	g.mark(kept)
}

// userStackID takes the current user stack, its build-id frames into
// BuildIDStackMap and its addresses into StackMap, and writes the token's
// digits after the form byte at formOff: the addresses' id + 1, then the
// build-id frames'. A stack that either map cannot keep (-EEXIST,
// -ENOMEM) is kept by value in userStore instead, frames and addresses
// together: the form byte then names the store and both digit groups
// hold the stack's id there. When the store is full too, what the maps
// kept stays: the addresses without their build-id frames (counted as a
// build-id failure), or no stack (counted as lost).
func (g *gen) userStackID(form StackForm, formOff int) {
	addrs, buildIDs := g.pushSlot(), g.pushSlot()
	collided, full, done := g.newLabel("ustack_collided"), g.newLabel("ustack_full"), g.newLabel("ustack_done")
	for _, take := range []struct {
		m    string
		slot int16
	}{{BuildIDStackMap, buildIDs}, {StackMap, addrs}} {
		g.emit(
			asm.Mov.Reg(asm.R1, regCtx),
			asm.LoadMapPtr(asm.R2, 0).WithReference(take.m),
			asm.Mov.Imm(asm.R3, bpfUserStack),
			asm.FnGetStackid.Call(),
			asm.StoreMem(asm.R10, take.slot, asm.R0, asm.DWord),
		)
	}
	if !g.m.has(target.BigKeys) {
		// userStore's ids are keyed by 800 bytes of frames (Linux 5.11):
		// a colliding user stack is not kept by value, and is counted
		g.keptUserStack(formOff, addrs, buildIDs)
		g.popStack(16)
		return
	}
	g.jumpIfCollided(asm.R0, collided)
	g.emit(asm.LoadMem(asm.R0, asm.R10, buildIDs, asm.DWord))
	g.jumpIfCollided(asm.R0, collided)
	g.emit(asm.Ja.Label(full))
	g.mark(collided)
	g.storedStackID(userStore, func(frames int32) {
		skip := g.newLabel("ustack_noframe")
		g.getStack(frames, bpfUserStack, 8*MaxBacktrace)
		g.emit(asm.JSLE.Imm(asm.R0, 0, skip))
		g.getStack(frames+8*MaxBacktrace, bpfUserStack|bpfUserBuildID, BuildIDFrameSize*MaxBacktrace)
		g.mark(skip)
	}, full)
	g.emit(asm.StoreImm(regScratch, int16(formOff), int64(form.storedByte()), asm.Byte),
		asm.StoreMem(asm.R10, addrs, asm.R0, asm.DWord))
	g.tokenDigits(formOff + 1)
	g.emit(asm.LoadMem(asm.R0, asm.R10, addrs, asm.DWord))
	g.tokenDigits(formOff + 1 + tokenDigits)
	g.emit(asm.Ja.Label(done))
	g.mark(full)
	g.keptUserStack(formOff, addrs, buildIDs)
	g.mark(done)
	g.popStack(16)
}

// keptUserStack writes the digits of the user stack the maps kept, the
// ids in the stack slots addrs and buildIDs, after the form byte at
// formOff, counting what they could not keep: the addresses (a lost
// stack), or else the build-id frames. -EFAULT, a stack without frames,
// is not counted.
func (g *gen) keptUserStack(formOff int, addrs, buildIDs int16) {
	addrsKept, buildIDsKept := g.newLabel("ustack_addrs"), g.newLabel("ustack_buildids")
	g.emit(
		asm.LoadMem(asm.R0, asm.R10, addrs, asm.DWord),
		asm.JSGE.Imm(asm.R0, 0, addrsKept),
		asm.JEq.Imm(asm.R0, -int32(unix.EFAULT), buildIDsKept),
	)
	g.countStackFailure(StackFailLost)
	g.emit(asm.Ja.Label(buildIDsKept))
	g.mark(addrsKept)
	g.emit(
		asm.LoadMem(asm.R0, asm.R10, buildIDs, asm.DWord),
		asm.JSGE.Imm(asm.R0, 0, buildIDsKept),
		asm.JEq.Imm(asm.R0, -int32(unix.EFAULT), buildIDsKept),
	)
	g.countStackFailure(StackFailBuildIDs)
	g.mark(buildIDsKept)
	g.emit(asm.LoadMem(asm.R0, asm.R10, addrs, asm.DWord))
	g.tokenDigits(formOff + 1)
	g.emit(asm.LoadMem(asm.R0, asm.R10, buildIDs, asm.DWord))
	g.tokenDigits(formOff + 1 + tokenDigits)
}

// jumpIfCollided jumps to collided when reg holds bpf_get_stackid's
// -EEXIST (another stack holds the bucket) or -ENOMEM (no free element).
func (g *gen) jumpIfCollided(reg asm.Register, collided string) {
	g.emit(
		asm.JEq.Imm(reg, -int32(unix.EEXIST), collided),
		asm.JEq.Imm(reg, -int32(unix.ENOMEM), collided),
	)
}

// getStack copies size bytes of the current stack (bpf_get_stack with
// flags) to frames in the scratch area; R0 is the bytes it wrote, the
// rest zeroed, or a negative error.
func (g *gen) getStack(frames int32, flags int32, size int32) {
	g.emit(
		asm.Mov.Reg(asm.R1, regCtx),
		asm.Mov.Reg(asm.R2, regScratch),
		asm.Add.Imm(asm.R2, frames),
		asm.Mov.Imm(asm.R3, size),
		asm.Mov.Imm(asm.R4, flags),
		asm.FnGetStack.Call(),
	)
}

// countStackFailure adds one to StackFailMap's word at offset word.
// Clobbers R1 and R2.
func (g *gen) countStackFailure(word int32) { g.countIn(StackFailMap, uint32(word), asm.R1) }

// tokenDigits writes the id in R0 + 1 (0 for a negative R0) as token
// digits at off in the scratch buffer.
func (g *gen) tokenDigits(off int) {
	ok := g.newLabel("stack")
	g.emit(asm.JSGE.Imm(asm.R0, 0, ok), asm.Mov.Imm(asm.R0, -1))
	g.mark(ok)
	g.emit(asm.Add.Imm(asm.R0, 1))
	g.sixBitDigits(off, tokenDigits)
}

// taskStackID takes the kernel stack of the context task, argument arg
// of the tracepoint (loaded as it is: bpf_get_task_stack needs the
// verifier's trusted task pointer), and leaves its id in kernelStore in
// R0: negative when the stack has no frame, or could not be taken or kept
// (the store full): these counted in StackFailMap.
func (g *gen) taskStackID(arg int) {
	g.m.taskStacks = true
	g.countedStackID(kernelStore, func(frames int32) {
		g.emit(
			asm.LoadMem(asm.R1, regCtx, int16(g.probe.Attach.Args[arg].Loc.Offset), asm.DWord),
			asm.Mov.Reg(asm.R2, regScratch),
			asm.Add.Imm(asm.R2, frames),
			asm.Mov.Imm(asm.R3, 8*MaxBacktrace),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnGetTaskStack.Call(), // the bytes it wrote, the rest zeroed
		)
	})
}

// countedStackID is storedStackID counting a stack it could not keep in
// StackFailMap, its R0 then -1.
func (g *gen) countedStackID(s stackStore, take func(frames int32)) {
	full, done := g.newLabel("stored_full"), g.newLabel("stored")
	g.storedStackID(s, take, full)
	g.emit(asm.Ja.Label(done))
	g.mark(full)
	g.countStackFailure(StackFailLost)
	g.emit(asm.Mov.Imm(asm.R0, -1))
	g.mark(done)
}

// storedStackID keeps a stack by value in store s and leaves its id in
// R0: the id s.ids has for it, or a new one; -1 when the stack has no
// frame. It jumps to full when the stack could not be taken or kept (the
// store full). take emits the helper calls that copy the stack's frames
// to frames in the scratch area and leave the bytes written, the rest
// zeroed (or a negative error), in R0.
func (g *gen) storedStackID(s stackStore, take func(frames int32), full string) {
	mark := g.scratchMark()
	frames := int32(g.allocScratch(s.size()))
	id := g.pushSlot()
	published, done := g.newLabel("stored_new"), g.newLabel("stored_done")
	empty := g.newLabel("stored_empty")
	take(frames)
	g.emit(
		asm.JEq.Imm(asm.R0, 0, empty),
		asm.JSLT.Imm(asm.R0, 0, full),
	)
	g.knownStack(s, frames, done)
	g.drawStackID(s, frames, id, full)
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(s.ids),
		asm.Mov.Reg(asm.R2, regScratch),
		asm.Add.Imm(asm.R2, frames),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, int32(id)),
		asm.Mov.Imm(asm.R4, bpfNoExist),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, published),
	)
	g.knownStack(s, frames, done) // published by another program meanwhile
	g.emit(asm.Ja.Label(full))
	g.mark(empty)
	g.emit(asm.Mov.Imm(asm.R0, -1), asm.Ja.Label(done))
	g.mark(published)
	g.emit(asm.LoadMem(asm.R0, asm.R10, id, asm.Word))
	g.mark(done)
	g.popStack(8)
	g.scratchRelease(mark)
}

// drawStackID takes a new id of store s into stack slot id and stores the
// frames at frames in the scratch area under it, or jumps to full. The id
// is the store's count before an atomic fetch-and-add. Where the kernel
// has none (before Linux 5.12) it is the count after a plain atomic add,
// less one, which a program that added meanwhile (nested, or on another
// CPU) may read too: the values are then a hash, the frames are stored
// with BPF_NOEXIST, and the program that finds its id taken draws again,
// up to stackDraws times, so that no id ever names two stacks.
func (g *gen) drawStackID(s stackStore, frames int32, id int16, full string) {
	store := func(flags int32) {
		g.emit(
			asm.JGE.Imm(asm.R2, int32(g.m.cfg.Limits.MaxStacks), full),
			asm.StoreMem(asm.R10, id, asm.R2, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference(s.values),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, int32(id)),
			asm.Mov.Reg(asm.R3, regScratch),
			asm.Add.Imm(asm.R3, frames),
			asm.Mov.Imm(asm.R4, flags),
			asm.FnMapUpdateElem.Call(),
		)
	}
	if g.m.has(target.AtomicFetch) {
		g.emit(asm.LoadMapValue(asm.R1, 0, 0).WithReference(s.count), asm.Mov.Imm(asm.R2, 1),
			atomicOp(bpfFetchAdd, asm.R1, asm.R2, 0))
		store(0) // BPF_ANY
		g.emit(asm.JNE.Imm(asm.R0, 0, full))
		return
	}
	stored := g.newLabel("stored_frames")
	for range stackDraws {
		g.emit(asm.LoadMapValue(asm.R1, 0, 0).WithReference(s.count), asm.Mov.Imm(asm.R2, 1),
			atomicOp(bpfAdd, asm.R1, asm.R2, 0), asm.LoadMem(asm.R2, asm.R1, 0, asm.DWord), asm.Sub.Imm(asm.R2, 1))
		store(bpfNoExist)
		g.emit(asm.JEq.Imm(asm.R0, 0, stored))
	}
	g.emit(asm.Ja.Label(full))
	g.mark(stored)
}

// stackDraws bounds the ids a program draws for a stack where each draw
// may find its id taken (drawStackID): each retry needs another program
// to add to the count in a window of two instructions.
const stackDraws = 4

// knownStack jumps to found with the id of the stack at frames in the
// scratch buffer in R0 when store s has it, and goes on otherwise.
func (g *gen) knownStack(s stackStore, frames int32, found string) {
	unknown := g.newLabel("stored_unknown")
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(s.ids),
		asm.Mov.Reg(asm.R2, regScratch),
		asm.Add.Imm(asm.R2, frames),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, unknown),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.Word),
		asm.Ja.Label(found),
	)
	g.mark(unknown)
}

// sampledRegs tells whether the probe's context starts with the
// registers of the code it interrupted, kernel or user (a perf sample's).
func (g *gen) sampledRegs() bool {
	a := g.ownProbe().Attach
	return a != nil && a.Regs && !a.User && g.m.regs() != nil
}

// perfRegs is sampledRegs for addr() and user_mode(), which are 0
// without those registers: it leaves that 0 in R0.
func (g *gen) perfRegs() bool {
	if g.sampledRegs() {
		return true
	}
	g.emit(asm.Mov.Imm(asm.R0, 0))
	return false
}

// addr is the address of the probed kernel function (bpf_get_func_ip,
// exact where regs->ip is past the probe's own instruction), a kernel
// statement's own address, or the interrupted instruction pointer, user
// or kernel.
func (g *gen) addr(c *syntax.Call) {
	if a := g.ownProbe().Attach; a != nil && a.Func != nil && !a.User && (a.Func.Words > 0 || a.Func.Return == nil) {
		g.funcIP(c, a)
		if a.Offset != 0 && !a.Func.FromEvent {
			g.emit(asm.Add.Imm(asm.R0, int32(a.Offset)))
		}
		return
	}
	if g.perfRegs() {
		g.emit(asm.LoadMem(asm.R0, regCtx, int16(g.m.regs().IP), asm.DWord))
	}
}

// funcAddr is the probed kernel function's address, at entry and return
// alike; 0 in a probe on no kernel function.
func (g *gen) funcAddr(c *syntax.Call) {
	if a := g.ownProbe().Attach; a == nil || a.Func == nil || a.User {
		g.emit(asm.Mov.Imm(asm.R0, 0))
		return
	}
	g.funcIP(c, g.ownProbe().Attach)
}

// funcIP leaves in R0 the address of the kernel function the program at a
// is attached to (c blamed should it be unknown): bpf_get_func_ip's (Linux
// 5.15), or before it, and for a kprobe inside the function (a
// statement's, where the helper gives 0), the function's address in
// kallsyms, a constant of a program on one function (a program on many
// needs kprobe-multi, which came after), or the symbol's a function
// whose name others share is measured from (attach.Func.FromEvent) plus
// its offset.
func (g *gen) funcIP(c *syntax.Call, a *attach.Point) {
	if g.m.has(target.FuncIP) && a.Offset == 0 || a.Set != nil {
		g.emit(asm.Mov.Reg(asm.R1, regCtx), asm.FnGetFuncIp.Call())
		return
	}
	addr, ok := g.m.cfg.Kernel.FunctionAddress(a.Event, a.Module)
	if !ok {
		g.needs(c.Position(), target.FuncIP, c.Name+"() on "+a.Event+" (not in /proc/kallsyms)")
		return
	}
	if a.Func.FromEvent {
		addr += a.Offset
	}
	g.constant(asm.R0, int64(addr))
}

// userMode tells whether the interrupted code ran in user mode: always in
// a uprobe or USDT marker, in a perf sample by arch.Regs' Mode (x86's CS
// holds the privilege level).
func (g *gen) userMode(*syntax.Call) {
	if a := g.ownProbe().Attach; a != nil && a.User {
		g.emit(asm.Mov.Imm(asm.R0, 1))
		return
	}
	if g.perfRegs() {
		kernelMode := g.newLabel("kmode")
		g.emit(
			asm.LoadMem(asm.R1, regCtx, int16(g.m.regs().Mode), asm.DWord),
			asm.And.Imm(asm.R1, g.m.regs().ModeMask),
			asm.Mov.Imm(asm.R0, 0),
			asm.JNE.Imm(asm.R1, g.m.regs().ModeUser, kernelMode),
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
	if a := g.ownProbe().Attach; a != nil && a.Regs && a.User && g.m.regs() != nil {
		g.emit(asm.LoadMem(asm.R0, regCtx, int16(g.m.regs().IP), asm.DWord))
		return
	}
	g.stackFrame(bpfUserStack, 0)
}

// callerAddr compiles caller_addr(): in a kernel function probe, the
// address its function returns to. A kretprobe's registers are already
// the caller's: the first frame of the kernel stack. Elsewhere (kprobe,
// fentry, fexit) it is the frame after the function's own, the first
// within callerSpan bytes of the function's address (bpf_get_func_ip):
// the frames of a BPF trampoline come before it. 0 in other probes, or
// when the function is not among the first callerFrames frames.
func (g *gen) callerAddr(c *syntax.Call) {
	a := g.ownProbe().Attach
	switch {
	case a == nil || a.Func == nil || a.User:
		g.emit(asm.Mov.Imm(asm.R0, 0))
		return
	case a.Regs && a.Func.Return != nil:
		g.stackFrame(0, 0)
		return
	}
	const size = 8 * callerFrames
	fn := g.pushSlot()
	buf := g.pushStack(size)
	done := g.newLabel("caller")
	g.funcIP(c, a)
	g.emit(
		asm.StoreMem(asm.R10, fn, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, regCtx), asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, int32(buf)),
		asm.Mov.Imm(asm.R3, size), asm.Mov.Imm(asm.R4, 0), asm.FnGetStack.Call(),
		asm.Mov.Imm(asm.R0, 0),
	)
	for i := 0; i < callerFrames-1; i++ {
		next := g.newLabel("frame")
		g.emit(
			asm.LoadMem(asm.R1, asm.R10, buf+int16(8*i), asm.DWord),
			asm.LoadMem(asm.R2, asm.R10, fn, asm.DWord),
			asm.JLT.Reg(asm.R1, asm.R2, next),
			asm.Add.Imm(asm.R2, callerSpan),
			asm.JGE.Reg(asm.R1, asm.R2, next),
			asm.LoadMem(asm.R0, asm.R10, buf+int16(8*(i+1)), asm.DWord),
			asm.Ja.Label(done),
		)
		g.mark(next)
	}
	g.mark(done)
	g.emit(asm.Mov.Reg(asm.R0, asm.R0))
	g.popStack(size + 8)
}

// callerFrames is how many frames of the kernel stack caller_addr()
// looks at; callerSpan how far past a function's address the address of
// its frame may lie (after an endbr64 and the call of a trampoline: 9).
const (
	callerFrames = 8
	callerSpan   = 16
)

// stackFrame leaves in R0 frame n (the first is 0) of the kernel stack,
// or of the user stack with bpfUserStack in flags; 0 when the stack has
// fewer frames.
func (g *gen) stackFrame(flags int32, n int) {
	size := 8 * (n + 1)
	slot := g.pushStack(size)
	none := g.newLabel("noframe")
	for off := 0; off < size; off += 4 {
		g.emit(asm.StoreImm(asm.R10, slot+int16(off), 0, asm.Word))
	}
	g.emit(
		asm.Mov.Reg(asm.R1, regCtx),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(slot)),
		asm.Mov.Imm(asm.R3, int32(size)),
		asm.Mov.Imm(asm.R4, flags),
		asm.FnGetStack.Call(),
		asm.Mov.Imm(asm.R1, 0),
		asm.JSLT.Imm(asm.R0, int32(size), none),
		asm.LoadMem(asm.R1, asm.R10, slot+int16(8*n), asm.DWord),
	)
	g.mark(none)
	g.emit(asm.Mov.Reg(asm.R0, asm.R1))
	g.popStack(size)
}

// userStackAt compiles __ustack_raw(n): frame n (the first is 0) of the
// user stack, 0 when the stack has fewer frames or n is outside
// 0..MaxBacktrace-1.
func (g *gen) userStackAt(c *syntax.Call) { g.frameAt(c, bpfUserStack, nil) }

// stackAt compiles __stack_raw(n): frame n of the kernel stack as
// backtrace() shows it, 0 as userStackAt's. The frames a BPF program
// sees start inside the machinery that runs it (its own frame, a
// trampoline's, bpf_trace_run2, __bpf_trace_EVENT, ...), which user
// space trims off a stack's text (ksym.TrimTracing), by symbol: here the
// first frame (0 is n = 0) is the first of the top trimFrames in
// CodeMap, the kernel's text outside that machinery
// (ksym.UntracedRanges), so that stack(n) is the frame n backtrace()
// prints. 0 when none of those is.
func (g *gen) stackAt(c *syntax.Call) { g.frameAt(c, 0, g.untracedFrame) }

// trimFrames is how many frames at the top of a kernel stack stackAt
// searches for the first outside the tracing machinery.
const trimFrames = 8

// frameAt leaves in R0 frame n, c's argument, of the stack bpf_get_stack
// takes with flags, counted from the frame first finds (nil: the first):
// first leaves its index in R0, or jumps to its none label.
func (g *gen) frameAt(c *syntax.Call, flags int32, first func(frames int, none string)) {
	g.ownProbe() // takes the context: never in a subprogram
	mark := g.scratchMark()
	n := g.longArgs(c.Args[0])[0]
	frames, bytes := g.allocScratch(8*MaxBacktrace), g.allocScratch(8)
	none, done := g.newLabel("stack_none"), g.newLabel("stack_frame")
	g.getStack(int32(frames), flags, 8*MaxBacktrace)
	g.emit(asm.StoreMem(regScratch, int16(bytes), asm.R0, asm.DWord), asm.Mov.Imm(asm.R0, 0))
	if first != nil {
		first(frames, none)
	}
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(n), asm.DWord),
		asm.JGE.Imm(asm.R1, MaxBacktrace, none), // unsigned: a negative n too
		asm.Add.Reg(asm.R1, asm.R0),
		asm.LSh.Imm(asm.R1, 3),
		asm.JGE.Imm(asm.R1, 8*MaxBacktrace, none),
		asm.LoadMem(asm.R2, regScratch, int16(bytes), asm.DWord),
		asm.JSGE.Reg(asm.R1, asm.R2, none), // past the bytes written, or an error
		asm.Add.Reg(asm.R1, regScratch),
		asm.LoadMem(asm.R0, asm.R1, int16(frames), asm.DWord),
		asm.Ja.Label(done),
	)
	g.mark(none)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.mark(done)
	g.scratchRelease(mark)
}

// untracedFrame leaves in R0 the index of the first of the top
// trimFrames kernel frames at frames in the scratch area that CodeMap
// holds, or jumps to none.
func (g *gen) untracedFrame(frames int, none string) {
	t := g.m.codeTable()
	found := g.newLabel("untraced")
	for i := 0; i < trimFrames; i++ {
		next := g.newLabel("traced")
		g.rangeFind(CodeMap, t, frames+8*i, next)
		g.emit(asm.Mov.Imm(asm.R0, int32(i)), asm.Ja.Label(found))
		g.mark(next)
	}
	g.emit(asm.Ja.Label(none))
	g.mark(found)
}

// callersToken compiles __callers(n) and __ucallers(n) (form): the token
// of the stack's first n + 1 frames, of every frame for n = -1 (the
// tapset gives "" for a lower n, and errs before an n past the stack's
// end).
func callersToken(form StackForm) func(*gen, *syntax.Call) value {
	return func(g *gen, c *syntax.Call) value {
		g.long(c.Args[0])
		n := g.pushSlot()
		g.emit(asm.StoreMem(asm.R10, n, asm.R0, asm.DWord))
		v := g.stackToken(form)
		depth := g.newLabel("callers_depth")
		g.emit(
			asm.LoadMem(asm.R1, asm.R10, n, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.JLE.Imm(asm.R1, MaxBacktrace, depth), // n = -1: 0, every frame
			asm.Mov.Imm(asm.R1, 0),
		)
		g.mark(depth)
		g.emit(
			asm.Add.Imm(asm.R1, '@'),
			asm.StoreMem(regScratch, int16(v.off+tokenLen(form)-1), asm.R1, asm.Byte),
		)
		g.popStack(8)
		return v
	}
}

// stackPointer compiles __stack_pointer(): the address of the program's
// frame (R10) on the kernel stack it runs on, as a number: stored in the
// scratch element and loaded back, which the verifier allows a program
// that may leak pointers (CAP_PERFMON).
func (g *gen) stackPointer(*syntax.Call) {
	mark := g.scratchMark()
	cell := g.allocScratch(8)
	g.emit(
		asm.StoreMem(regScratch, int16(cell), asm.R10, asm.DWord),
		asm.LoadMem(asm.R0, regScratch, int16(cell), asm.DWord),
	)
	g.scratchRelease(mark)
}
