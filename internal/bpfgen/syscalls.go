package bpfgen

import (
	"maps"
	"slices"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// System calls by number, and the 32-bit (compat) calls of a 64-bit
// kernel (tapset's CompatSyscallNames): a thread makes one while its
// struct thread_info has the architecture's compat bits (arch.Compat):
// x86's status, which the kernel sets on the 32-bit entry paths (int
// $0x80, a 32-bit process's sysenter and syscall) and clears on the
// 64-bit one; arm64's flags, those of a 32-bit process. syscall_name()
// names a compat call by the compat table, as stap's does;
// __syscall_native_nr() gives the number of the native call a compat call
// is, so that the syscall probes serve it as that call.

// SyscallMap is the ARRAY of system call names (indexed by number, "" in
// the gaps) that syscall_name() reads, created when a program uses it; the
// compat calls' names follow the native ones (at native count + number).
const SyscallMap = "syscall_names"

// The ARRAYs of text, indexed by number, that a program serving many
// system calls reads of the call the thread makes: the kernel functions
// of the native calls (probes.SyscallFunctions), for probefunc(), and
// what pn() and pp() give in a probe of the call's entry or return on its
// own event (probes.SyscallPoints).
const (
	SyscallFuncMap     = "syscall_funcs"
	SyscallPNMap       = "syscall_pn"
	SyscallPPMap       = "syscall_pp"
	SyscallReturnPNMap = "syscall_ret_pn"
	SyscallReturnPPMap = "syscall_ret_pp"
)

// syscallTexts are the texts of the ARRAYs above by map, on m's
// architecture.
func (m *Module) syscallTexts(ref string) []string {
	if ref == SyscallFuncMap {
		return probes.SyscallFunctions(m.regs())
	}
	pn, pp := probes.SyscallPoints(m.regs(), ref == SyscallReturnPNMap || ref == SyscallReturnPPMap)
	if ref == SyscallPNMap || ref == SyscallReturnPNMap {
		return pn
	}
	return pp
}

// SyscallNativeMap is the ARRAY, indexed by compat number, of the native
// number of each compat call (-1 for none) that __syscall_native_nr()
// reads.
const SyscallNativeMap = "syscall_native"

// syscallTable returns the names of this machine's system calls, the
// native ones then the compat ones, how many are native, and the width of
// a name slot.
func syscallTable() (names []string, native, width int) {
	names = tapset.SyscallNames(syntax.HostArch())
	native = len(names)
	names = append(names, tapset.CompatSyscallNames(syntax.HostArch())...)
	return names, native, slotWidth(names)
}

// slotWidth is the width of a slot that holds each of names with its
// NUL, a multiple of 8.
func slotWidth(names []string) int {
	width := 8
	for _, n := range names {
		width = max(width, (len(n)+8)&^7)
	}
	return width
}

// syscallName compiles syscall_name(nr): the name from SyscallMap (the
// compat table's while the thread makes a compat call), or "" for a
// number outside the table, as stap's tapset returns.
func (g *gen) syscallName(c *syntax.Call) value {
	names, native, width := syscallTable()
	if names == nil {
		g.fail(c, "syscall_name() has no system call table for %s", syntax.HostArch())
		return g.strSlot(8)
	}
	g.m.syscalls = true
	dst := g.strSlot(width)
	done, key := g.newLabel("sysname"), g.newLabel("sysnamekey")
	g.long(c.Args[0])
	slot := g.pushSlot()
	g.emit(asm.StoreImm(regScratch, int16(dst.off), 0, asm.Byte),
		asm.JGT.Imm(asm.R0, int32(len(names)), done), // keeps R0 within what the verifier bounds
		asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	g.syscallCompat()
	g.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord),
		asm.JGE.Imm(asm.R0, int32(native), done),
		asm.JEq.Imm(asm.R1, 0, key),
		asm.Add.Imm(asm.R0, int32(native)),
		asm.JGE.Imm(asm.R0, int32(len(names)), done))
	g.mark(key)
	g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.Word))
	g.emit(emitLookup(SyscallMap, slot, done)...)
	g.readStr(asm.FnProbeReadKernelStr, dst, func() { g.emit(asm.Mov.Reg(asm.R3, asm.R0)) }, width)
	g.mark(done)
	g.popStack(8)
	return dst
}

