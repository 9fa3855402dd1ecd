package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Jumps the program need not make, and code no path reaches. The
// generator writes a jump whose outcome is known as a register loaded with
// a constant and compared at once (`next` in the last else of the merged
// syscall entries: r1 = 0; if r1 == 0 goto done), and such a jump leaves
// the code after it unreachable (the jump to the end of the if). The
// kernel's verifier removes unreachable code itself, but one region at a
// time, each removal adjusting every jump of the program
// (bpf_remove_insns): for the 360 calls of `syscall.*` that was a quarter
// of the load. tidyJumps, before the program is assembled:
//
//  1. decides each such jump: an unconditional jump where it is taken,
//     nothing where it is not (foldConstantJumps);
//  2. sends each jump to an unconditional jump on to that one's target
//     (threadJumps);
//  3. drops the instructions no path from a function's entry reaches
//     (reachable);
//  4. drops the jumps to the instruction right after them, which the
//     kernel removes one at a time too (dropJumpsToNext).
//
// Every jump is by label here (farJumps, the one writer of raw offsets,
// runs after); a program with a jump that names no label is left as it is.
func tidyJumps(insns asm.Instructions, pos []syntax.Pos) (asm.Instructions, []syntax.Pos) {
	labels := labelIndex(insns)
	drop := foldConstantJumps(insns)
	threadJumps(insns, labels)
	keep, ok := reachable(insns, labels, drop)
	if !ok {
		return insns, pos
	}
	outInsns, outPos := make(asm.Instructions, 0, len(insns)), make([]syntax.Pos, 0, len(pos))
	for i := range insns {
		if keep[i] {
			outInsns, outPos = append(outInsns, insns[i]), append(outPos, pos[i])
		}
	}
	return dropJumpsToNext(outInsns, outPos, len(labels))
}

// dropJumpsToNext drops each jump whose target is the instruction after
// it (but a may_goto, which bounds a loop), its label going to that
// instruction. Dropping one can make another's target the next, and only
// an earlier one's: so one walk from the end finds them all, each jump
// compared with the next instruction kept. (Walked forwards until nothing
// was left to drop, each walk with a map of the labels of its own, it
// took syscall.*'s 7,000 instructions 0.7 ms; this walk 0.3: CPU profiles
// of 60 -p3 runs each.) labels is how many labels insns has, about.
func dropJumpsToNext(insns asm.Instructions, pos []syntax.Pos, labels int) (asm.Instructions, []syntax.Pos) {
	at := make(map[string]int, labels) // each label seen: the kept instruction it names
	renamed := map[string]string{}
	keep := make([]bool, len(insns))
	next := -1 // the next instruction kept
	for i := len(insns) - 1; i >= 0; i-- {
		ins := insns[i]
		target, named := at[ins.Reference()]
		if named && target == next && isJump(ins) && ins.OpCode.JumpOp() != asm.JCOND && btf.FuncMetadata(&insns[i]) == nil {
			if l := ins.Symbol(); l != "" {
				if insns[next].Symbol() == "" {
					insns[next] = insns[next].WithSymbol(l)
				} else {
					renamed[l] = insns[next].Symbol()
				}
				at[l] = next
			}
			continue
		}
		keep[i], next = true, i
		if l := ins.Symbol(); l != "" {
			at[l] = i
		}
	}
	outInsns, outPos := insns[:0], pos[:0]
	for i, ins := range insns {
		if !keep[i] {
			continue
		}
		if ref, ok := renamed[ins.Reference()]; ok {
			ins = ins.WithReference(ref)
		}
		outInsns, outPos = append(outInsns, ins), append(outPos, pos[i])
	}
	return outInsns, outPos
}

// labelIndex maps each label of insns to its instruction's index.
func labelIndex(insns asm.Instructions) map[string]int {
	labels := make(map[string]int)
	for i, ins := range insns {
		if s := ins.Symbol(); s != "" {
			labels[s] = i
		}
	}
	return labels
}

// isGoto tells whether ins is an unconditional jump.
func isGoto(ins asm.Instruction) bool {
	return ins.OpCode.Class().IsJump() && ins.OpCode.JumpOp() == asm.Ja
}

