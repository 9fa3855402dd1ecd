package interp

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/tapset"
)

// User-side probes have no kernel context and no traced process: every read
// faults. The kernel readers and user_string report stap's fault errors;
// user_long and friends return 0, as the tapset's try/catch wrappers do, and
// user_string2 and kernel_string2 their error message.
var memoryBuiltins = map[string]builtinFunc{
	"kernel_string":        kernelFault("string"),
	"kernel_string_n":      kernelFault("string"),
	"kernel_long":          kernelFault("long"),
	"kernel_int":           kernelFault("int"),
	"kernel_short":         kernelFault("short"),
	"kernel_char":          kernelFault("char"),
	"kernel_pointer":       kernelFault("pointer"),
	"user_string":          userStringFault,
	"user_string_n":        userStringFault,
	"user_string2":         errMsg,
	"kernel_string2":       errMsg,
	"user_string_quoted":   quotedFault,
	"user_string_n_quoted": quotedFault,
	"user_long":            zero,
	"user_int":             zero,
	"user_short":           zero,
	"user_char":            zero,
}

func kernelFault(what string) builtinFunc {
	return func(cc *callContext, a []Value) Value {
		cc.fail(fmt.Sprintf(tapset.KernelCopyFault(what), uint64(a[0].Int)))
		return Value{}
	}
}

func userStringFault(cc *callContext, a []Value) Value {
	cc.fail(fmt.Sprintf(tapset.UserStringFault, uint64(a[0].Int)))
	return Value{}
}

func zero(*callContext, []Value) Value { return Value{} }

// quotedFault is user_string_quoted and user_string_n_quoted on a fault:
// the address in hex, without quotes.
func quotedFault(_ *callContext, a []Value) Value {
	return Value{Str: fmt.Sprintf("0x%x", uint64(a[0].Int))}
}

// errMsg is user_string2 and kernel_string2 on a fault: their second argument.
func errMsg(_ *callContext, a []Value) Value { return a[1] }
