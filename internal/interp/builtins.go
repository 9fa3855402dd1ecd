package interp

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"golang.org/x/sys/unix"
)

// builtinFunc implements a builtin: it gets its evaluated arguments and
// returns its result (ignored for functions without one).
type builtinFunc func(cc *callContext, args []Value) Value

// builtins implements every function of tapset.Builtins for user-side probes.
var builtins map[string]builtinFunc

func init() {
	builtins = map[string]builtinFunc{}
	for _, group := range []map[string]builtinFunc{controlBuiltins, contextBuiltins, registerBuiltins(), stringBuiltins, prometheusBuiltins, timeBuiltins, memoryBuiltins(), taskBuiltins(), symbolBuiltins, fpBuiltins, speculativeBuiltins, loggingBuiltins, loadavgBuiltins} {
		for name, f := range group {
			builtins[name] = f
		}
	}
	// the builtins pass 2 refuses here: everywhere, or in user-side
	// probes (those without an implementation of their own); the stack
	// readers give an empty stack here
	for name, b := range tapset.Builtins {
		switch {
		case b.Unsupported != "":
			builtins[name] = refused(name)
		case b.KernelOnly && builtins[name] == nil:
			builtins[name] = kernelOnly(name)
		case b.Stack && builtins[name] == nil:
			builtins[name] = func(*callContext, []Value) Value { return Value{} }
		}
	}
}

func long(v int64) Value   { return Value{Int: v} }
func str(s string) Value   { return Value{Str: s} }
func boolean(b bool) Value { return long(b2i(b)) }

var controlBuiltins = map[string]builtinFunc{
	"exit": func(cc *callContext, _ []Value) Value {
		cc.in.stop(stateStopping)
		return Value{}
	},
	"abort": func(cc *callContext, _ []Value) Value {
		cc.in.stop(stateStopping)
		panic(abortSignal{})
	},
	"error": func(cc *callContext, args []Value) Value {
		panic(&runError{Msg: args[0].Str})
	},
	"__error_at_call": func(cc *callContext, args []Value) Value {
		var at syntax.Pos
		if fr := cc.in.fr; fr != nil && fr.call != nil {
			at = fr.call.Pos
		}
		panic(&runError{Msg: args[0].Str, At: at})
	},
	"warn": func(cc *callContext, args []Value) Value {
		cc.in.warn(output.KindScript, args[0].Str)
		return Value{}
	},
	"log": func(cc *callContext, args []Value) Value {
		cc.in.out.Log(args[0].Str)
		return Value{}
	},
	"system": func(cc *callContext, args []Value) Value {
		cc.in.pendingCommands = append(cc.in.pendingCommands, args[0].Str)
		return Value{}
	},
	"switch_file": func(cc *callContext, args []Value) Value {
		cc.in.pendingSwitch = true
		return Value{}
	},
	"mdelay": func(cc *callContext, args []Value) Value {
		time.Sleep(time.Duration(max(args[0].Int, 0)) * time.Millisecond)
		return Value{}
	},
	"udelay": func(cc *callContext, args []Value) Value {
		time.Sleep(time.Duration(max(args[0].Int, 0)) * time.Microsecond)
		return Value{}
	},
	"raise": func(cc *callContext, args []Value) Value {
		if err := unix.Tgkill(os.Getpid(), unix.Gettid(), syscall.Signal(args[0].Int)); err != nil {
			cc.fail(fmt.Sprintf(tapset.RaiseError, -int(err.(syscall.Errno))))
		}
		return Value{}
	},
	// a user string a user-side probe cannot read (quoted.stp's readers),
	// not counted: there every read of user memory faults
	"__unread_user_address": func(_ *callContext, args []Value) Value {
		return str(fmt.Sprintf("0x%x", uint64(args[0].Int)))
	},
	// the read of a quoted user string (bpfgen's userStringRaw), which
	// faults here: "", as the kernel's read that fails
	"__user_string_raw": func(*callContext, []Value) Value { return str("") },
	// its text, from the read a kernel probe made (a mark byte, then the
	// string) or the address in hex
	"__user_string_quote": func(cc *callContext, args []Value) Value {
		if args[1].Str == "" {
			return str(fmt.Sprintf("0x%x", uint64(args[0].Int)))
		}
		return str(format.StringQuoted(args[1].Str[1:], cc.in.maxStringLen()))
	},
	"randint": func(cc *callContext, args []Value) Value {
		n := uint64(args[0].Int)
		if n > 1024*1024 {
			cc.fail("range too wide")
		}
		if n == 0 {
			return long(0)
		}
		return long(int64(cc.in.rng.Uint64N(n)))
	},
}

