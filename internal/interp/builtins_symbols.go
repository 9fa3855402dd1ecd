package interp

import "github.com/bpftap/bpftap/internal/ksym"

// Kernel symbols (package ksym): symname and symdata of an address, the
// text of a stack of hex addresses; in user-side probes, and for kernel
// probes that print them (tapset.Captured). A user-side probe has no
// registers: addr() and uaddr() are 0 there, as in stap's begin probes.
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
	"__stack_lines": func(_ *callContext, args []Value) Value { return str(stackLines(args[0].Str, 0)) },
}

// stackLines is print_stack's text of a stack of hex addresses, cut at
// limit bytes (0: not cut) on a line's end.
func stackLines(stk string, limit int) string {
	return ksym.Lines(ksym.Addresses(stk), ksym.Kernel().FullLine, limit)
}
