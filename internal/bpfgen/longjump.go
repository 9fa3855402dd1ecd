package bpfgen

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// A BPF jump carries a 16-bit offset: it reaches 32767 instructions. The
// programs of probes that serve many system calls (the merged entries of
// syscall.*) are longer, and their jumps to the shared labels (done, exit,
// the error tail) cross them. farJumps rewrites every jump that does not
// reach: an unconditional one becomes a long jump (gotol, 32-bit offset,
// Linux 6.4+), a conditional one the opposite condition jumping over a long
// jump placed right after it (JSET, which has no opposite, jumps to it):
//
//	J!cc +1               JSET tramp
//	gotol TARGET          Ja   +1
//	                      tramp: gotol TARGET
//
// (no `goto +0` to carry a label: see emit)
//
// Insertions move other jumps' targets, so it repeats until nothing
// changes, keeping a margin so that it converges.

// opposite is the jump taken exactly when the other is not.
var opposite = map[asm.JumpOp]asm.JumpOp{
	asm.JEq: asm.JNE, asm.JNE: asm.JEq,
	asm.JGT: asm.JLE, asm.JLE: asm.JGT, asm.JGE: asm.JLT, asm.JLT: asm.JGE,
	asm.JSGT: asm.JSLE, asm.JSLE: asm.JSGT, asm.JSGE: asm.JSLT, asm.JSLT: asm.JSGE,
}

// jumpReach is the farthest a 16-bit jump is left to reach, with margin.
const jumpReach = 32767 - 256

// farJumps returns insns (and their positions) with every out-of-reach
// jump rewritten.
func farJumps(insns asm.Instructions, pos []syntax.Pos) (asm.Instructions, []syntax.Pos) {
	if slots(insns) <= jumpReach {
		return insns, pos
	}
	for n := 0; ; n++ {
		at, labels := layout(insns)
		if allInReach(insns, at, labels) {
			return insns, pos
		}
		var out asm.Instructions
		var outPos []syntax.Pos
		for i, ins := range insns {
			if !farJump(ins, i, at, labels) {
				out, outPos = append(out, ins), append(outPos, pos[i])
				continue
			}
			long := asm.LongJump(ins.Reference())
			if ins.OpCode.JumpOp() == asm.Ja {
				out, outPos = append(out, long.WithSymbol(ins.Symbol())), append(outPos, pos[i])
				continue
			}
			if op, ok := opposite[ins.OpCode.JumpOp()]; ok {
				over := ins.WithReference("")
				over.OpCode, over.Offset = ins.OpCode.SetJumpOp(op), 1
				out = append(out, over, long)
				outPos = append(outPos, pos[i], pos[i])
				continue
			}
			tramp := fmt.Sprintf("far_%d_%d", n, i)
			skip := asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Ja), Offset: 1}
			out = append(out, ins.WithReference(tramp), skip, long.WithSymbol(tramp))
			outPos = append(outPos, pos[i], pos[i], pos[i])
		}
		insns, pos = out, outPos
	}
}

// allInReach tells whether every jump of insns reaches its target.
func allInReach(insns asm.Instructions, at []int, labels map[string]int) bool {
	for i, ins := range insns {
		if farJump(ins, i, at, labels) {
			return false
		}
	}
	return true
}

// farJump tells whether ins, the i-th instruction, is a short jump that
// does not reach its target.
func farJump(ins asm.Instruction, i int, at []int, labels map[string]int) bool {
	target, ok := labels[ins.Reference()]
	return ok && shortJump(ins) && abs(target-(at[i]+1)) > jumpReach
}

// shortJump tells whether ins is a jump with a 16-bit offset (not a call,
// an exit or a long jump).
func shortJump(ins asm.Instruction) bool {
	if ins.OpCode.Class() != asm.JumpClass && ins.OpCode.Class() != asm.Jump32Class {
		return false
	}
	switch ins.OpCode.JumpOp() {
	case asm.Call, asm.Exit:
		return false
	case asm.Ja:
		return ins.OpCode.Class() == asm.JumpClass
	}
	return true
}

// layout returns each instruction's offset in 8-byte slots and the offset
// of each label.
func layout(insns asm.Instructions) ([]int, map[string]int) {
	at := make([]int, len(insns))
	labels := map[string]int{}
	off := 0
	for i, ins := range insns {
		at[i] = off
		if sym := ins.Symbol(); sym != "" {
			labels[sym] = off
		}
		off += int(ins.Size() / asm.InstructionSize)
	}
	return at, labels
}

func slots(insns asm.Instructions) int {
	n := 0
	for _, ins := range insns {
		n += int(ins.Size() / asm.InstructionSize)
	}
	return n
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
