package sema

import (
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Constant casts. A @cast of a literal address whose value is an address
// computed without a load, `&@cast(0, "T", "kernel")[1]` or
// `&@cast(0, "T")->m`, reads no memory: it is the literal plus an offset
// the kernel's BTF gives (the tapset's @cast_sizeof and
// @cast_module_sizeof macros are such casts). It resolves in any probe or
// function, against the kernel of the script's kernel probes or, without
// them, the kernel the probe registry describes, and folding turns it into
// that number, so user-side probes run it too.

// constantCast tells whether n is a @cast of a literal address taken as
// an address (with &, or without members). (Its value is a constant when
// no index of its chain is computed at run time: castValue.)
func constantCast(n syntax.Expr) bool {
	c, ok := n.(*syntax.Cast)
	if !ok {
		return false
	}
	_, literal := c.Operand.(*syntax.NumberLit)
	return literal && (c.AddrOf || len(c.Components) == 0)
}

// castKernel is the kernel @cast resolves against: that of the script's
// kernel probes, else the registry's (nil: none).
func (e *elab) castKernel() probes.KernelInfo {
	if e.kernel != nil {
		return e.kernel
	}
	return e.reg.Kernel()
}

// castValue is the value of a constant cast x, which resolved to an
// address reached without a load; ok is false for any other node.
func (e *elab) castValue(x syntax.Expr) (v int64, ok bool) {
	a := e.prog.Targets[x]
	if a == nil || !a.Address || !constantCast(x) || a.Path != nil && (len(a.Path.Offsets) > 1 || len(a.Path.Scales) > 0) {
		return 0, false
	}
	v = x.(*syntax.Cast).Operand.(*syntax.NumberLit).Value
	if a.Path != nil && len(a.Path.Offsets) == 1 {
		v += a.Path.Offsets[0]
	}
	return v, true
}
