package bpfgen

import (
	"strconv"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// Context functions compile to helper calls: pid/tid from
// bpf_get_current_pid_tgid, uid/gid from bpf_get_current_uid_gid, cpu,
// jiffies, the clocks from bpf_ktime_get_ns (gettimeofday_* adding the
// realtime offset the driver measured), memory reads through
// bpf_probe_read_kernel/user into a stack slot, raising stap's fault errors;
// ppid/euid read the current task_struct (task.go); pp, pn and probefunc
// are constant strings of the probe. Calls of script functions are inlined
// (calls.go).

// clockDivisors scale nanoseconds for the clock functions by suffix.
var clockDivisors = map[string]int32{"ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000}

// memReads are the kernel_* and user_* readers of longs: size, signed.
var memReads = map[string]struct {
	size asm.Size
	what string
}{
	"long": {asm.DWord, "long"}, "int": {asm.Word, "int"}, "short": {asm.Half, "short"},
	"char": {asm.Byte, "char"}, "pointer": {asm.DWord, "pointer"},
}

// call compiles a call returning a long (or nothing) into R0.
func (g *gen) call(c *syntax.Call) {
	name := c.Name
	switch {
	case name == "pid" || name == "tid":
		g.halfOf(asm.FnGetCurrentPidTgid, name == "pid")
	case name == "uid" || name == "gid":
		g.halfOf(asm.FnGetCurrentUidGid, name == "gid")
	case name == "target":
		g.constant(asm.R0, g.m.cfg.TargetPID)
	case name == "cpu":
		g.emit(asm.FnGetSmpProcessorId.Call())
	case name == "jiffies":
		g.emit(asm.FnJiffies64.Call())
	case name == "exit":
		g.exitRecord()
		g.emit(asm.Mov.Imm(asm.R0, 0))
	case name == "error":
		g.raise(c)
	case clockSuffix(name, "gettimeofday_") != "":
		g.clock(clockSuffix(name, "gettimeofday_"), g.m.cfg.RealtimeOffset)
	case clockSuffix(name, "local_clock_") != "":
		g.clock(clockSuffix(name, "local_clock_"), 0)
	case memRead(name) != "":
		g.memRead(c, memRead(name))
	case taskPaths[name] != nil:
		g.taskField(c)
	case scriptFunc(c):
		g.inline(c)
	default:
		g.fail(c, "function %s() cannot be compiled in a kernel probe yet", name)
	}
}

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

func clockSuffix(name, prefix string) string {
	if len(name) > len(prefix) && name[:len(prefix)] == prefix {
		if _, ok := clockDivisors[name[len(prefix):]]; ok {
			return name[len(prefix):]
		}
	}
	return ""
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

// memRead is the kind of a kernel_*/user_* long reader, or "".
func memRead(name string) string {
	for _, p := range []string{"kernel_", "user_"} {
		if len(name) > len(p) && name[:len(p)] == p {
			if _, ok := memReads[name[len(p):]]; ok {
				return name
			}
		}
	}
	return ""
}

// memRead compiles kernel_long(addr) and friends: a fault raises stap's
// error for kernel reads; user reads return 0, as the tapset's wrappers do.
func (g *gen) memRead(c *syntax.Call, name string) {
	kernel := name[0] == 'k'
	kind := name[len("user_"):]
	fn := asm.FnProbeReadUser
	if kernel {
		kind = name[len("kernel_"):]
		fn = asm.FnProbeReadKernel
	}
	r := memReads[kind]
	g.long(c.Args[0])
	slot := g.pushSlot()
	g.emit(
		asm.Mov.Reg(regRec, asm.R0),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, int32(r.size.Sizeof())),
		fn.Call(),
	)
	if kernel {
		g.emit(asm.JNE.Imm(asm.R0, 0, g.errorSite("kernel "+r.what+" copy fault at 0x%x [man error::fault]", c.Pos, true)))
	} else {
		ok := g.newLabel("read")
		g.emit(asm.JEq.Imm(asm.R0, 0, ok), asm.StoreImm(asm.R10, slot, 0, asm.Word), asm.StoreImm(asm.R10, slot+4, 0, asm.Word))
		g.mark(ok)
	}
	if r.size == asm.DWord {
		g.emit(asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord))
	} else {
		g.emit(asm.LoadMemSX(asm.R0, asm.R10, slot, r.size))
	}
	g.popStack(8)
}

// raise compiles error(msg) with a literal message.
func (g *gen) raise(c *syntax.Call) {
	lit, ok := c.Args[0].(*syntax.StringLit)
	if !ok {
		g.fail(c, "error() in a kernel probe needs a literal message")
		return
	}
	g.emit(asm.Ja.Label(g.errorSite(lit.Value, syntax.Pos{}, false)))
}

// strCall compiles a call returning a string.
func (g *gen) strCall(c *syntax.Call) value {
	switch c.Name {
	case "execname":
		v := g.strSlot(commLen)
		g.comm(v.off)
		return v
	case "kernel_string", "kernel_string_n", "user_string", "user_string_n":
		return g.readString(c)
	case "syscall_name":
		return g.syscallName(c)
	case "pp":
		return g.strLit(g.probe.Name)
	case "pn":
		return g.strLit(probes.ComponentsString(g.probe.User.Components))
	case "probefunc":
		// stap's probefunc() is symname(addr()); a tracepoint has no
		// registers, so addr() is 0 and symname prints it in hex.
		return g.strLit("0x0")
	}
	if scriptFunc(c) {
		return g.inline(c)
	}
	g.fail(c, "function %s() cannot be compiled in a kernel probe yet", c.Name)
	return g.strSlot(8)
}

// readString compiles kernel_string(addr[, n]) and user_string(addr[, n]).
func (g *gen) readString(c *syntax.Call) value {
	width := g.m.cfg.MaxStringLen
	dst := g.strSlot(width)
	limit := width
	if len(c.Args) > 1 {
		n, ok := c.Args[1].(*syntax.NumberLit)
		if !ok {
			g.fail(c, "%s() in a kernel probe needs a literal length", c.Name)
			return dst
		}
		limit = int(min(max(n.Value, 0), int64(width-1))) + 1
	}
	fn, what := asm.FnProbeReadKernelStr, "kernel string copy fault at 0x%x [man error::fault]"
	if c.Name[0] == 'u' {
		fn, what = asm.FnProbeReadUserStr, "user string copy fault "+strconv.Itoa(-14)+" at 0x%x [man error::fault]"
	}
	g.long(c.Args[0])
	g.emit(asm.Mov.Reg(regRec, asm.R0))
	g.readStr(fn, dst, func() { g.emit(asm.Mov.Reg(asm.R3, regRec)) }, limit)
	g.emit(asm.JSLT.Imm(asm.R0, 0, g.errorSite(what, c.Pos, true)))
	return dst
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// targetVar compiles a context expression ($param, $p->a->b, @cast) as
// sema resolved it (Program.Targets): the base is argument Param of the
// attach point (loadArg) or the cast's operand; each offset of the path
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
		g.loadArg(acc.Param)
	default:
		c, ok := e.(*syntax.Cast)
		if !ok {
			g.fail(e, "%s cannot be compiled in a kernel probe yet", syntax.ExprString(e))
			return
		}
		g.long(c.Operand)
	}
	g.readPath(acc.Path, acc.Address, e.Position())
}

