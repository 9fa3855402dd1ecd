// Package tapset holds bpftap's tapset library: the functions and probe aliases a
// script can use without defining them. Functions that can be written in the script
// language live in the embedded .stp files; the ones that need the runtime are
// builtins, declared here once: by signature, and by what a kernel probe may do with
// them. The elaborator types calls and refuses in kernel probes what this table
// refuses; the interpreter implements every builtin for user-side probes; the BPF code
// generator compiles those marked InKernel. Tests hold both implementations to the
// table. runtime.go holds the runtime's limits and its error messages, which the
// interpreter and the code generator share.
package tapset

import (
	"fmt"
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
)

// Builtin is a natively implemented tapset function.
type Builtin struct {
	Name   string
	Params []syntax.Type
	// ParamNames are the parameter names of stap's tapset (the -p2 listing
	// shows them), one per Params entry.
	ParamNames []string
	Result     syntax.Type // TypeUnknown means the function returns nothing (stap's "unknown")
	// SideEffects marks the functions stap never elides: those its tapset does
	// not declare pure (output, control, delays, state such as tokenize's or
	// randint's). A call of any other builtin whose value is unused is dropped.
	SideEffects bool
	// Kernel is what a kernel probe may do with a call.
	Kernel Kernel
	// Literal is the argument (1-based; 0: none) that a kernel probe must give
	// as a literal: the BPF code needs its value when compiling.
	Literal int
	// LiteralCheck, if set, says why a string Literal argument is not one
	// the BPF code can compile.
	LiteralCheck func(string) error
	// KernelOnly builtins read what only a kernel probe has (its stack,
	// its system call): the elaborator refuses them in code that
	// user-side probes reach (KernelOnlyMsg).
	KernelOnly bool
	// Stack builtins read the probe's stack (backtrace(), the stack
	// pointer, a frame): a user-side probe has none, so there they give an
	// empty stack ("", 0: stack(n) is past its end).
	Stack bool
	// InProcess Captured builtins read the address space of the current
	// process (user-space symbols): a kernel probe captures the process's
	// pid before their arguments.
	InProcess bool
	// Unsupported, when set, is why no probe can run the builtin: the
	// elaborator refuses every call with it.
	Unsupported string
	// Guru builtins are refused without -g, as stap's tapset marks them
	// (GuruOnlyMsg).
	Guru bool
	// Text builtins return the lines a print_* function prints whole
	// (print_backtrace's frames): no string value, so never cut at
	// MAXSTRINGLEN, nor at the room of one print call.
	Text bool
}

// KernelOnlyMsg is the message for a call of a function (what) that reads
// what only a kernel probe has (its stack, its system call, the task its
// alias names), reached from a user-side probe. (Kernel memory, read
// through types or not, and tasks found by pid run there: package kmem.)
func KernelOnlyMsg(what string) string {
	return what + " reads the event a kernel probe handles (its stack, system call or task), which begin, end, error and timer probes do not have"
}

// Kernel is what a kernel probe (a BPF program) may do with a builtin.
type Kernel uint8

const (
	// UserSpace builtins run in user-side probes only: the elaborator refuses
	// them in kernel probes.
	UserSpace Kernel = iota
	// InKernel builtins are compiled to BPF.
	InKernel
	// Deferred builtins act in user space (system's command, log's and
	// warn's lines) and return nothing: a kernel probe sends the call's
	// arguments in a record, and user space makes the call when it reads the
	// record, in order with the probe's output.
	Deferred
	// Captured builtins are pure functions of their arguments that the kernel
	// probe does not compute: it captures their arguments in the print record
	// and user space computes the value when it formats the record. So a
	// kernel probe may only print their value: a call must be an argument of
	// a print-family call (not of an s* one), or of another Captured call.
	Captured
)

