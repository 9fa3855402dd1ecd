package interp

import (
	"fmt"
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/ksym"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/usym"
)

// Kernel symbols (package ksym): symname, symdata and modname of an
// address, the
// text of a stack of hex addresses; user symbols (package usym) the same
// way, in the call's process; in user-side probes, and for kernel probes
// that print them (tapset.Captured). A user-side probe has no
// registers: addr() and uaddr() are 0 there, as in stap's begin probes;
// the stack builtins are refused there (tapset's kernelOnly).
var symbolBuiltins = map[string]builtinFunc{
	"addr":        func(*callContext, []Value) Value { return long(0) },
	"__func_addr": func(*callContext, []Value) Value { return long(0) }, // no function in a user-side probe
	"uaddr":       func(*callContext, []Value) Value { return long(0) },
	"caller_addr": func(*callContext, []Value) Value { return long(0) },
	"symname": func(_ *callContext, args []Value) Value {
		return str(ksym.Kernel().Symname(uint64(args[0].Int)))
	},
	"symdata": func(_ *callContext, args []Value) Value {
		return str(ksym.Kernel().Symdata(uint64(args[0].Int)))
	},
	"modname": func(cc *callContext, args []Value) Value {
		name, ok := ksym.Kernel().Modname(uint64(args[0].Int))
		if !ok {
			cc.fail(tapset.MsgNoModule)
		}
		return str(name)
	},
	"sprint_stack":      sprintSyms,
	"sprint_syms":       sprintSyms,
	"__syms_lines":      func(_ *callContext, args []Value) Value { return str(symsLines(args[0].Str, 0)) },
	"__backtrace_lines": func(_ *callContext, args []Value) Value { return str(backtraceLines(args[0].Str)) },
	"__backtrace_fileline_lines": func(_ *callContext, args []Value) Value {
		return str(ksym.Lines(ksym.Addresses(args[0].Str), kernelFullerLine, 0))
	},
	"usymname":     userSymbol(usym.Name),
	"usymdata":     userSymbol(usym.Data),
	"usymfile":     userSymbol(usym.File),
	"usymline":     userSymbol(usym.Line),
	"usymfileline": userSymbol(usym.FileLine),
	"umodname": userSymbol(func(_ uint64, sym usym.Symbol, ok bool) string {
		return usym.Module(sym, ok)
	}),
	"sprint_ustack": func(cc *callContext, args []Value) Value {
		return str(ustackLines(cc.process(), args[0].Str, cc.in.maxStringLen()-1))
	},
	"__ustack_lines": func(cc *callContext, args []Value) Value {
		return str(ustackLines(cc.process(), args[0].Str, 0))
	},
	"__ustack_brief_lines": func(cc *callContext, args []Value) Value {
		return str(ustackText(cc.process(), args[0].Str, usym.BriefLine, 0))
	},
	"__ustack_fileline_lines": func(cc *callContext, args []Value) Value {
		return str(ustackText(cc.process(), args[0].Str, usym.FullerLine, 0))
	},
	"sprint_usyms": func(cc *callContext, args []Value) Value {
		return str(usymsLines(cc.process(), args[0].Str, cc.in.maxStringLen()-1))
	},
	"__usyms_lines": func(cc *callContext, args []Value) Value {
		return str(usymsLines(cc.process(), args[0].Str, 0))
	},
}

// userSymbol is a builtin giving text of the symbol of a user address in
// the call's process.
func userSymbol(text func(addr uint64, sym usym.Symbol, ok bool) string) builtinFunc {
	return func(cc *callContext, args []Value) Value {
		addr := uint64(args[0].Int)
		sym, ok := usym.Default().Address(cc.process(), addr)
		return str(text(addr, sym, ok))
	}
}

// ustackLines is print_ustack's text of a stack of hex user addresses of
// process pid, cut at limit bytes (0: not cut) on a line's end.
func ustackLines(pid int, stk string, limit int) string {
	return ustackText(pid, stk, usym.FullLine, limit)
}

// ustackText is a line per frame of a stack of hex user addresses of
// process pid, as line writes it, cut at limit bytes (0: not cut) on a
// line's end.
func ustackText(pid int, stk string, line func(addr uint64, sym usym.Symbol, ok bool) string, limit int) string {
	return ksym.Lines(ksym.Addresses(stk), func(a uint64) string {
		sym, ok := usym.Default().Address(pid, a)
		return line(a, sym, ok)
	}, limit)
}

// kernelFullerLine is a line of print_backtrace_fileline(): print_backtrace's,
// with " at FILE:LINE" before the module for an address of the kernel's own
// text where its debug package is installed (kernel.Debuginfo), as stap's
// runtime writes _STP_SYM_FULLER.
func kernelFullerLine(addr uint64) string {
	line := ksym.Kernel().FullLine(addr)
	file, n, ok := kernelSourceLine(addr)
	at := strings.LastIndex(line, " [kernel]")
	if !ok || at < 0 {
		return line
	}
	return fmt.Sprintf("%s at %s:%d%s", line[:at], file, n, line[at:])
}

// kernelSourceLine is the source line of a running kernel's address, from
// its DWARF (link-time addresses: the address less the KASLR offset).
func kernelSourceLine(addr uint64) (file string, line int, ok bool) {
	f, err := kernel.Debuginfo()
	if err != nil || f.Loaded == nil {
		return "", 0, false
	}
	offset, err := f.Loaded(0)
	if err != nil {
		return "", 0, false
	}
	file, line, err = f.LineAt(addr - offset)
	return file, line, err == nil
}

// kernelOnly is a builtin the elaborator refuses in user-side probes.
func kernelOnly(name string) builtinFunc {
	return func(*callContext, []Value) Value { panic(&runError{Msg: tapset.KernelOnlyMsg(name + "()")}) }
}

// sprintSyms is sprint_syms(callers) and sprint_stack(stk): the lines of
// print_syms, cut at MAXSTRINGLEN on a line's end.
func sprintSyms(cc *callContext, args []Value) Value {
	return str(symsLines(args[0].Str, cc.in.maxStringLen()-1))
}

// symsLines is print_syms's text of a list of hex addresses separated by
// spaces, cut at limit bytes (0: not cut) on a line's end: a line per
// word, " WORD : SYMDATA", the word as written and symdata() of its value
// (a word that is not a number is 0), as stap's tapset loops over them.
func symsLines(callers string, limit int) string {
	return wordLines(callers, ksym.Kernel().Symdata, limit)
}

// usymsLines is print_usyms's text: symsLines's with usymdata() of each
// word in process pid.
func usymsLines(pid int, callers string, limit int) string {
	return wordLines(callers, func(a uint64) string {
		sym, ok := usym.Default().Address(pid, a)
		return usym.Data(a, sym, ok)
	}, limit)
}

// wordLines is a line " WORD : data(WORD)" per word of a list of hex
// addresses separated by spaces, cut at limit bytes (0: not cut) on a
// line's end.
func wordLines(callers string, data func(uint64) string, limit int) string {
	words := strings.FieldsFunc(callers, func(r rune) bool { return r == ' ' })
	return ksym.Lines(words, func(w string) string {
		return " " + w + " : " + data(uint64(strtol(w, 16))) + "\n"
	}, limit)
}

// backtraceLines is print_backtrace's text of a stack of hex addresses,
// stap's runtime printer's: a line per frame as symsLines has it, but the
// frame's address alone where no symbol holds it.
func backtraceLines(stk string) string {
	return ksym.Lines(ksym.Addresses(stk), ksym.Kernel().FullLine, 0)
}
