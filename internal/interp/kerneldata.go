package interp

import (
	"errors"
	"fmt"
	"os"

	"github.com/bpftap/bpftap/internal/kmem"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Kernel data through types. A @cast or an autocast in a user-side probe
// (or a function one calls) resolved, in pass 2, to the same
// probes.Access a kernel probe compiles: a chain of offsets from the
// operand's value, each offset after the first following a pointer,
// dynamic indexes scaled by their element's size, then a load of the
// value (or its address). The interpreter walks the chain as the BPF code
// does (bpfgen's readPath), each load a read through package kmem's
// faulting reader, and raises stap's read fault where a load fails.
// task_current() is the task of bpftap's own process (stap runs
// user-side probes in its own), pid2task(pid) the task of thread pid:
// both found with kmem.FindTask.

// kernelData is the value of the @cast or autocast e.
func (in *Interp) kernelData(e syntax.Expr) int64 {
	acc := in.prog.Targets[e]
	op := sema.ContextOperand(e)
	if acc == nil || op == nil {
		throw(fmt.Sprintf("%s cannot be evaluated in a user-side probe", describe(e)), e.Position())
	}
	return in.followPath(acc, in.evalLong(op), e.Position())
}

// followPath is the value acc's path reaches from base.
func (in *Interp) followPath(acc *probes.Access, base int64, at syntax.Pos) int64 {
	path := acc.Path
	if path == nil || len(path.Offsets) == 0 {
		return base
	}
	addr, scale := base, 0
	for i, off := range path.Offsets {
		if i > 0 {
			addr = in.readKernel(addr, 8, false, at)
		}
		addr += off
		for ; scale < len(path.Scales) && path.Scales[scale].At == i; scale++ {
			addr += in.evalLong(acc.Indexes[scale]) * path.Scales[scale].Size
		}
	}
	switch {
	case acc.Address:
		return addr
	case path.BitSize != 0:
		return path.Bitfield(uint64(in.readKernel(addr, int(path.Size), false, at)))
	}
	return in.readKernel(addr, min(int(path.Size), 8), path.Signed, at)
}

// readKernel is the number of size bytes at addr, sign-extended when
// signed; a fault raises stap's error at at.
func (in *Interp) readKernel(addr int64, size int, signed bool, at syntax.Pos) int64 {
	v, err := kernelWord(addr, size, signed)
	switch {
	case errors.Is(err, kmem.ErrFault):
		throw(fmt.Sprintf(tapset.KernelReadFault, uint64(addr)), at)
	case err != nil:
		throw(unreadable("@cast", err).Error(), at)
	}
	return v
}

// taskBuiltins find tasks: bpftap's own, and one by its thread id.
func taskBuiltins() map[string]builtinFunc {
	return map[string]builtinFunc{
		"__task_current": func(cc *callContext, _ []Value) Value { return long(cc.findTask(int64(os.Getpid()))) },
		"pid2task":       func(cc *callContext, a []Value) Value { return long(cc.findTask(a[0].Int)) },
	}
}

// findTask is the address of thread tid's task_struct, 0 for none.
func (cc *callContext) findTask(tid int64) int64 {
	task, err := kmem.FindTask(tid)
	if err != nil {
		cc.fail(fmt.Sprintf("%s() cannot find a task in a user-side probe: %v", cc.call.Name, err))
	}
	return int64(task)
}