// KernelError is the message for a call of b that a kernel probe cannot
// run as written, or "" when it can: a UserSpace builtin, or an InKernel
// one whose Literal argument is not a literal. printed tells whether the
// call's value is only printed.
func (b *Builtin) KernelError(args []syntax.Expr, printed bool) string {
	switch {
	case b.Unsupported != "":
		return b.Unsupported
	case b.Kernel == UserSpace:
		return UserSpaceOnly(fmt.Sprintf("function '%s'", b.Name))
	case b.Kernel == Captured && !printed:
		return fmt.Sprintf("the value of '%s' is computed in user space: a kernel probe can only print it", b.Name)
	case b.Literal > 0 && b.Literal <= len(args):
		if lit, ok := args[b.Literal-1].(*syntax.StringLit); ok {
			if err := b.literalError(lit.Value); err != nil {
				return fmt.Sprintf("%s() in a kernel probe needs a literal %s: %v", b.Name, b.ParamNames[b.Literal-1], err)
			}
			return ""
		}
		if _, ok := args[b.Literal-1].(*syntax.NumberLit); ok {
			return ""
		}
		return fmt.Sprintf("%s() in a kernel probe needs a literal %s", b.Name, b.ParamNames[b.Literal-1])
	}
	return ""
}

// RunningThreadMsg is the message for a call of builtin name, which reads
// the registers, memory or stacks of the thread running on the CPU, in a
// probe whose context is another task (sema's context tasks).
func RunningThreadMsg(name string) string {
	return fmt.Sprintf("%s() reads the thread running on the CPU, which is not this probe's task: "+
		"bpftap runs scheduler.cpu_on at sched_switch, before the task it names runs", name)
}

// NoTaskStackMsg is the message for a call of builtin name, which takes
// the kernel stack, in a probe whose context task (task, as written)
// bpf_get_task_stack cannot take.
func NoTaskStackMsg(name, task string) string {
	return fmt.Sprintf("%s() takes the stack of this probe's task with bpf_get_task_stack, which needs the task "+
		"as a pointer argument of a BTF-typed tracepoint (tp_btf); this probe's task (%s) is not one", name, task)
}

// GuruOnlyMsg is stap's message for a call of a Guru builtin without -g.
const GuruOnlyMsg = "function may not be used unless -g is specified"

// UserSpaceOnly is the message for a construct (what) that only user-side
// probes run.
func UserSpaceOnly(what string) string {
	return what + " cannot run in a kernel probe (bpftap runs it in user space only)"
}

// param is one parameter of a builtin's signature.
type param struct {
	name string
	typ  syntax.Type
}

const (
	long = syntax.TypeLong
	str  = syntax.TypeString
	none = syntax.TypeUnknown
)

func l(name string) param { return param{name, long} }
func s(name string) param { return param{name, str} }

// fn declares a builtin that runs in user space only.
func fn(name string, result syntax.Type, params ...param) *Builtin {
	b := &Builtin{Name: name, Result: result}
	for _, p := range params {
		b.Params = append(b.Params, p.typ)
		b.ParamNames = append(b.ParamNames, p.name)
	}
	return b
}

// bpf marks b compiled to BPF.
func bpf(b *Builtin) *Builtin {
	b.Kernel = InKernel
	return b
}

// literalError is LiteralCheck's verdict on a string literal, nil without one.
func (b *Builtin) literalError(lit string) error {
	if b.LiteralCheck == nil {
		return nil
	}
	return b.LiteralCheck(lit)
}

// bpfLiteral marks b compiled to BPF, argument i (1-based) a literal.
func bpfLiteral(i int, b *Builtin) *Builtin {
	b.Literal = i
	return bpf(b)
}

// setLiteral marks __syscall_in's set a literal ParseSyscallSet reads.
func setLiteral(b *Builtin) *Builtin {
	b.Literal = 2
	b.LiteralCheck = func(set string) error {
		_, err := ParseSyscallSet(set)
		return err
	}
	return b
}