// loadArg loads argument i of the attach point into R0 from where its ABI
// puts it in the context (attach.Loc): an args[] word, a pt_regs slot, a
// field of a trace record.
func (g *gen) loadArg(i int) {
	loc := g.attach.Args[i].Loc
	g.emit(asm.LoadMem(asm.R0, regCtx, int16(loc.Offset), sizeOf(loc.Size)))
	if bits := int32(64 - 8*loc.Size); loc.Signed && bits > 0 {
		g.emit(asm.LSh.Imm(asm.R0, bits), asm.ArSh.Imm(asm.R0, bits))
	}
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
// it: each offset after the first follows a pointer load, then Size bytes
// are loaded (sign-extended when Signed) unless address asks for the final
// address itself. A fault raises stap's read error at at.
func (g *gen) readPath(path *kernel.Path, address bool, at syntax.Pos) {
	if path == nil || len(path.Offsets) == 0 {
		return
	}
	fault := func() string { return g.errorSite("kernel read fault at 0x%x [man error::fault]", at, true) }
	slot := g.pushSlot()
	for i, off := range path.Offsets {
		if i > 0 {
			g.kread(slot, 8, fault())
		}
		g.constant(asm.R1, off)
		g.emit(asm.Add.Reg(asm.R0, asm.R1))
	}
	if !address {
		size := min(int(path.Size), 8)
		g.kread(slot, size, fault())
		if path.Signed && size < 8 {
			g.emit(asm.LSh.Imm(asm.R0, int32(64-8*size)), asm.ArSh.Imm(asm.R0, int32(64-8*size)))
		}
	}
	g.popStack(8)
}

// kread replaces the address in R0 by the size bytes (zero-extended) it
// points to, jumping to fault (address in regRec) when unreadable.
func (g *gen) kread(slot int16, size int, fault string) {
	g.emit(
		asm.Mov.Reg(regRec, asm.R0),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Mov.Imm(asm.R0, 0),
		asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, int32(size)),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, fault),
		asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord),
	)
}
