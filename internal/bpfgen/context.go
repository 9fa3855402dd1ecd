package bpfgen

import (
	"slices"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// Context functions (builtins.go dispatches to them) compile to helper
// calls: pid/tid from bpf_get_current_pid_tgid, uid/gid from
// bpf_get_current_uid_gid, cpu, jiffies, the clocks from bpf_ktime_get_ns
// (gettimeofday_* adding the realtime offset the driver measured), memory
// reads through bpf_probe_read_kernel/user into a stack slot, raising stap's
// fault errors; ppid/euid read the current task_struct (task.go). Context
// expressions ($var, @cast) load their base from the attach point's
// arguments and follow member chains (targetVar).

// clockDivisors scale nanoseconds for the clock functions by suffix.
var clockDivisors = map[string]int32{"ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000}

// halfOf calls fn, a helper returning two u32s in a u64, and keeps its
// upper (tgid, gid) or lower (pid, uid) half.
func (g *gen) halfOf(fn asm.BuiltinFunc, upper bool) {
	g.emit(fn.Call())
	if upper {
		g.emit(asm.RSh.Imm(asm.R0, 32))
	} else {
		g.emit(asm.Mov.Reg32(asm.R0, asm.R0))
	}
}

func (g *gen) clock(unit string, offset int64) {
	g.emit(asm.FnKtimeGetNs.Call())
	if offset != 0 {
		g.emit(asm.LoadImm(asm.R1, offset, asm.DWord), asm.Add.Reg(asm.R0, asm.R1))
	}
	if d := clockDivisors[unit]; d != 1 {
		g.emit(asm.Div.Imm(asm.R0, d))
	}
}

// cpuClock compiles cpu_clock_UNIT(cpu): the kernel's clock, as
// local_clock_UNIT (every CPU's clock in BPF is bpf_ktime_get_ns, the
// monotonic clock the user-side probes' cpu_clock reads too); the cpu is
// evaluated for its effects only.
func (g *gen) cpuClock(unit string, c *syntax.Call) {
	g.long(c.Args[0])
	g.clock(unit, 0)
}

// memRead compiles kernel_long(addr) and friends (tapset.NumberReads): a
// fault raises the reader's error, or gives 0 for the readers of user
// memory that have none, as the tapset's wrappers do.
func (g *gen) memRead(c *syntax.Call) {
	fn := asm.FnProbeReadUser
	if strings.HasPrefix(c.Name, "kernel_") {
		fn = asm.FnProbeReadKernel
	}
	g.long(c.Args[0])
	g.readNumber(fn, tapset.NumberReads[c.Name], c.Pos)
}

// deref compiles @kderef(size, addr) and @uderef(size, addr): the size
// bytes (a literal the elaborator checked) at addr, unsigned; a fault
// raises stap's error.
func (g *gen) deref(c *syntax.Call) {
	fn := asm.FnProbeReadUser
	if c.Name == "@kderef" {
		fn = asm.FnProbeReadKernel
	}
	g.long(c.Args[1])
	size := int(c.Args[0].(*syntax.NumberLit).Value)
	g.readNumber(fn, tapset.NumberRead{Size: size, Unsigned: true, Fault: tapset.DerefFault}, c.Pos)
}

// readNumber leaves in R0 the number read describes at the address in R0,
// read with fn; a fault raises read's error at pos, or gives 0.
func (g *gen) readNumber(fn asm.BuiltinFunc, read tapset.NumberRead, pos syntax.Pos) {
	slot := g.pushSlot()
	g.probeRead(fn, slot, read.Size)
	if read.Fault != "" {
		g.emit(asm.JNE.Imm(asm.R0, 0, g.errorSite(read.Fault, pos, true)))
	} else {
		ok := g.newLabel("read")
		g.emit(asm.JEq.Imm(asm.R0, 0, ok), asm.StoreImm(asm.R10, slot, 0, asm.Word), asm.StoreImm(asm.R10, slot+4, 0, asm.Word))
		g.mark(ok)
	}
	switch {
	case read.Size == 8:
		g.emit(asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord))
	case read.Unsigned:
		g.emit(asm.LoadMem(asm.R0, asm.R10, slot, sizeOf(read.Size)))
	case g.m.hasV4():
		g.emit(asm.LoadMemSX(asm.R0, asm.R10, slot, sizeOf(read.Size)))
	default:
		g.emit(asm.LoadMem(asm.R0, asm.R10, slot, sizeOf(read.Size)))
		g.extend(read.Size, true)
	}
	g.popStack(8)
}

// probeRead calls fn, bpf_probe_read_kernel or _user, to copy the size
// bytes at the address in R0 to the stack slot; the address stays in
// regRec for a fault's message, the helper's result is in R0.
func (g *gen) probeRead(fn asm.BuiltinFunc, slot int16, size int) {
	g.emit(
		asm.Mov.Reg(regRec, asm.R0),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, int32(size)),
		fn.Call(),
	)
}

