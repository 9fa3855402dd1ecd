package bpfgen

import (
	"testing"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// TestFarJumps loads a program whose jumps cross 40000 instructions: a
// conditional one forwards (JSET, through a trampoline), a conditional one
// backwards (JNE, as the opposite condition over a long jump), an
// unconditional one forwards. As written the kernel refuses it; rewritten by farJumps it
// loads and returns the value the jumps lead to.
func TestFarJumps(t *testing.T) {
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Fatal(err)
	}
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R0, 1),
		asm.JEq.Imm(asm.R0, 99, "filler"), // never taken; keeps the filler reachable
		asm.JSet.Imm(asm.R0, 1, "far"),
		asm.Mov.Imm(asm.R0, 3).WithSymbol("back"),
		asm.Ja.Label("end"),
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 7).WithSymbol("filler"))
	for range 40000 {
		insns = append(insns, asm.Mov.Imm(asm.R0, 7))
	}
	insns = append(insns,
		asm.Mov.Imm(asm.R0, 2).WithSymbol("far"),
		asm.JNE.Imm(asm.R0, 7, "back"),
		asm.Return().WithSymbol("end"),
	)
	spec := &ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL", Instructions: insns}
	if prog, err := ebpf.NewProgram(spec); err == nil {
		prog.Close()
		t.Fatal("the kernel loaded jumps out of range")
	}
	spec.Instructions, _ = farJumps(insns, make([]syntax.Pos, len(insns)))
	for _, ins := range spec.Instructions {
		if ins.OpCode.JumpOp() == asm.Ja && ins.Offset == 0 && ins.Reference() == "" {
			t.Errorf("a goto +0 in the rewritten program (the kernel removes each one at a time)")
		}
	}
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		t.Fatalf("rewritten: %v", err)
	}
	defer prog.Close()
	ret, _, err := prog.Test(make([]byte, 14))
	if err != nil {
		t.Fatal(err)
	}
	if ret != 3 {
		t.Errorf("returned %d, want 3 (to far, back, then to the end)", ret)
	}
}