// useSyscallTexts records that a program reads the map of texts ref.
func (m *Module) useSyscallTexts(ref string) {
	if m.syscallTextMaps == nil {
		m.syscallTextMaps = map[string]bool{}
	}
	m.syscallTextMaps[ref] = true
}

// syscallTextByNumber compiles a call (probefunc(), pn(), pp()) in a
// program of the syscall family that serves many calls: the text of map
// ref for the call the thread makes, by the number in its user registers.
// A compat call is named as the native call it is served as (the tables
// have no compat calls); a number outside the table gives "".
func (g *gen) syscallTextByNumber(c *syntax.Call, ref string) value {
	texts := g.m.syscallTexts(ref)
	g.m.useSyscallTexts(ref)
	dst := g.strSlot(slotWidth(texts))
	done := g.newLabel("systext")
	slot := g.pushSlot()
	g.emit(asm.StoreImm(regScratch, int16(dst.off), 0, asm.Byte),
		asm.Mov.Imm(asm.R0, 0), asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	if g.userRegs(c, slot) {
		g.emit(asm.Mov.Imm(regRec, 1))
		g.readRegister([]int{g.m.regs().SyscallNr}, slot)
		g.nativeNr()
		g.emit(asm.JGE.Imm(asm.R0, int32(len(texts)), done), // unsigned: -1 too
			asm.StoreMem(asm.R10, slot, asm.R0, asm.Word))
		g.emit(emitLookup(ref, slot, done)...)
		g.readStr(asm.FnProbeReadKernelStr, dst, func() { g.emit(asm.Mov.Reg(asm.R3, asm.R0)) }, dst.width)
	}
	g.mark(done)
	g.popStack(8)
	return dst
}

// syscallCompat leaves in R0 the compat bits of the current thread's
// status: nonzero while it makes a compat call; 0 where the architecture
// has none or the kernel's BTF does not place the status word. The
// merged program of syscall entries keeps them in a stack slot
// (compatSlot), read once per run: its dispatch and each argument ask.
func (g *gen) syscallCompat() {
	off, ok := g.m.facts.compatStatus()
	if !ok {
		g.emit(asm.Mov.Imm(asm.R0, 0))
		return
	}
	if g.compatSlot == 0 {
		g.readCompat(off)
		return
	}
	g.emit(asm.LoadMem(asm.R0, asm.R10, g.compatSlot, asm.DWord)) // fillSyscallArgs read them
}

// reserveCompatSlot reserves, in a program whose context has arguments
// in compat registers (the merged syscall entries), the slot where
// syscallCompat keeps what it read and six words where the prologue
// copies the call's arguments (fillSyscallArgs).
func (g *gen) reserveCompatSlot(a *attach.Point) {
	if a == nil || !slices.ContainsFunc(a.Args, func(arg attach.Arg) bool { return arg.Loc.Compat }) {
		return
	}
	if _, ok := g.m.facts.compatStatus(); ok {
		g.compatSlot = g.pushSlot()
		g.argsSlot = g.pushStack(8 * len(g.m.regs().SyscallArgs))
	}
}

// fillSyscallArgs, in the prologue of a program with compat arguments,
// reads the compat bits once (into compatSlot) and copies the call's
// arguments from the registers the tracepoint's pt_regs (its first
// argument) holds them in: the syscall convention's, or a compat call's,
// zero-extended from their 32 bits. Each argument then loads from the
// copy, with no branch of its own. The copy chooses without a branch
// (both registers read, masked): a branch on the bits would give the
// verifier two states that never meet, and it would walk the whole
// program, hundreds of argument reads, twice.
func (g *gen) fillSyscallArgs() {
	off, _ := g.m.facts.compatStatus()
	g.readCompat(off)
	g.emit(asm.StoreMem(asm.R10, g.compatSlot, asm.R0, asm.DWord),
		// R3: all ones in a compat call, else 0 (-bits has the sign bit set)
		asm.Mov.Reg(asm.R3, asm.R0), asm.Neg.Imm(asm.R3, 0), asm.ArSh.Imm(asm.R3, 63),
		asm.LoadMem(asm.R1, regCtx, 0, asm.DWord))
	for i, reg := range g.m.regs().SyscallArgs {
		g.emit(asm.LoadMem(asm.R2, asm.R1, int16(g.m.regs().Compat.SyscallArgs[i]), asm.DWord),
			asm.Mov.Reg32(asm.R2, asm.R2),
			asm.LoadMem(asm.R4, asm.R1, int16(reg), asm.DWord),
			asm.Xor.Reg(asm.R2, asm.R4), asm.And.Reg(asm.R2, asm.R3), asm.Xor.Reg(asm.R2, asm.R4), // R3 ? compat : native
			asm.StoreMem(asm.R10, g.argsSlot+int16(8*i), asm.R2, asm.DWord))
	}
}

// readCompat leaves in R0 the compat bits of the current thread's status,
// read at off in its task_struct.
func (g *gen) readCompat(off int) {
	defer g.modeAtEntry()
	if g.ownProbe().Attach.Kind.BTFTyped() && g.m.has(target.TaskBTF) { // the task may be read directly there
		g.emit(asm.FnGetCurrentTaskBtf.Call(),
			asm.LoadMem(asm.R0, asm.R0, int16(off), asm.Word),
			asm.And.Imm(asm.R0, g.m.regs().Compat.StatusFlag))
		return
	}
	slot := g.pushSlot()
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord),
		asm.FnGetCurrentTask.Call(),
		asm.Mov.Reg(asm.R3, asm.R0), asm.Add.Imm(asm.R3, int32(off)))
	g.readKernelAt(slot, 4)
	g.emit(asm.And.Imm(asm.R0, g.m.regs().Compat.StatusFlag))
	g.popStack(8)
}