// raise compiles error(msg), whose message is a literal (tapset's table
// says so, and the elaborator checked it). The jump is stmt.go's, which
// leaves the code after the call reachable for the verifier's first check.
func (g *gen) raise(c *syntax.Call) {
	g.jump(g.errorSite(c.Args[0].(*syntax.StringLit).Value, syntax.Pos{}, false))
}

// raiseAtCall compiles __error_at_call(msg): error(msg) located at the
// call of the script function being inlined, as stap locates its tapset's
// C functions' errors.
func (g *gen) raiseAtCall(c *syntax.Call) {
	g.jump(g.errorSite(c.Args[0].(*syntax.StringLit).Value, g.callSite(), false))
}

// readString compiles kernel_string(addr[, n]) and user_string(addr[, n]),
// which raise stap's fault error when the memory cannot be read, and
// kernel_string2(addr, err_msg) and user_string2(addr, err_msg), which
// return err_msg instead.
func (g *gen) readString(c *syntax.Call) value {
	width := g.m.maxStr
	dst := g.strSlot(width)
	limit := width
	fallback := strings.HasSuffix(c.Name, "2")
	cut := int16(0) // the stack slot of a length computed at run time
	if len(c.Args) > 1 && !fallback {
		if n, ok := c.Args[1].(*syntax.NumberLit); ok {
			limit = int(min(max(n.Value, 0), int64(width-1))) + 1
		} else {
			g.long(c.Args[1])
			cut = g.pushSlot()
			g.emit(asm.StoreMem(asm.R10, cut, asm.R0, asm.DWord))
		}
	}
	fn, what := asm.FnProbeReadKernelStr, tapset.KernelCopyFault("string")
	if c.Name[0] == 'u' {
		fn, what = asm.FnProbeReadUserStr, tapset.UserStringFault
	}
	g.long(c.Args[0])
	g.emit(asm.Mov.Reg(regRec, asm.R0))
	g.readStr(fn, dst, func() { g.emit(asm.Mov.Reg(asm.R3, regRec)) }, limit)
	if !fallback {
		g.emit(asm.JSLT.Imm(asm.R0, 0, g.errorSite(what, c.Pos, true)))
		if cut != 0 {
			g.cutString(dst, cut)
			g.popStack(8)
		}
		return dst
	}
	done := g.newLabel("read")
	g.emit(asm.JSGE.Imm(asm.R0, 0, done))
	g.strInto(dst, c.Args[1])
	g.mark(done)
	return dst
}