// kernelOnly marks b compiled to BPF and refused in user-side probes.
func kernelOnly(b *Builtin) *Builtin {
	b.KernelOnly = true
	return bpf(b)
}

// stack marks b compiled to BPF, and empty in user-side probes.
func stack(b *Builtin) *Builtin {
	b.Stack = true
	return bpf(b)
}

// unsupported marks b refused everywhere, for reason.
func unsupported(reason string, b *Builtin) *Builtin {
	b.Unsupported = fmt.Sprintf("%s() cannot run in bpftap: %s", b.Name, reason)
	b.KernelOnly = true // refused in user-side probes too
	return b
}

// noPhysicalAddress is why addr_to_node is refused: its node is that of
// the physical page under a kernel address.
const noPhysicalAddress = "BPF has no helper that maps a kernel address to its physical page, and bpftap does not know " +
	"the base of the kernel's direct map (page_offset_base, randomized at boot), which a kernel shows only among the " +
	"data symbols of /proc/kallsyms (CONFIG_KALLSYMS_ALL)"

// noKernelWrite is why set_kernel_* are refused.
const noKernelWrite = "BPF programs cannot write kernel memory: no helper does (bpf_probe_write_user writes " +
	"only the current process's memory)"

// captured marks b computed in user space from arguments a kernel probe captures.
func captured(b *Builtin) *Builtin {
	b.Kernel = Captured
	return b
}

// deferred marks b made in user space when a kernel probe's record of
// the call arrives.
func deferred(b *Builtin) *Builtin {
	b.Kernel = Deferred
	return effects(b)
}

// inProcess marks b computed in user space, in the current process's
// address space.
func inProcess(b *Builtin) *Builtin {
	b.InProcess = true
	return captured(b)
}

// text marks b's value lines that print() writes whole (Builtin.Text).
func text(b *Builtin) *Builtin {
	b.Text = true
	return b
}

// userWriter marks b a guru mode's writer of the current process's
// memory, which kernel probes run: a user-side probe has no process.
func userWriter(b *Builtin) *Builtin {
	return guru(kernelOnly(effects(b)))
}

// guru marks b refused without -g.
func guru(b *Builtin) *Builtin {
	b.Guru = true
	return b
}

func effects(b *Builtin) *Builtin {
	b.SideEffects = true
	return b
}