// runCommands runs the commands system() queued during a handler, after its
// output, as staprun does: what they print reaches the output writer as
// they print it (System events), their errors go to Stderr. Then a
// switch_file() of the handler switches the output file, so that what the
// handler printed stays in the one it was printed to (stapio switches
// when its request comes, after the handler's output). A file that cannot
// be opened is warned about.
func (in *Interp) runCommands() {
	for _, c := range in.pendingCommands {
		cmd := exec.Command("/bin/sh", "-c", c)
		cmd.Stdout, cmd.Stderr = systemOutput{in.out}, in.cfg.Stderr
		cmd.Run()
	}
	in.pendingCommands = in.pendingCommands[:0]
	if in.pendingSwitch {
		in.pendingSwitch = false
		if err := in.out.SwitchFile(); err != nil {
			in.warn(output.KindOutput, err.Error())
		}
	}
}

// systemOutput hands what a system() command prints to the output writer.
// Only the command's copying goroutine writes to it, while the handler's
// goroutine waits for the command under the session's lock.
type systemOutput struct{ out output.Writer }

func (s systemOutput) Write(p []byte) (int, error) {
	s.out.System(p)
	return len(p), nil
}

// In user-side probes the current process is bpftap itself, as it is staprun
// (begin, end) for stap. Its probes run one at a time, as one thread whose
// id is the process's: the OS thread running the interpreter changes as Go
// schedules it, and tid() must not change between two calls of one probe
// (thread_indent keys its depth by it).
var contextBuiltins = map[string]builtinFunc{
	"pid":             func(*callContext, []Value) Value { return long(int64(os.Getpid())) },
	"tid":             func(*callContext, []Value) Value { return long(int64(os.Getpid())) },
	"ppid":            func(*callContext, []Value) Value { return long(int64(os.Getppid())) },
	"uid":             func(*callContext, []Value) Value { return long(int64(os.Getuid())) },
	"euid":            func(*callContext, []Value) Value { return long(int64(os.Geteuid())) },
	"gid":             func(*callContext, []Value) Value { return long(int64(os.Getgid())) },
	"egid":            func(*callContext, []Value) Value { return long(int64(os.Getegid())) },
	"stp_pid":         func(*callContext, []Value) Value { return long(int64(os.Getpid())) },
	"module_name":     func(cc *callContext, _ []Value) Value { return str(cc.in.cfg.Module) },
	"registers_valid": func(*callContext, []Value) Value { return long(0) }, // a user-side probe has none
	"execname":        func(*callContext, []Value) Value { return str(procComm("self")) },
	"cpu":             func(*callContext, []Value) Value { return long(currentCPU()) },
	"target":          func(cc *callContext, _ []Value) Value { return long(int64(cc.in.cfg.Target)) },
	"pp":              func(cc *callContext, _ []Value) Value { return str(cc.in.act.probe.Name) },
	"ppfunc":          func(cc *callContext, _ []Value) Value { return str(tapset.PPFunc(cc.in.act.probe.Name)) },
	"pn":              func(cc *callContext, _ []Value) Value { return str(cc.in.act.probe.PN()) },
	"probefunc":       func(*callContext, []Value) Value { return str("") },
	"user_mode":       func(*callContext, []Value) Value { return long(0) },
	"is_return":       func(*callContext, []Value) Value { return long(0) },
	"mem_page_size":   func(*callContext, []Value) Value { return long(int64(os.Getpagesize())) },
	"__maxstringlen":  func(cc *callContext, _ []Value) Value { return long(int64(cc.in.maxStringLen())) },
	"env_var":         envVar,
	"syscall_name": func(_ *callContext, args []Value) Value {
		return str(tapset.SyscallName(syntax.HostArch(), args[0].Int))
	},
	"cmdline_str": func(*callContext, []Value) Value {
		b, _ := os.ReadFile("/proc/self/cmdline")
		return str(strings.TrimSpace(strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")))
	},
	// refused in pass 2 (tapset.Builtin.KernelOnly)
	"__syscall_compat":    kernelOnly("__syscall_compat"),
	"__syscall_native_nr": kernelOnly("__syscall_native_nr"),
	"__syscall_tail":      kernelOnly("__syscall_tail"),
	"__perf_read":         kernelOnly("__perf_read"),
	"__perf_counters":     kernelOnly("__perf_counters"),
	"__perf_dev":          kernelOnly("__perf_dev"),
	"__perf_ino":          kernelOnly("__perf_ino"),
	"__context_task":      kernelOnly("__context_task"),
	"__context_var":       kernelOnly("__context_var"),
	// the name the kernel gives the thread, "" when there is none (as
	// kernel probes find it: bpfgen/tasklookup.go)
	"pid2execname": func(_ *callContext, args []Value) Value {
		if args[0].Int <= 0 {
			return str("")
		}
		return str(procComm(strconv.FormatInt(args[0].Int, 10)))
	},
}

// refused implements a builtin that pass 2 refuses everywhere
// (tapset.Builtin.Unsupported), each of them: it raises the same reason.
func refused(name string) func(*callContext, []Value) Value {
	return func(*callContext, []Value) Value { panic(&runError{Msg: tapset.Builtins[name].Unsupported}) }
}

// registerBuiltins read the registers of a function probe: a user-side
// probe has none, and they raise stap's errors (uaddr() is 0 there).
func registerBuiltins() map[string]builtinFunc {
	raise := func(msg string) builtinFunc {
		return func(*callContext, []Value) Value { panic(&runError{Msg: msg}) }
	}
	m := map[string]builtinFunc{
		"register":   raise(tapset.MsgNoRegisters),
		"u_register": raise(tapset.MsgNoRegisters),
		"@kregister": registerFault,
		"@uregister": registerFault,
		"returnval": func(cc *callContext, _ []Value) Value {
			panic(&runError{Msg: tapset.NoReturnval(cc.in.act.probe.Name)})
		},
	}
	for name := range tapset.ArgReaders {
		m[name] = raise(tapset.MsgNoArgs)
	}
	return m
}

// registerFault is @kregister and @uregister: stap's error where the
// probe has no registers, at the operator.
func registerFault(cc *callContext, _ []Value) Value {
	cc.fail(tapset.MsgRegisterFault)
	return Value{}
}

// procComm is the name of process id ("self" or a thread id), "" when
// /proc has no such process.
func procComm(id string) string {
	b, err := os.ReadFile("/proc/" + id + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

// currentCPU is the CPU this thread last ran on (field 39 of /proc/self/stat).
func currentCPU() int64 {
	b, err := os.ReadFile("/proc/thread-self/stat")
	if err != nil {
		return 0
	}
	// the command name (field 2) may hold spaces; fields restart after its ')'
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(fields) < 37 {
		return 0
	}
	cpu, _ := strconv.ParseInt(fields[36], 10, 64)
	return cpu
}

// envVar is env_var(name): in the environment of the kernel probe's
// process (/proc/PID/environ, "" once it is gone), else in bpftap's own.
func envVar(cc *callContext, args []Value) Value {
	pid := cc.process()
	if pid == 0 {
		return str(os.Getenv(args[0].Str))
	}
	environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	for _, kv := range strings.Split(string(environ), "\x00") {
		if v, ok := strings.CutPrefix(kv, args[0].Str+"="); ok {
			return str(v)
		}
	}
	return str("")
}