// foldConstantJumps rewrites each conditional jump that compares a
// constant the instruction before it put in the register (and that no
// other path reaches: it has no label): a jump always taken becomes an
// unconditional one; one never taken is marked to drop.
func foldConstantJumps(insns asm.Instructions) (drop []bool) {
	drop = make([]bool, len(insns))
	for i := 1; i < len(insns); i++ {
		set, ins := insns[i-1], insns[i]
		if !constantSet(set) || ins.OpCode.Class() != asm.JumpClass || ins.OpCode.Source() != asm.ImmSource ||
			!isJump(ins) || isGoto(ins) || ins.Symbol() != "" || ins.Dst != set.Dst {
			continue
		}
		taken, known := decide(ins.OpCode.JumpOp(), set.Constant, ins.Constant)
		switch {
		case !known:
		case taken:
			ins.OpCode = asm.OpCode(asm.JumpClass).SetJumpOp(asm.Ja)
			ins.Dst, ins.Constant = asm.R0, 0
			insns[i] = ins
		default:
			drop[i] = true
		}
	}
	return drop
}

// constantSet tells whether ins sets a register to a constant, on 64 bits.
func constantSet(ins asm.Instruction) bool {
	return ins.OpCode.Class() == asm.ALU64Class && ins.OpCode.ALUOp() == asm.Mov && ins.OpCode.Source() == asm.ImmSource
}

// decide is the outcome of a 64-bit comparison of the constants x and y
// by op; false when op is not a comparison it knows.
func decide(op asm.JumpOp, x, y int64) (taken, known bool) {
	ux, uy := uint64(x), uint64(y)
	switch op {
	case asm.JEq:
		return x == y, true
	case asm.JNE:
		return x != y, true
	case asm.JGT:
		return ux > uy, true
	case asm.JGE:
		return ux >= uy, true
	case asm.JLT:
		return ux < uy, true
	case asm.JLE:
		return ux <= uy, true
	case asm.JSGT:
		return x > y, true
	case asm.JSGE:
		return x >= y, true
	case asm.JSLT:
		return x < y, true
	case asm.JSLE:
		return x <= y, true
	case asm.JSet:
		return x&y != 0, true
	}
	return false, false
}

// threadJumps sends every jump whose target is an unconditional jump on to
// that jump's own target, as far as the chain goes.
func threadJumps(insns asm.Instructions, labels map[string]int) {
	for i, ins := range insns {
		if !isJump(ins) {
			continue
		}
		ref := ins.Reference()
		for hops := 0; hops < len(insns); hops++ {
			t, ok := labels[ref]
			if !ok || !isGoto(insns[t]) || insns[t].Reference() == "" || insns[t].Reference() == ref {
				break
			}
			ref = insns[t].Reference()
		}
		if ref != ins.Reference() {
			insns[i] = ins.WithReference(ref)
		}
	}
}

// reachable marks the instructions a path reaches from the entry of a
// function (the program's first instruction, each subprogram's, each
// function a call or a pointer names), leaving out those in drop. False
// when a jump names no label it knows.
func reachable(insns asm.Instructions, labels map[string]int, drop []bool) ([]bool, bool) {
	seen := make([]bool, len(insns))
	work := []int{0}
	for i, ins := range insns {
		if btf.FuncMetadata(&insns[i]) != nil {
			work = append(work, i)
		}
		if ins.IsFunctionReference() {
			t, ok := labels[ins.Reference()]
			if !ok {
				return nil, false
			}
			work = append(work, t)
		}
	}
	for len(work) > 0 {
		i := work[len(work)-1]
		work = work[:len(work)-1]
		for ; i < len(insns) && !seen[i]; i++ {
			seen[i] = !drop[i]
			ins := insns[i]
			if ins.OpCode.Class().IsJump() && ins.OpCode.JumpOp() == asm.Exit {
				break
			}
			if !isJump(ins) || drop[i] {
				continue
			}
			t, ok := labels[ins.Reference()]
			if !ok {
				return nil, false
			}
			work = append(work, t)
			if isGoto(ins) {
				break
			}
		}
	}
	return seen, true
}