// modeAtEntry turns the compat bits in R0, where they are the process's
// mode (arch.Compat.PerProcess), into the mode the call was made in, in a
// probe of a call's exit: an exec that switched modes returns in the new
// one (a 64-bit -c command's exec of a 32-bit program returned as compat
// fcntl64, 221, else). Every exec returns with the registers cleared but
// syscallno kept, where another call keeps its number in its mode's
// number register (syscallno 0 its 0; a number a tracer changed aside):
// so while that register is 0 and syscallno is not, the call was an exec,
// a compat one if syscallno is a compat exec's number (Compat.CompatExecs),
// else a native one (their native numbers are others).
func (g *gen) modeAtEntry() {
	c := g.m.regs().Compat
	if !c.PerProcess || !g.syscallProbe() || !g.ownProbe().Attach.SyscallExit() {
		return
	}
	flag, regs, slot, nr := g.pushSlot(), g.pushSlot(), g.pushSlot(), g.pushSlot()
	done, native, exec := g.newLabel("modedone"), g.newLabel("modenative"), g.newLabel("modeexec")
	compat, set := g.newLabel("modecompat"), g.newLabel("modeset")
	g.emit(asm.StoreMem(asm.R10, flag, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R0, 0), asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	if !g.userRegsAt(slot) {
		g.emit(asm.LoadMem(asm.R0, asm.R10, flag, asm.DWord))
		g.popStack(32)
		return
	}
	read := func(offset int) { // R0 = the word at regs+offset
		g.emit(asm.LoadMem(asm.R3, asm.R10, regs, asm.DWord), asm.Add.Imm(asm.R3, int32(offset)))
		g.readKernelAt(slot, 8)
	}
	g.emit(asm.StoreMem(asm.R10, regs, asm.R0, asm.DWord))
	read(g.m.regs().SyscallNr)
	g.emit(asm.Mov.Reg32(asm.R0, asm.R0), // syscallno, an s32
		asm.StoreMem(asm.R10, nr, asm.R0, asm.DWord),
		asm.JEq.Imm(asm.R0, 0, done),
		asm.LoadMem(asm.R0, asm.R10, flag, asm.DWord),
		asm.JEq.Imm(asm.R0, 0, native))
	read(c.CompatNrReg)
	g.emit(asm.Mov.Reg32(asm.R0, asm.R0), asm.Ja.Label(exec))
	g.mark(native)
	read(c.NativeNrReg)
	g.mark(exec)
	g.emit(asm.JNE.Imm(asm.R0, 0, done),
		asm.LoadMem(asm.R1, asm.R10, nr, asm.DWord),
		asm.Mov.Imm(asm.R0, 0))
	for _, n := range c.CompatExecs {
		g.emit(asm.JEq.Imm(asm.R1, n, compat))
	}
	g.emit(asm.Ja.Label(set))
	g.mark(compat)
	g.emit(asm.Mov.Imm(asm.R0, c.StatusFlag))
	g.mark(set)
	g.emit(asm.StoreMem(asm.R10, flag, asm.R0, asm.DWord))
	g.mark(done)
	g.emit(asm.LoadMem(asm.R0, asm.R10, flag, asm.DWord))
	g.popStack(32)
}

// syscallNativeNr compiles __syscall_native_nr(nr): nr, or while the
// thread makes a compat call the native number of the compat call nr
// (SyscallNativeMap), -1 when it has none.
func (g *gen) syscallNativeNr(c *syntax.Call) {
	g.long(c.Args[0])
	g.nativeNr()
}

// nativeNr replaces the number of a call in R0 by its native number
// (syscallNativeNr).
func (g *gen) nativeNr() {
	native := tapset.NativeSyscallNumbers(syntax.HostArch())
	if native == nil {
		return
	}
	g.m.syscallNative = true
	done, none := g.newLabel("nativenr"), g.newLabel("nonative")
	slot := g.pushSlot()
	g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	g.syscallCompat()
	g.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, done),
		asm.JGE.Imm(asm.R0, int32(len(native)), none),
		asm.StoreMem(asm.R10, slot, asm.R0, asm.Word))
	g.emit(emitLookup(SyscallNativeMap, slot, none)...)
	g.emit(asm.LoadMem(asm.R0, asm.R0, 0, asm.Word), asm.LSh.Imm(asm.R0, 32), asm.ArSh.Imm(asm.R0, 32),
		asm.Ja.Label(done))
	g.mark(none)
	g.emit(asm.Mov.Imm(asm.R0, -1))
	g.mark(done)
	g.popStack(8)
}

