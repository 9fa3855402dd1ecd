// Package tapset holds bpftap's tapset library: the functions and probe aliases a
// script can use without defining them. Functions that can be written in the script
// language live in the embedded .stp files; the ones that need the runtime are
// builtins, declared here by signature and implemented by the interpreter (and, for
// those that can run in a kernel probe, by the BPF code generator).
package tapset

import "github.com/bpftap/bpftap/internal/syntax"

// Builtin is the signature of a natively implemented tapset function.
type Builtin struct {
	Name   string
	Params []syntax.Type
	// ParamNames are the parameter names of stap's tapset (the -p2 listing
	// shows them), one per Params entry.
	ParamNames []string
	Result     syntax.Type // TypeUnknown means the function returns nothing (stap's "unknown")
	// UserOnly marks functions that only make sense in user-side probes (begin, end,
	// timers); the elaborator refuses them in kernel probes.
	UserOnly bool
	// SideEffects marks the functions stap never elides: those its tapset does
	// not declare pure (output, control, delays, state such as tokenize's or
	// randint's). A call of any other builtin whose value is unused is dropped.
	SideEffects bool
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

func fn(name string, result syntax.Type, params ...param) *Builtin {
	b := &Builtin{Name: name, Result: result}
	for _, p := range params {
		b.Params = append(b.Params, p.typ)
		b.ParamNames = append(b.ParamNames, p.name)
	}
	return b
}

func userFn(name string, result syntax.Type, params ...param) *Builtin {
	b := fn(name, result, params...)
	b.UserOnly = true
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
	effects(fn("exit", none)),
	effects(fn("error", none, s("msg"))),
	effects(fn("warn", none, s("msg"))),
	effects(fn("abort", none)),
	effects(fn("log", none, s("msg"))),
	// strings
	fn("strlen", long, s("s")),
	fn("substr", str, s("str"), l("start"), l("length")),
	fn("stringat", long, s("str"), l("pos")),
	fn("isinstr", long, s("s1"), s("s2")),
	fn("strpos", long, s("s1"), s("s2")),
	fn("str_replace", str, s("prnt_str"), s("srch_str"), s("rplc_str")),
	effects(fn("tokenize", str, s("input"), s("delim"))),
	fn("text_str", str, s("input")),
	fn("text_strn", str, s("input"), l("len"), l("quoted")),
	fn("string_quoted", str, s("str")),
	fn("strtol", long, s("str"), l("base")),
	fn("isdigit", long, s("str")),
	// regular expressions
	fn("matched", str, l("n")),
	fn("matched_str", str),
	fn("ngroups", long),
	// time
	fn("gettimeofday_s", long),
	fn("gettimeofday_ms", long),
	fn("gettimeofday_us", long),
	fn("gettimeofday_ns", long),
	fn("local_clock_s", long),
	fn("local_clock_ms", long),
	fn("local_clock_us", long),
	fn("local_clock_ns", long),
	fn("cpu_clock_s", long, l("cpu")),
	fn("cpu_clock_ms", long, l("cpu")),
	fn("cpu_clock_us", long, l("cpu")),
	fn("cpu_clock_ns", long, l("cpu")),
	fn("jiffies", long),
	fn("HZ", long),
	fn("get_cycles", long),
	userFn("ctime", str, l("epochsecs")),
	userFn("tz_ctime", str, l("epochsecs")),
	userFn("tz_gmtoff", long),
	userFn("tz_name", str),
	// process context
	fn("pid", long),
	fn("tid", long),
	fn("ppid", long),
	fn("uid", long),
	fn("euid", long),
	fn("gid", long),
	fn("egid", long),
	fn("execname", str),
	fn("cpu", long),
	fn("target", long),
	fn("pp", str),
	fn("pn", str),
	fn("probefunc", str),
	fn("user_mode", long),
	fn("is_return", long),
	fn("mem_page_size", long),
	fn("stp_pid", long),
	effects(fn("randint", long, l("n"))),
	fn("syscall_name", str, l("num")), // see SyscallName
	effects(userFn("env_var", str, s("name"))),
	userFn("cmdline_str", str),
	// memory of traced processes and the kernel
	fn("kernel_string", str, l("addr")),
	fn("kernel_string_n", str, l("addr"), l("n")),
	fn("kernel_long", long, l("addr")),
	fn("kernel_int", long, l("addr")),
	fn("kernel_short", long, l("addr")),
	fn("kernel_char", long, l("addr")),
	fn("kernel_pointer", long, l("addr")),
	fn("user_string", str, l("addr")),
	fn("user_string_n", str, l("addr"), l("n")),
	fn("user_long", long, l("addr")),
	fn("user_int", long, l("addr")),
	fn("user_short", long, l("addr")),
	fn("user_char", long, l("addr")),
	// system
	effects(userFn("system", none, s("cmd"))),
	effects(userFn("mdelay", none, l("ms"))),
	effects(userFn("udelay", none, l("us"))),
)

func index(list ...*Builtin) map[string]*Builtin {
	m := make(map[string]*Builtin, len(list))
	for _, b := range list {
		m[b.Name] = b
	}
	return m
}