// Builtins maps function names to their signatures. Overloads by arity are not
// needed by the functions declared here; optional trailing arguments are written as
// separate tapset functions in the .stp library.
var Builtins = index(
	// control
	bpf(effects(fn("exit", none))),
	bpfLiteral(1, effects(fn("error", none, s("msg")))),
	// __error_at_call(msg): error(msg) raised near the call of the script
	// function that calls it, as stap locates the errors of its tapset's C
	// functions (ctime's range errors: tapset/ctime.stp)
	bpfLiteral(1, effects(fn("__error_at_call", none, s("msg")))),
	deferred(fn("warn", none, s("msg"))),
	effects(fn("abort", none)),
	deferred(fn("log", none, s("msg"))),
	// speculative output, held in user space (interp/speculative.go)
	deferred(fn("speculate", none, l("id"), s("output"))),
	deferred(fn("commit", none, l("id"))),
	deferred(fn("discard", none, l("id"))),
	// strings (in kernel probes: bpfgen/strfuncs.go)
	bpf(fn("strlen", long, s("s"))),
	bpf(fn("substr", str, s("str"), l("start"), l("length"))),
	bpf(fn("stringat", long, s("str"), l("pos"))),
	bpf(fn("isinstr", long, s("s1"), s("s2"))),
	bpf(fn("strpos", long, s("s1"), s("s2"))),
	bpf(fn("str_replace", str, s("prnt_str"), s("srch_str"), s("rplc_str"))),
	// tokenize: bpfgen/tokenize.go (its state per CPU and program)
	bpf(effects(fn("tokenize", str, s("input"), s("delim")))),
	captured(fn("text_str", str, s("input"))),
	captured(fn("text_strn", str, s("input"), l("len"), l("quoted"))),
	bpf(fn("string_quoted", str, s("str"))), // bpfgen/quoting.go
	bpf(fn("strtol", long, s("str"), l("base"))),
	captured(fn("isdigit", long, s("str"))),
	// regular expressions
	fn("matched", str, l("n")),
	fn("matched_str", str),
	fn("ngroups", long),
	// time
	bpf(fn("gettimeofday_s", long)),
	bpf(fn("gettimeofday_ms", long)),
	bpf(fn("gettimeofday_us", long)),
	bpf(fn("gettimeofday_ns", long)),
	bpf(fn("local_clock_s", long)),
	bpf(fn("local_clock_ms", long)),
	bpf(fn("local_clock_us", long)),
	bpf(fn("local_clock_ns", long)),
	bpf(fn("cpu_clock_s", long, l("cpu"))),
	bpf(fn("cpu_clock_ms", long, l("cpu"))),
	bpf(fn("cpu_clock_us", long, l("cpu"))),
	bpf(fn("cpu_clock_ns", long, l("cpu"))),
	bpf(fn("jiffies", long)),
	bpf(fn("HZ", long)),
	bpf(fn("get_cycles", long)),
	captured(fn("tz_ctime", str, l("epochsecs"))),
	fn("tz_gmtoff", long),
	fn("tz_name", str),
	// process context
	bpf(fn("pid", long)),
	bpf(fn("tid", long)),
	bpf(fn("ppid", long)),
	bpf(fn("uid", long)),
	bpf(fn("euid", long)),
	bpf(fn("gid", long)),
	bpf(fn("egid", long)),
	bpf(fn("execname", str)),
	bpf(fn("cpu", long)),
	bpf(fn("target", long)),
	bpf(fn("pp", str)),
	// ppfunc(): the function of pp(), known when the probe is compiled
	// (PPFunc)
	bpf(fn("ppfunc", str)),
	bpf(fn("pn", str)),
	bpf(fn("probefunc", str)),
	bpf(fn("user_mode", long)),
	bpf(fn("addr", long)),
	// __func_addr(): the probed kernel function's address, at its entry
	// and its return alike (bpf_get_func_ip; addr() of a kretprobe is
	// where the function returns to): the key of a wildcard's @entry
	// values (sema/entry.go)
	kernelOnly(fn("__func_addr", long)),
	bpf(fn("uaddr", long)),
	bpf(fn("caller_addr", long)),
	// stacks (bpfgen/stacks.go): taken in kernel probes (empty in
	// user-side ones), symbolized
	// in user space; symname and friends symbolize kernel addresses
	// (package ksym), usymname and friends user addresses (package usym),
	// where the value is printed
	stack(fn("backtrace", str)),
	stack(fn("sprint_backtrace", str)),
	stack(fn("ubacktrace", str)),
	stack(fn("sprint_ubacktrace", str)),
	// __stack_pointer(): where the kernel probe's frame is on the kernel
	// stack (context.stp's stack_used, stack_unused)
	stack(fn("__stack_pointer", long)),
	// __ustack_raw(n): frame n of the user stack, 0 past its end
	// (context_symbols.stp's ustack)
	stack(fn("__ustack_raw", long, l("n"))),
	// __stack_raw(n): frame n of the kernel stack as backtrace() shows it,
	// 0 past its end (context_symbols.stp's stack)
	stack(fn("__stack_raw", long, l("n"))),
	// __callers(n), __ucallers(n): callers(n)'s and ucallers(n)'s text of
	// the kernel or user stack, n >= -1 (context_symbols.stp)
	stack(fn("__callers", str, l("n"))),
	stack(fn("__ucallers", str, l("n"))),
	// task_backtrace(task): backtrace() of a task (bpfgen/taskbacktrace.go)
	kernelOnly(fn("task_backtrace", str, l("task"))),
	bpf(fn("symname", str, l("addr"))), // bpfgen/symbols.go: searched in the kernel
	bpf(fn("modname", str, l("addr"))),
	captured(fn("symdata", str, l("addr"))),
	captured(fn("sprint_stack", str, s("stk"))),
	captured(fn("sprint_syms", str, s("callers"))), // stap's sprint_stack is sprint_syms
	// __syms_lines(callers): print_syms's text
	text(captured(fn("__syms_lines", str, s("callers")))),
	// __backtrace_lines(stk): print_backtrace's text (an address without a
	// symbol alone on its line)
	text(captured(fn("__backtrace_lines", str, s("stk")))),
	// __backtrace_fileline_lines(stk): print_backtrace_fileline's text
	// (with the kernel's source lines where its DWARF is installed)
	text(captured(fn("__backtrace_fileline_lines", str, s("stk")))),
	// user-space symbols (package usym), of the current process's
	// addresses; in kernel probes a token that user space symbolizes
	// (bpfgen/usymbols.go)
	bpf(fn("usymname", str, l("addr"))),
	bpf(fn("usymdata", str, l("addr"))),
	bpf(fn("umodname", str, l("addr"))),
	bpf(fn("usymfile", str, l("addr"))),
	bpf(fn("usymline", str, l("addr"))),
	bpf(fn("usymfileline", str, l("addr"))),
	inProcess(fn("sprint_ustack", str, s("stk"))),
	// __ustack_lines(stk): print_ustack's text
	text(inProcess(fn("__ustack_lines", str, s("stk")))),
	// __ustack_brief_lines(stk): print_ubacktrace_brief's text
	text(inProcess(fn("__ustack_brief_lines", str, s("stk")))),
	// __ustack_fileline_lines(stk): print_ubacktrace_fileline's text
	text(inProcess(fn("__ustack_fileline_lines", str, s("stk")))),
	inProcess(fn("sprint_usyms", str, s("callers"))),
	// __usyms_lines(callers): print_usyms's text
	text(inProcess(fn("__usyms_lines", str, s("callers")))),
	fn("is_return", long),
	bpf(fn("mem_page_size", long)),
	// __maxstringlen(): MAXSTRINGLEN (the quoted readers: quoted.stp)
	bpf(fn("__maxstringlen", long)),
	// __unread_user_address(addr): addr in hex (0x%x), the quoted readers'
	// text of a user string that could not be read (quoted.stp); a kernel
	// probe counts it (a nonzero addr), and the run ends with a warning of
	// the count. User-side probes, where every read of user memory
	// faults, count none.
	bpf(fn("__unread_user_address", str, l("addr"))),
	// __user_string_raw(addr): what user space quotes for a kernel
	// probe's user_string_quoted(addr) whose text only a print uses
	// (sema/deferred.go): a mark byte, then the string at addr, at most
	// MAXSTRINGLEN-2 bytes (string_quoted never looks further); "" when it
	// cannot be read, counted as __unread_user_address counts.
	bpf(fn("__user_string_raw", str, l("addr"))),
	// __user_string_quote(addr, raw): that text from __user_string_raw's:
	// the string quoted as string_quoted quotes it, or addr in hex.
	captured(fn("__user_string_quote", str, l("addr"), s("raw"))),
	fn("stp_pid", long),
	// the load averages (interp/builtins_logging.go)
	captured(fn("sprint_loadavg", str)),
	captured(fn("get_loadavg_index", long, l("indx"))),
	// module_name(): -m NAME, else stap_PID (in a kernel probe, printed)
	captured(fn("module_name", str)),
	unsupported("bpftap loads no kernel module: a run's BPF programs and maps have no module sections to measure "+
		"(-v's pass 4 line gives their instructions)", fn("module_size", str)),
	// randint: bpfgen/random.go
	bpf(effects(fn("randint", long, l("n")))),
	bpf(fn("syscall_name", str, l("num"))), // see SyscallName
	// __syscall_compat(): nonzero while the thread makes a 32-bit (compat)
	// system call; __syscall_native_nr(nr): the number of the native call
	// the call nr is (nr itself but in a compat call; -1 for none)
	kernelOnly(fn("__syscall_compat", long)),
	// __perf_read(n): the count of @perf's counter n (the program's nth
	// perf.*.counter point) on this CPU since the run began, -1 where the
	// kernel does not read it;
	// __perf_counters(): how many counters the program has;
	// __perf_dev(n), __perf_ino(n): the device and inode of the file
	// counter n's program runs (0 for none) (perf_counter.stp,
	// bpfgen/perfcounter.go)
	kernelOnly(fn("__perf_read", long, l("n"))),
	kernelOnly(fn("__perf_counters", long)),
	kernelOnly(fn("__perf_dev", long, l("n"))),
	kernelOnly(fn("__perf_ino", long, l("n"))),
	kernelOnly(fn("__syscall_native_nr", long, l("nr"))),
	// __syscall_in(nr, set): whether nr is one of set, a literal list of
	// numbers and ranges ("0-133,135,140-155"): the calls of a probe that
	// serves many on a raw syscall tracepoint (bpfgen/syscalls.go)
	kernelOnly(setLiteral(fn("__syscall_in", long, l("nr"), s("set")))),
	// __syscall_tail(): a tail call into the second half of a merged
	// entry of system calls (sema's syscallsplit.go)
	kernelOnly(effects(fn("__syscall_tail", long))),
	// env_var(name): of the current process (a kernel probe's, read from
	// /proc/PID/environ when the record arrives; a user-side probe's is
	// bpftap's own)
	inProcess(effects(fn("env_var", str, s("name")))),
	bpf(fn("cmdline_str", str)),
	// __task_current(): the address of the current task_struct (task.stp's
	// task_current casts it; in user-side probes bpftap's own: kmem)
	bpf(fn("__task_current", long)),
	// __context_task(task), first in a kernel alias's body: the context
	// functions of the probe read task instead of the running thread
	// (scheduler.cpu_on, for the task about to run; sema/contexttask.go)
	kernelOnly(effects(fn("__context_task", none, l("task")))),
	// __context_var("name", value), in a kernel alias's body: $name is
	// value where the alias's point lacks it (ioblock.end's $bio on a
	// request's completion; sema/contextvars.go)
	bpfLiteral(1, kernelOnly(effects(fn("__context_var", none, s("name"), l("value"))))),
	// pid2task(pid): the address of the task of thread id pid, found with
	// the bpf_task_from_pid kfunc (bpfgen/tasklookup.go); the elaborator
	// asks the kernel whether the probe's program may call it; user-side
	// probes find it with a syscall program (kmem)
	bpf(fn("pid2task", long, l("pid"))),
	// pid2execname(pid): user-side probes read /proc/PID/comm
	bpf(fn("pid2execname", str, l("pid"))),
	unsupported(noPhysicalAddress, fn("addr_to_node", long, l("addr"))),
	// registers of function probes (uprobes): x86-64's calling
	// convention; other probes raise stap's errors (MsgNoArgs ...)
	bpfLiteral(1, fn("register", long, s("name"))),
	bpfLiteral(1, fn("u_register", long, s("name"))),
	bpf(fn("returnval", long)),
	// the @ operators the elaborator lowers to calls (sema/atops.go),
	// named as the operators so that only the parser writes them (and
	// checks guru mode): @kderef(size, addr) and @uderef(size, addr) read
	// size bytes of kernel or user memory, unsigned, raising DerefFault;
	// @kregister(n) and @uregister(n) read the register of DWARF number n
	// of a kernel or user function probe, raising MsgRegisterFault
	// elsewhere (bpfgen/registers.go)
	bpfLiteral(1, fn("@kderef", long, l("size"), l("addr"))),
	bpfLiteral(1, fn("@uderef", long, l("size"), l("addr"))),
	bpfLiteral(1, fn("@kregister", long, l("regno"))),
	bpfLiteral(1, fn("@uregister", long, l("regno"))),
	// registers_valid(): whether register() can read this probe's
	// registers (bpfgen's registerProbe), 0 in user-side probes
	bpf(fn("registers_valid", long)),
	// memory of traced processes and the kernel (the readers of numbers,
	// NumberReads, are declared by init)
	bpf(fn("kernel_string", str, l("addr"))),
	bpf(fn("kernel_string_n", str, l("addr"), l("n"))),
	bpf(fn("user_string", str, l("addr"))),
	bpf(fn("user_string_n", str, l("addr"), l("n"))),
	bpf(fn("user_string2", str, l("addr"), s("err_msg"))),
	bpf(fn("kernel_string2", str, l("addr"), s("err_msg"))),
	// buffers quoted (the netfilter tapset's data_str; kernel_buffer_quoted
	// is quoted.stp's: bpfgen/quoting.go), and in hex (data_hex:
	// bpfgen/buffers.go)
	bpf(fn("__kernel_buffer_quoted", str, l("addr"), l("inlen"), l("outlen"))),
	bpf(fn("kernel_buffer_quoted_error", str, l("addr"), l("inlen"), l("outlen"))),
	bpf(fn("user_buffer_quoted", str, l("addr"), l("inlen"), l("outlen"))),
	bpf(fn("user_buffer_quoted_error", str, l("addr"), l("inlen"), l("outlen"))),
	bpf(fn("__kernel_buffer_hex", str, l("addr"), l("len"))),
	// the Prometheus tapset's histogram buckets (prometheus.stpm)
	fn("__prometheus_log_bucket", long, l("v")),
	fn("__prometheus_log_le", str, l("bucket")),
	fn("__prometheus_linear_bucket", long, l("v"), l("start"), l("stop"), l("interval")),
	fn("__prometheus_linear_le", str, l("bucket"), l("start"), l("stop"), l("interval")),
	// floating point (stap's floatingpoint.stp): a long holds a double's
	// bits; pure, so a kernel probe prints them as it prints text_str
	captured(fn("fp_add", long, l("add1"), l("add2"))),
	captured(fn("fp_sub", long, l("sub1"), l("sub2"))),
	captured(fn("fp_mul", long, l("mul1"), l("mul2"))),
	captured(fn("fp_div", long, l("div1"), l("div2"))),
	captured(fn("fp_rem", long, l("div1"), l("div2"))),
	captured(fn("fp_sqrt", long, l("infp"))),
	captured(fn("fp_eq", long, l("infp1"), l("infp2"))),
	captured(fn("fp_le", long, l("infp1"), l("infp2"))),
	captured(fn("fp_lt", long, l("infp1"), l("infp2"))),
	captured(fn("long_to_fp", long, l("input"))),
	captured(fn("fp32_to_fp64", long, l("input"))),
	captured(fn("fp_to_long", long, l("infp"), l("roundingMode"), l("exact"))),
	captured(fn("fp_to_string", str, l("infp"), l("precision"))),
	captured(fn("string_to_fp", long, s("input"))),
	// the kernel's logs (interp/builtins_logging.go): printk and
	// dump_stack in guru mode, as stap's
	deferred(fn("ftrace", none, s("msg"))),
	guru(deferred(fn("printk", none, l("level"), s("msg")))),
	// writes to the current process's memory (bpfgen/userwrite.go)
	userWriter(fn("set_user_string", none, l("addr"), s("val"))),
	userWriter(fn("set_user_string_n", none, l("addr"), l("n"), s("val"))),
	// what no BPF program can do
	guru(unsupported(noKernelWrite, effects(fn("set_kernel_long", none, l("addr"), l("val"))))),
	guru(unsupported(noKernelWrite, effects(fn("set_kernel_int", none, l("addr"), l("val"))))),
	guru(unsupported(noKernelWrite, effects(fn("set_kernel_short", none, l("addr"), l("val"))))),
	guru(unsupported(noKernelWrite, effects(fn("set_kernel_char", none, l("addr"), l("val"))))),
	guru(unsupported(noKernelWrite, effects(fn("set_kernel_pointer", none, l("addr"), l("val"))))),
	guru(unsupported(noKernelWrite, effects(fn("set_kernel_string", none, l("addr"), s("val"))))),
	guru(unsupported(noKernelWrite, effects(fn("set_kernel_string_n", none, l("addr"), l("n"), s("val"))))),
	guru(unsupported("no BPF helper stops the kernel (a BPF program must not crash it)", effects(fn("panic", none, s("msg"))))),
	unsupported("it is the java(...) probes' runtime (Byteman agents in the JVM), which bpftap does not have",
		fn("sprint_java_backtrace", str)),
	unsupported("it is the java(...) probes' runtime (Byteman agents in the JVM), which bpftap does not have",
		effects(fn("print_java_backtrace", none))),
	unsupported("it is an internal of SystemTap's DWARF translator (DW_OP_GNU_push_tls_address), which bpftap's "+
		"DWARF reader does not call", fn("__push_tls_address", long, l("tls_var_offset"), s("tls_module"))),
	// system
	deferred(fn("system", none, s("cmd"))),
	effects(fn("switch_file", none)),
	// mdelay(ms), udelay(us): stap's busy delays, guru mode's; a user-side
	// probe sleeps (as stap's user-space runtime does), a kernel probe
	// spins (bpfgen/delay.go)
	guru(bpf(effects(fn("mdelay", none, l("ms"))))),
	// raise(signo): the signal to the current thread, in guru mode
	// (bpfgen/signal.go: bpf_send_signal_thread; in a user-side probe,
	// bpftap's own thread)
	guru(bpf(effects(fn("raise", none, l("signo"))))),
	guru(bpf(effects(fn("udelay", none, l("us"))))),
)

