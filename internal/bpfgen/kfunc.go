package bpfgen

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/cilium/ebpf/asm"
)

// Kernel functions (kfuncs) are called by their BTF ID in vmlinux, found
// by name in the kernel's BTF; the kernel decides which program types may
// call which (the regular expressions' iterator in every type, the task
// lookup of tasks.go in some).

// kfuncIDs returns the BTF IDs of the kernel functions names, in order.
func kfuncIDs(names ...string) ([]int32, error) {
	b, err := kernel.Kernel()
	if err != nil {
		return nil, err
	}
	ids := make([]int32, len(names))
	for i, name := range names {
		t, err := b.TypeByName(name, kernel.KindFunc)
		if err != nil {
			return nil, fmt.Errorf("no function %s in the kernel's BTF", name)
		}
		ids[i] = int32(t.ID)
	}
	return ids, nil
}

// kfuncCall calls the kernel function of BTF ID id (in vmlinux).
func kfuncCall(id int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: int64(id)}
}