// SyscallSetMap is the ARRAY of the sets of system call numbers
// __syscall_in(nr, set) tests, each a bitmap of tapset.SyscallSetBits
// bits: a set of 360 calls in 20 ranges is a byte's load and a shift,
// where a condition on each range was 40 branches the verifier followed
// one by one, and each time again through the rest of the program (the
// returns of syscall.*: 770 instructions processed; now 312).
const SyscallSetMap = "syscall_sets"

// syscallSet returns the index of set among the module's sets, adding
// it on first use.
func (m *Module) syscallSet(set string) int {
	index := slices.Index(m.syscallSets, set)
	if index < 0 {
		index = len(m.syscallSets)
		m.syscallSets = append(m.syscallSets, set)
	}
	return index
}

// syscallIn compiles __syscall_in(nr, set): 1 when nr is in set (a
// literal, tapset.ParseSyscallSet's), else 0.
func (g *gen) syscallIn(c *syntax.Call) {
	if msg := tapset.Builtins[c.Name].KernelError(c.Args, false); msg != "" {
		g.fail(c, "%s", msg)
		return
	}
	index := g.m.syscallSet(c.Args[1].(*syntax.StringLit).Value)
	out, done := g.newLabel("notinset"), g.newLabel("inset")
	g.long(c.Args[0])
	slot, key := g.pushSlot(), g.pushSlot()
	g.emit(asm.JGE.Imm(asm.R0, tapset.SyscallSetBits, out), // unsigned: a negative number too
		asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	lookup := emitLookupIndex(SyscallSetMap, key, int32(index), out)
	lookup[0] = numbered(lookup[0], relocSet)
	g.emit(lookup...)
	g.emit(asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R1), asm.RSh.Imm(asm.R2, 3),
		asm.Add.Reg(asm.R0, asm.R2),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.Byte),
		asm.And.Imm(asm.R1, 7), asm.RSh.Reg(asm.R0, asm.R1), asm.And.Imm(asm.R0, 1),
		asm.Ja.Label(done))
	g.mark(out)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.mark(done)
	g.popStack(16)
}

