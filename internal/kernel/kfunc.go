package kernel

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// Kernel functions (kfuncs) are called by their BTF ID in vmlinux, found
// by name in the kernel's BTF; the kernel decides which program types may
// call which (the regular expressions' iterator in every type, the task
// lookup of pid2task in some: bpfgen, kmem).

// KfuncIDs returns the BTF IDs of the running kernel's functions names,
// in order.
func KfuncIDs(names ...string) ([]int32, error) {
	b, err := Kernel()
	if err != nil {
		return nil, err
	}
	return b.KfuncIDs(names...)
}

// KfuncIDs returns the BTF IDs of the functions names in b, in order.
func (b *BTF) KfuncIDs(names ...string) ([]int32, error) {
	ids := make([]int32, len(names))
	for i, name := range names {
		t, err := b.TypeByName(name, KindFunc)
		if err != nil {
			return nil, fmt.Errorf("no function %s in the kernel's BTF", name)
		}
		ids[i] = int32(t.ID)
	}
	return ids, nil
}

// KfuncCall calls the kernel function of BTF ID id (in vmlinux).
func KfuncCall(id int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: int64(id)}
}
