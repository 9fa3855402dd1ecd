package bpfgen

import (
	"os"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf/asm"
)

// Builtins in kernel probes. tapset's table says what a kernel probe may do
// with each builtin (tapset.Kernel); the elaborator refuses the rest with
// the table's message, and so does the code generator, with the same
// message, should such a call reach it. builtinCodes compiles every
// builtin the table marks InKernel (a test holds the two to each other);
// Captured builtins are compiled where they are printed (print.go).

// builtinCode compiles one builtin: a long result (or none) into R0, or a
// string result into the scratch slot it returns.
type builtinCode struct {
	long func(g *gen, c *syntax.Call)
	str  func(g *gen, c *syntax.Call) value
}

func longCode(f func(g *gen, c *syntax.Call)) builtinCode      { return builtinCode{long: f} }
func strCode(f func(g *gen, c *syntax.Call) value) builtinCode { return builtinCode{str: f} }

// builtinCodes holds the code of every InKernel builtin, by name. (The
// code calls back into the compiler, which looks builtins up here: hence
// init.)
var builtinCodes map[string]builtinCode

func init() { builtinCodes = kernelBuiltins() }

func kernelBuiltins() map[string]builtinCode {
	codes := map[string]builtinCode{
		"pid":                 longCode(func(g *gen, c *syntax.Call) { g.idField(c, asm.FnGetCurrentPidTgid, true) }),
		"tid":                 longCode(func(g *gen, c *syntax.Call) { g.idField(c, asm.FnGetCurrentPidTgid, false) }),
		"uid":                 longCode(func(g *gen, c *syntax.Call) { g.idField(c, asm.FnGetCurrentUidGid, false) }),
		"gid":                 longCode(func(g *gen, c *syntax.Call) { g.idField(c, asm.FnGetCurrentUidGid, true) }),
		"target":              longCode(func(g *gen, _ *syntax.Call) { g.constant(asm.R0, g.m.cfg.TargetPID) }),
		"cpu":                 longCode(func(g *gen, _ *syntax.Call) { g.emit(asm.FnGetSmpProcessorId.Call()) }),
		"jiffies":             longCode(func(g *gen, _ *syntax.Call) { g.emit(asm.FnJiffies64.Call()) }),
		"exit":                longCode(func(g *gen, _ *syntax.Call) { g.exitRecord(); g.emit(asm.Mov.Imm(asm.R0, 0)) }),
		"error":               longCode((*gen).raise),
		"__error_at_call":     longCode((*gen).raiseAtCall),
		"ppid":                longCode((*gen).taskField),
		"euid":                longCode((*gen).taskField),
		"egid":                longCode((*gen).taskField),
		"cmdline_str":         strCode((*gen).cmdlineStr),
		"__task_current":      longCode(func(g *gen, _ *syntax.Call) { g.task() }),
		"__context_task":      longCode(func(*gen, *syntax.Call) {}), // sema took its argument: contexttask.go
		"__context_var":       longCode(func(*gen, *syntax.Call) {}), // sema substituted it: contextvars.go
		"execname":            strCode(func(g *gen, _ *syntax.Call) value { v := g.strSlot(commLen); g.comm(v.off); return v }),
		"pp":                  strCode((*gen).pp),
		"pn":                  strCode((*gen).pn),
		"ppfunc":              strCode(func(g *gen, _ *syntax.Call) value { return g.pointText(columnPPFunc, tapset.PPFunc(g.ownProbe().Name)) }),
		"probefunc":           strCode((*gen).probefunc),
		"register":            longCode((*gen).registerRead),
		"u_register":          longCode((*gen).registerRead),
		"@kregister":          longCode((*gen).dwarfRegister),
		"@uregister":          longCode((*gen).dwarfRegister),
		"@kderef":             longCode((*gen).deref),
		"@uderef":             longCode((*gen).deref),
		"returnval":           longCode((*gen).returnval),
		"syscall_name":        strCode((*gen).syscallName),
		"__syscall_compat":    longCode(func(g *gen, _ *syntax.Call) { g.syscallCompat() }),
		"__syscall_native_nr": longCode((*gen).syscallNativeNr),
		"__syscall_in":        longCode((*gen).syscallIn),
		"__syscall_tail":      longCode((*gen).syscallTail),
		"__perf_read":         longCode((*gen).perfRead),
		"__perf_counters":     longCode(func(g *gen, _ *syntax.Call) { g.constant(asm.R0, int64(len(g.m.prog.PerfCounters))) }),
		"__perf_dev":          longCode(func(g *gen, c *syntax.Call) { g.perfConstant(c, func(p probes.PerfCounter) uint64 { return p.Dev }) }),
		"__perf_ino":          longCode(func(g *gen, c *syntax.Call) { g.perfConstant(c, func(p probes.PerfCounter) uint64 { return p.Ino }) }),
		"addr":                longCode((*gen).addr),
		"__func_addr":         longCode((*gen).funcAddr),
		"uaddr":               longCode((*gen).uaddr),
		"caller_addr":         longCode((*gen).callerAddr),
		"user_mode":           longCode((*gen).userMode),
		"__ustack_raw":        longCode((*gen).userStackAt),
		"__stack_raw":         longCode((*gen).stackAt),
		"task_backtrace":      strCode((*gen).taskBacktrace),
		"__callers":           strCode(callersToken(KernelCallers)),
		"__ucallers":          strCode(callersToken(UserCallers)),
		"__stack_pointer":     longCode((*gen).stackPointer),
		"registers_valid":     longCode((*gen).registersValid),
		"string_quoted":       strCode((*gen).stringQuoted),
		"symname":             strCode((*gen).symname),
		"pid2task":            longCode((*gen).pid2task),
		"pid2execname":        strCode((*gen).pid2execname),
		"HZ":                  longCode(func(g *gen, _ *syntax.Call) { g.constant(asm.R0, int64(g.m.cfg.Kernel.HZ())) }),
		"mem_page_size":       longCode(func(g *gen, _ *syntax.Call) { g.constant(asm.R0, int64(os.Getpagesize())) }),
		"__maxstringlen":      longCode(func(g *gen, _ *syntax.Call) { g.constant(asm.R0, int64(g.m.maxStr)) }),
		"modname":             strCode((*gen).modname),
		"strlen":              longCode((*gen).strlen),
		"substr":              strCode((*gen).substr),
		"stringat":            longCode((*gen).stringat),
		"strpos":              longCode((*gen).strpos),
		"isinstr":             longCode((*gen).strpos),
		"str_replace":         strCode((*gen).strReplace),
		"strtol":              longCode((*gen).strtol),
		"randint":             longCode((*gen).randint),
		"raise":               longCode((*gen).raiseSignal),
		"tokenize":            strCode((*gen).tokenize),
		"mdelay":              longCode((*gen).delay),
		"udelay":              longCode((*gen).delay),

		// the netfilter tapset's data_str and data_hex (buffers.go)
		"__kernel_buffer_quoted":     strCode((*gen).bufferQuoted),
		"kernel_buffer_quoted_error": strCode((*gen).bufferQuoted),
		"user_buffer_quoted":         strCode((*gen).bufferQuoted),
		"user_buffer_quoted_error":   strCode((*gen).bufferQuoted),
		"__unread_user_address":      strCode((*gen).unreadUserAddress), // quoted.stp's
		"__user_string_raw":          strCode((*gen).userStringRaw),
		"__kernel_buffer_hex":        strCode((*gen).kernelBufferHex),
	}
	for name, form := range stackForms {
		codes[name] = strCode(func(g *gen, _ *syntax.Call) value { return g.stackToken(form) })
	}
	for name, form := range map[string]SymForm{"usymname": SymName, "usymdata": SymData, "umodname": SymModule,
		"usymfile": SymFile, "usymline": SymLine, "usymfileline": SymFileLine} {
		codes[name] = strCode(func(g *gen, c *syntax.Call) value { return g.symToken(form, c) })
	}
	// get_cycles: no cycle counter is readable from BPF; the kernel's
	// monotonic clock in ns, as user-side probes read it.
	codes["get_cycles"] = longCode(func(g *gen, _ *syntax.Call) { g.clock("ns", 0) })
	for unit := range clockDivisors {
		codes["gettimeofday_"+unit] = longCode(func(g *gen, _ *syntax.Call) { g.clock(unit, g.m.cfg.RealtimeOffset) })
		codes["local_clock_"+unit] = longCode(func(g *gen, _ *syntax.Call) { g.clock(unit, 0) })
		codes["cpu_clock_"+unit] = longCode(func(g *gen, c *syntax.Call) { g.cpuClock(unit, c) })
	}
	for name := range tapset.UserWrites {
		codes[name] = longCode((*gen).userWrite)
	}
	codes["set_user_string"] = longCode((*gen).userWriteString)
	codes["set_user_string_n"] = longCode((*gen).userWriteString)
	for name := range tapset.ArgReaders {
		codes[name] = longCode((*gen).argReader)
	}
	for name := range tapset.NumberReads {
		codes[name] = longCode((*gen).memRead)
	}
	for _, name := range []string{"kernel_string", "kernel_string_n", "user_string", "user_string_n", "user_string2", "kernel_string2"} {
		codes[name] = strCode((*gen).readString)
	}
	return codes
}