// syscallSetMapSpec describes SyscallSetMap with the bitmaps of sets.
func syscallSetMapSpec(sets []string) *ebpf.MapSpec {
	spec := &ebpf.MapSpec{Name: "syssets", Type: ebpf.Array, KeySize: 4, ValueSize: tapset.SyscallSetBits / 8,
		MaxEntries: uint32(len(sets))}
	for i, set := range sets {
		bits := make([]byte, tapset.SyscallSetBits/8)
		nrs, _ := tapset.ParseSyscallSet(set)
		for _, nr := range nrs {
			bits[nr/8] |= 1 << (nr % 8)
		}
		spec.Contents = append(spec.Contents, ebpf.MapKV{Key: uint32(i), Value: bits})
	}
	return spec
}

// syscallMapSpec describes SyscallMap with its contents.
func syscallMapSpec() *ebpf.MapSpec {
	names, _, _ := syscallTable()
	return stringArraySpec("sysnames", names)
}

// syscallTextMapSpecs describe the ARRAYs of text by number the programs
// read (SyscallFuncMap, ...), with their contents.
func (m *Module) syscallTextMapSpecs() []Map {
	var specs []Map
	for _, ref := range slices.Sorted(maps.Keys(m.syscallTextMaps)) {
		specs = append(specs, Map{ref, stringArraySpec(ref, m.syscallTexts(ref))})
	}
	return specs
}

// stringArraySpec describes an ARRAY of strs by index, each in a
// NUL-padded slot of slotWidth(strs) bytes.
func stringArraySpec(name string, strs []string) *ebpf.MapSpec {
	width := slotWidth(strs)
	spec := &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4,
		ValueSize: uint32(width), MaxEntries: uint32(len(strs))}
	for i, s := range strs {
		v := make([]byte, width)
		copy(v, s)
		spec.Contents = append(spec.Contents, ebpf.MapKV{Key: uint32(i), Value: v})
	}
	return spec
}

// syscallNativeMapSpec describes SyscallNativeMap with its contents.
func syscallNativeMapSpec() *ebpf.MapSpec {
	native := tapset.NativeSyscallNumbers(syntax.HostArch())
	spec := &ebpf.MapSpec{Name: "sysnative", Type: ebpf.Array, KeySize: 4, ValueSize: 4,
		MaxEntries: uint32(len(native))}
	for nr, n := range native {
		spec.Contents = append(spec.Contents, ebpf.MapKV{Key: uint32(nr), Value: uint32(n)})
	}
	return spec
}

// TailMap is the program array of the first half of a merged entry of
// system calls (sema's syscallsplit.go): its one element is the second
// half's program, which kernelside puts there before the first is
// attached.
const TailMap = "tail"

// syscallTail compiles __syscall_tail(): a tail call into TailMap's
// program, which does not come back; should it fail (an empty map), R0 =
// 0 and the code goes on.
func (g *gen) syscallTail(*syntax.Call) {
	g.subs.tailCall = true
	g.emit(
		asm.Mov.Reg(asm.R1, regCtx),
		asm.LoadMapPtr(asm.R2, 0).WithReference(TailMap),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnTailCall.Call(),
		asm.Mov.Imm(asm.R0, 0),
	)
}

// tailMapSpec describes TailMap.
func tailMapSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: "tail", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 1}
}