// cutString ends the string read into dst after the number of bytes in
// the stack slot n (kernel_string_n with a length known at run time, such
// as an NFS request's name, which no NUL ends): the whole string was read,
// up to its NUL or dst's width, and a NUL is stored at n, clamped to dst.
func (g *gen) cutString(dst value, n int16) {
	positive, short := g.newLabel("cutpos"), g.newLabel("cutshort")
	g.emit(
		asm.LoadMem(asm.R1, asm.R10, n, asm.DWord),
		asm.JSGE.Imm(asm.R1, 0, positive),
		asm.Mov.Imm(asm.R1, 0),
	)
	g.mark(positive)
	g.emit(
		asm.JSLE.Imm(asm.R1, int32(dst.width-1), short),
		asm.Mov.Imm(asm.R1, int32(dst.width-1)),
	)
	g.mark(short)
	g.emit(
		asm.Add.Reg(asm.R1, regScratch),
		asm.StoreImm(asm.R1, int16(dst.off), 0, asm.Byte),
	)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// targetVar compiles a context expression ($param, $p->a->b, @cast, an
// autocast such as t->pid) as sema resolved it (Program.Targets): the base
// is argument Param of the attach point (loadArg) or the operand; each offset of the path
// after the first follows a pointer load; the value is the final address
// or a load of Size bytes from it. Memory is read with
// bpf_probe_read_kernel, a fault raising stap's error.
func (g *gen) targetVar(e syntax.Expr) {
	acc := g.m.prog.Targets[e]
	switch {
	case acc == nil || acc.Type == syntax.TypeString:
		g.fail(e, "%s cannot be compiled in a kernel probe yet", syntax.ExprString(e))
		return
	case acc.Param >= 0:
		g.loadArg(acc.Param, e.Position())
	default:
		op := sema.ContextOperand(e)
		if op == nil {
			g.fail(e, "%s cannot be compiled in a kernel probe yet", syntax.ExprString(e))
			return
		}
		g.long(op)
	}
	mem := kernelMemory
	if acc.BTF != nil && acc.BTF.User() {
		mem = userMemory
	}
	g.readPathIn(mem, acc.Path, acc.Address, e.Position(), acc.Indexes...)
}

// memory is where a path's loads read: the kernel's memory, or the probed
// program's (a chain through its DWARF types), with the helper that reads
// it and the error a fault raises.
type memory struct {
	read  asm.BuiltinFunc
	fault string
}

var (
	kernelMemory = memory{asm.FnProbeReadKernel, tapset.KernelReadFault}
	userMemory   = memory{asm.FnProbeReadUser, tapset.UserReadFault}
)

// loadArg loads argument i of the attach point into R0 from where its ABI
// puts it in the context (attach.Loc): an args[] word, a pt_regs slot, a
// field of a trace record, the address in the record of an array field
// (at its offset, or where its __data_loc word says), a register slot
// (or a byte of one: %ah) of the pt_regs a tp_btf argument points to, a
// constant, or user memory at an address computed from registers; a
// fault of a read of the kernel's memory raises its error at pos.
func (g *gen) loadArg(i int, pos syntax.Pos) {
	p := g.ownProbe()
	arg := p.Attach.Args[i]
	loc := arg.Loc
	switch {
	case loc.Verdict:
		g.loadVerdict()
	case loc.Const:
		g.constant(asm.R0, loc.Value)
	case loc.User != nil:
		g.userArg(loc, pos)
	case loc.Address:
		g.emit(asm.Mov.Reg(asm.R0, regCtx), asm.Add.Imm(asm.R0, int32(loc.Offset)))
	case loc.DataLoc:
		g.emit(asm.LoadMem(asm.R0, regCtx, int16(loc.Offset), asm.Word),
			asm.And.Imm(asm.R0, 0xffff), asm.Add.Reg(asm.R0, regCtx))
	case loc.Compat:
		g.compatRegister(loc)
	case loc.Deref:
		g.register(asm.R0, loc, loc.Offset&^7)
		if shift := int32(8 * (loc.Offset & 7)); shift > 0 {
			g.emit(asm.RSh.Imm(asm.R0, shift))
		}
		g.extend(loc.Size, loc.Signed)
		if arg.Pointer && p.Attach.Kind.TypedContext() {
			g.untrust()
		}
	default:
		g.emit(asm.LoadMem(asm.R0, regCtx, int16(loc.Offset), sizeOf(loc.Size)))
		if loc.Signed {
			g.extend(loc.Size, true)
		}
		if arg.Pointer && p.Attach.Kind.TypedContext() {
			g.untrust()
		}
	}
}

// compatRegister loads a system call's argument that lives in a
// different register when the call is a compat one (attach.Loc.Compat):
// from the copy the prologue made of the call's arguments (syscalls.go),
// cut to its size; a compat call's signed long is sign-extended from its
// 32 bits.
func (g *gen) compatRegister(loc attach.Loc) {
	i := slices.Index(g.m.regs().SyscallArgs, loc.Offset)
	if i < 0 || g.argsSlot == 0 {
		panic("bpfgen: a compat argument outside the syscall entries' context") // probes.SyscallEntries makes them all
	}
	g.emit(asm.LoadMem(asm.R0, asm.R10, g.argsSlot+int16(8*i), asm.DWord))
	if loc.Size < 8 || !loc.Signed {
		g.extend(loc.Size, loc.Signed)
		return
	}
	// without a branch (fillSyscallArgs says why): R0 ^= (R0 ^ sext32(R0)) & mask
	g.emit(asm.LoadMem(asm.R1, asm.R10, g.compatSlot, asm.DWord),
		asm.Neg.Imm(asm.R1, 0), asm.ArSh.Imm(asm.R1, 63),
		asm.Mov.Reg(asm.R2, asm.R0), asm.LSh.Imm(asm.R2, 32), asm.ArSh.Imm(asm.R2, 32),
		asm.Xor.Reg(asm.R2, asm.R0), asm.And.Reg(asm.R2, asm.R1), asm.Xor.Reg(asm.R0, asm.R2))
}

// untrust makes the pointer in R0 a plain number to the verifier. A
// BTF-typed program's pointer argument is a trusted pointer, never NULL to
// the verifier, which then removes a script's test of it for NULL as dead
// code; but tracepoints do pass NULL (signal_deliver's info for a SIGKILL).
// Reloaded from a map value (the scratch area), it is an unknown scalar.
func (g *gen) untrust() {
	mark := g.scratchMark()
	cell := int16(g.allocScratch(8))
	g.emit(
		asm.StoreMem(regScratch, cell, asm.R0, asm.DWord),
		asm.LoadMem(asm.R0, regScratch, cell, asm.DWord),
	)
	g.scratchRelease(mark)
}

// register loads into dst the 8-byte register slot at off of the
// argument's struct pt_regs: the context, or what the context's word at
// Base points to when the location is Deref.
func (g *gen) register(dst asm.Register, loc attach.Loc, off int) {
	if !loc.Deref {
		g.emit(asm.LoadMem(dst, regCtx, int16(off), asm.DWord))
		return
	}
	g.emit(asm.LoadMem(dst, regCtx, int16(loc.Base), asm.DWord), asm.LoadMem(dst, dst, int16(off), asm.DWord))
}

// userArg loads an argument in memory: its address, computed from the
// registers (attach.UserAddr), or the Size bytes there, read with
// bpf_probe_read_user, which leaves zeros when it cannot be read (stap
// reads a marker's operand with user_intN, which returns 0), or with
// bpf_probe_read_kernel for the kernel's memory (a kernel statement's
// frame), whose fault raises stap's kernel read fault at pos, as its
// kread does, rather than print a 0 the kernel never held.
func (g *gen) userArg(loc attach.Loc, pos syntax.Pos) {
	g.constant(asm.R0, loc.User.Disp)
	for _, t := range loc.User.Terms {
		g.register(asm.R1, loc, t.Offset)
		if t.Scale != 1 {
			g.emit(asm.Mul.Imm(asm.R1, int32(t.Scale)))
		}
		g.emit(asm.Add.Reg(asm.R0, asm.R1))
	}
	if loc.Address {
		return
	}
	read := asm.FnProbeReadUser
	if loc.User.Kernel {
		read = asm.FnProbeReadKernel
	}
	slot := g.pushSlot()
	g.probeRead(read, slot, loc.Size)
	if loc.User.Kernel {
		g.emit(asm.JNE.Imm(asm.R0, 0, g.errorSite(tapset.KernelReadFault, pos, true)))
	}
	g.emit(asm.LoadMem(asm.R0, asm.R10, slot, sizeOf(loc.Size)))
	if loc.Signed {
		g.extend(loc.Size, true)
	}
	g.popStack(8)
}

// sizeOf is the load size of n bytes (1, 2, 4 or 8).
func sizeOf(n int) asm.Size {
	switch n {
	case 1:
		return asm.Byte
	case 2:
		return asm.Half
	case 4:
		return asm.Word
	}
	return asm.DWord
}

// readPath replaces the base value in R0 by the value path reaches from
// it in the kernel's memory (readPathIn).
func (g *gen) readPath(path *kernel.Path, address bool, at syntax.Pos, indexes ...syntax.Expr) {
	g.readPathIn(kernelMemory, path, address, at, indexes...)
}

// readPathIn replaces the base value in R0 by the value path reaches from
// it in mem: each offset after the first follows a pointer load, each
// dynamic index (indexes, one per path.Scales entry) is computed and added
// times its element's size after its offset, then Size bytes are loaded
// (sign-extended when Signed) unless address asks for the final address
// itself. A fault raises stap's read error at at.
func (g *gen) readPathIn(mem memory, path *kernel.Path, address bool, at syntax.Pos, indexes ...syntax.Expr) {
	if path == nil || len(path.Offsets) == 0 {
		return
	}
	fault := func() string { return g.errorSite(mem.fault, at, true) }
	slot := g.pushSlot()
	scale := 0
	for i, off := range path.Offsets {
		if i > 0 {
			g.kread(mem.read, slot, 8, fault())
		}
		g.constant(asm.R1, off)
		g.emit(asm.Add.Reg(asm.R0, asm.R1))
		for ; scale < len(path.Scales) && path.Scales[scale].At == i; scale++ {
			g.addScaled(slot, indexes[scale], path.Scales[scale].Size)
		}
	}
	if !address {
		size := min(int(path.Size), 8)
		g.kread(mem.read, slot, size, fault())
		g.extractBits(8*size, int(path.BitShift), int(path.BitSize), path.Signed)
	}
	g.popStack(8)
}

// extractBits keeps the value of bits bits starting shift bits up in the
// loaded bits in R0 (a bitfield; bits 0: all of them), sign-extended
// when signed.
func (g *gen) extractBits(loaded, shift, bits int, signed bool) {
	if bits == 0 {
		bits = loaded
	}
	if bits == 64 || !signed && shift == 0 && bits == loaded {
		return
	}
	g.emit(asm.LSh.Imm(asm.R0, int32(64-shift-bits)))
	if signed {
		g.emit(asm.ArSh.Imm(asm.R0, int32(64-bits)))
	} else {
		g.emit(asm.RSh.Imm(asm.R0, int32(64-bits)))
	}
}

// addScaled adds index times size to the address in R0, kept in slot
// while index is computed.
func (g *gen) addScaled(slot int16, index syntax.Expr, size int64) {
	g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	g.long(index)
	g.constant(asm.R1, size)
	g.emit(
		asm.Mul.Reg(asm.R0, asm.R1),
		asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord),
		asm.Add.Reg(asm.R0, asm.R1),
	)
}

// kread replaces the address in R0 by the size bytes (zero-extended) it
// points to, read with helper read, jumping to fault (address in regRec)
// when unreadable.
func (g *gen) kread(read asm.BuiltinFunc, slot int16, size int, fault string) {
	g.emit(
		asm.Mov.Reg(regRec, asm.R0),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Mov.Imm(asm.R0, 0),
		asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, int32(size)),
		read.Call(),
		asm.JNE.Imm(asm.R0, 0, fault),
		asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord),
	)
}
