package interp

import (
	"github.com/bpftap/bpftap/internal/ksym"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Kernel symbols (package ksym): symname and symdata of an address, the
// text of a stack of hex addresses; in user-side probes, and for kernel
// probes that print them (tapset.Captured). A user-side probe has no
// registers: addr() and uaddr() are 0 there, as in stap's begin probes;
// the stack builtins are refused there (tapset's kernelOnly).
var symbolBuiltins = map[string]builtinFunc{
	"addr":  func(*callContext, []Value) Value { return long(0) },
	"uaddr": func(*callContext, []Value) Value { return long(0) },
	"symname": func(_ *callContext, args []Value) Value {
		return str(ksym.Kernel().Symname(uint64(args[0].Int)))
	},
	"symdata": func(_ *callContext, args []Value) Value {
		return str(ksym.Kernel().Symdata(uint64(args[0].Int)))
	},
	"sprint_stack": func(cc *callContext, args []Value) Value {
		return str(stackLines(args[0].Str, cc.in.maxStringLen()-1))
	},
	"__stack_lines":     func(_ *callContext, args []Value) Value { return str(stackLines(args[0].Str, 0)) },
	"backtrace":         kernelOnly("backtrace"),
	"sprint_backtrace":  kernelOnly("sprint_backtrace"),
	"ubacktrace":        kernelOnly("ubacktrace"),
	"sprint_ubacktrace": kernelOnly("sprint_ubacktrace"),
}

// kernelOnly is a builtin the elaborator refuses in user-side probes.
func kernelOnly(name string) builtinFunc {
	return func(*callContext, []Value) Value { panic(&runError{Msg: tapset.KernelOnlyMsg(name + "()")}) }
}

// stackLines is print_stack's text of a stack of hex addresses, cut at
// limit bytes (0: not cut) on a line's end.
func stackLines(stk string, limit int) string {
	return ksym.Lines(ksym.Addresses(stk), ksym.Kernel().FullLine, limit)
}