// init declares int_arg(argnum) and the other ArgReaders, and
// kernel_long(addr) and the other NumberReads, and refuses set_int_arg
// and the other writers of a probed function's arguments.
func init() {
	for name := range UserWrites {
		Builtins[name] = userWriter(fn(name, none, l("addr"), l("val")))
	}
	for _, what := range []string{"int", "uint", "long", "ulong", "longlong", "ulonglong", "pointer", "s32", "u32", "s64", "u64"} {
		name := "set_" + what + "_arg"
		Builtins[name] = guru(unsupported("a BPF program cannot change the registers or the stack of the function it probes",
			effects(fn(name, none, l("n"), l("v")))))
	}
	for name := range ArgReaders {
		Builtins[name] = bpf(fn(name, long, l("argnum")))
	}
	for name := range NumberReads {
		Builtins[name] = bpf(fn(name, long, l("addr")))
	}
}

func index(list ...*Builtin) map[string]*Builtin {
	m := make(map[string]*Builtin, len(list))
	for _, b := range list {
		m[b.Name] = b
	}
	return m
}

// PPFunc is ppfunc() of probe point pp: the function of a function("...")
// or statement("...") point, without its "@file" part; "" for other
// points.
func PPFunc(pp string) string {
	marker := `function("`
	if !strings.Contains(pp, marker) {
		marker = `statement("`
	}
	_, rest, ok := strings.Cut(pp, marker)
	if !ok {
		return ""
	}
	rest, _, _ = strings.Cut(rest, `"`)
	rest, _, _ = strings.Cut(rest, "@")
	return rest
}