// builtin returns the code of the builtin c calls, or fails, with tapset's
// message, when a kernel probe cannot run it (a call whose value is only
// printed never gets here: print.go captures it).
func (g *gen) builtin(c *syntax.Call) (builtinCode, bool) {
	b := sema.Builtin(c)
	if b == nil {
		g.fail(c, "function %s() cannot be compiled in a kernel probe", c.Name)
		return builtinCode{}, false
	}
	if msg := b.KernelError(c.Args, false); msg != "" {
		g.fail(c, "%s", msg)
		return builtinCode{}, false
	}
	code, ok := builtinCodes[b.Name]
	if !ok {
		g.fail(c, "function %s() has no BPF code (tapset marks it compiled)", c.Name)
	}
	return code, ok
}

// call compiles a call returning a long (or nothing) into R0.
func (g *gen) call(c *syntax.Call) {
	if scriptFunc(c) {
		g.inline(c)
		return
	}
	if b := sema.Builtin(c); b != nil && b.Kernel == tapset.Deferred {
		g.deferred(c)
		return
	}
	if code, ok := g.builtin(c); ok && code.long != nil {
		code.long(g, c)
	}
}

// strCall compiles a call returning a string.
func (g *gen) strCall(c *syntax.Call) value {
	if scriptFunc(c) {
		return g.inline(c)
	}
	if code, ok := g.builtin(c); ok && code.str != nil {
		return code.str(g, c)
	}
	return g.strSlot(8)
}
