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
	Result syntax.Type // TypeUnknown means the function returns nothing (stap's "unknown")
	// UserOnly marks functions that only make sense in user-side probes (begin, end,
	// timers); the elaborator refuses them in kernel probes.
	UserOnly bool
}

const (
	long = syntax.TypeLong
	str  = syntax.TypeString
	none = syntax.TypeUnknown
)

func fn(name string, result syntax.Type, params ...syntax.Type) *Builtin {
	return &Builtin{Name: name, Params: params, Result: result}
}

func userFn(name string, result syntax.Type, params ...syntax.Type) *Builtin {
	b := fn(name, result, params...)
	b.UserOnly = true
	return b
}

// Builtins maps function names to their signatures. Overloads by arity are not
// needed by the functions declared here; optional trailing arguments are written as
// separate tapset functions in the .stp library.
var Builtins = index(
	// control
	fn("exit", none),
	fn("error", none, str),
	fn("warn", none, str),
	fn("abort", none),
	fn("log", none, str),
	// strings
	fn("strlen", long, str),
	fn("substr", str, str, long, long),
	fn("stringat", long, str, long),
	fn("isinstr", long, str, str),
	fn("strpos", long, str, str),
	fn("str_replace", str, str, str, str),
	fn("tokenize", str, str, str),
	fn("text_str", str, str),
	fn("text_strn", str, str, long, long),
	fn("string_quoted", str, str),
	fn("strtol", long, str, long),
	fn("isdigit", long, str),
	// regular expressions
	fn("matched", str, long),
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
	fn("cpu_clock_s", long, long),
	fn("cpu_clock_ms", long, long),
	fn("cpu_clock_us", long, long),
	fn("cpu_clock_ns", long, long),
	fn("jiffies", long),
	fn("HZ", long),
	fn("get_cycles", long),
	userFn("ctime", str, long),
	userFn("tz_ctime", str, long),
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
	fn("randint", long, long),
	userFn("env_var", str, str),
	userFn("cmdline_str", str),
	// memory of traced processes and the kernel
	fn("kernel_string", str, long),
	fn("kernel_string_n", str, long, long),
	fn("kernel_long", long, long),
	fn("kernel_int", long, long),
	fn("kernel_short", long, long),
	fn("kernel_char", long, long),
	fn("kernel_pointer", long, long),
	fn("user_string", str, long),
	fn("user_string_n", str, long, long),
	fn("user_long", long, long),
	fn("user_int", long, long),
	fn("user_short", long, long),
	fn("user_char", long, long),
	// system
	userFn("system", none, str),
	userFn("mdelay", none, long),
	userFn("udelay", none, long),
)

func index(list ...*Builtin) map[string]*Builtin {
	m := make(map[string]*Builtin, len(list))
	for _, b := range list {
		m[b.Name] = b
	}
	return m
}
