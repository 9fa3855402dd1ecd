package bpfgen

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// listing prints insns one a line, each label on a line of its own.
func listing(insns asm.Instructions) string {
	var b strings.Builder
	for _, ins := range insns {
		if s := ins.Symbol(); s != "" {
			fmt.Fprintf(&b, "%s:\n", s)
		}
		fmt.Fprintf(&b, "\t%v\n", ins)
	}
	return b.String()
}

// tidyCases are programs (socket filters returning r0) as the generator
// writes them and as tidyJumps leaves them.
var tidyCases = []struct {
	name string
	in   asm.Instructions
	want string
	ret  uint32 // what both return
}{
	{
		name: "a constant comparison taken, the code after it unreachable",
		in: asm.Instructions{
			asm.Mov.Imm(asm.R0, 2),
			asm.Mov.Imm(asm.R1, 0),
			asm.JEq.Imm(asm.R1, 0, "done"),
			asm.Mov.Imm(asm.R0, 3),
			asm.Ja.Label("done"),
			asm.Return().WithSymbol("done"),
		},
		want: "\tMovImm dst: r0 imm: 2\n\tMovImm dst: r1 imm: 0\ndone:\n\tExit\n",
		ret:  2,
	},
	{
		name: "a constant comparison never taken",
		in: asm.Instructions{
			asm.Mov.Imm(asm.R0, 2),
			asm.Mov.Imm(asm.R1, -1),
			asm.JSGE.Imm(asm.R1, 0, "out"),
			asm.Mov.Imm(asm.R0, 5),
			asm.Return(),
			asm.Mov.Imm(asm.R0, 6).WithSymbol("out"),
			asm.Return(),
		},
		want: "\tMovImm dst: r0 imm: 2\n\tMovImm dst: r1 imm: -1\n\tMovImm dst: r0 imm: 5\n\tExit\n",
		ret:  5,
	},
	{
		name: "unsigned: -1 is the largest",
		in: asm.Instructions{
			asm.Mov.Imm(asm.R1, -1),
			asm.JGT.Imm(asm.R1, 7, "big"),
			asm.Mov.Imm(asm.R0, 1),
			asm.Return(),
			asm.Mov.Imm(asm.R0, 9).WithSymbol("big"),
			asm.Return(),
		},
		want: "\tMovImm dst: r1 imm: -1\nbig:\n\tMovImm dst: r0 imm: 9\n\tExit\n",
		ret:  9,
	},
	{
		name: "a comparison other paths reach (a label) is not decided",
		in: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Mov.Imm(asm.R1, 0),
			asm.JEq.Imm(asm.R1, 0, "first").WithSymbol("again"),
			asm.Return(),
			asm.Add.Imm(asm.R0, 1).WithSymbol("first"),
			asm.Mov.Imm(asm.R1, 1),
			asm.Ja.Label("again"),
		},
		want: "\tMovImm dst: r0 imm: 0\n\tMovImm dst: r1 imm: 0\nagain:\n\tJEqImm dst: r1 off: -1 imm: 0 <first>\n\tExit\n" +
			"first:\n\tAddImm dst: r0 imm: 1\n\tMovImm dst: r1 imm: 1\n\tJa off: -1 <again>\n",
		ret: 1,
	},
	{
		name: "a jump to a jump goes on to its target; a jump to the next instruction goes",
		in: asm.Instructions{
			asm.LoadMem(asm.R0, asm.R1, 0, asm.Word), // the packet's length: unknown to the verifier
			asm.JGT.Imm(asm.R0, 100, "long"),
			asm.Mov.Imm(asm.R0, 1),
			asm.Ja.Label("end1"),
			asm.Mov.Imm(asm.R0, 2).WithSymbol("long"),
			asm.Ja.Label("end2").WithSymbol("end1"),
			asm.Ja.Label("end3").WithSymbol("end2"),
			asm.Return().WithSymbol("end3"),
		},
		want: "\tLdXMemW dst: r0 src: r1 off: 0 imm: 0\n\tJGTImm dst: r0 off: -1 imm: 100 <long>\n\tMovImm dst: r0 imm: 1\n" +
			"\tJa off: -1 <end3>\nlong:\n\tMovImm dst: r0 imm: 2\nend3:\n\tExit\n",
		ret: 1,
	},
	{
		name: "a jump to the next instruction goes, then the one that jumped over it",
		in: asm.Instructions{
			asm.LoadMem(asm.R0, asm.R1, 0, asm.Word),
			asm.JGT.Imm(asm.R0, 100, "x"),
			asm.Ja.Label("x").WithSymbol("y"),
			asm.Mov.Imm(asm.R0, 1).WithSymbol("x"),
			asm.JEq.Imm(asm.R0, 0, "z"),
			asm.Ja.Label("z"),
			asm.Return().WithSymbol("z"),
		},
		want: "\tLdXMemW dst: r0 src: r1 off: 0 imm: 0\nx:\n\tMovImm dst: r0 imm: 1\nz:\n\tExit\n",
		ret:  1,
	},
}

// TestTidyJumps checks what tidyJumps leaves of each case, that the
// kernel loads it and it returns what the program as written returns,
// and that the verifier then visits every instruction (its log's
// instruction numbers): none is left for it to remove.
func TestTidyJumps(t *testing.T) {
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Fatal(err)
	}
	for _, c := range tidyCases {
		t.Run(c.name, func(t *testing.T) {
			before := run(t, c.in, false)
			out, pos := tidyJumps(append(asm.Instructions(nil), c.in...), make([]syntax.Pos, len(c.in)))
			if got := listing(out); got != c.want {
				t.Errorf("tidied:\n%s\nwant:\n%s", got, c.want)
			}
			if len(pos) != len(out) {
				t.Errorf("%d positions for %d instructions", len(pos), len(out))
			}
			if after := run(t, out, true); after != before || after != c.ret {
				t.Errorf("returned %d as written, %d tidied; want %d", before, after, c.ret)
			}
		})
	}
}

// visited matches the instruction numbers of a verifier log (level 2).
var visited = regexp.MustCompile(`(?m)^(\d+): \(`)

// run loads insns as a socket filter and returns what it returns for a
// packet of 64 bytes; with all, it fails the test unless the verifier
// visited every instruction.
func run(t *testing.T, insns asm.Instructions, all bool) uint32 {
	t.Helper()
	spec := &ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL", Instructions: insns}
	prog, err := ebpf.NewProgramWithOptions(spec, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelInstruction | ebpf.LogLevelStats})
	if err != nil {
		t.Fatalf("%v\n%s", err, listing(insns))
	}
	defer prog.Close()
	if all {
		seen := map[int]bool{}
		for _, m := range visited.FindAllStringSubmatch(prog.VerifierLog, -1) {
			n, _ := strconv.Atoi(m[1])
			seen[n] = true
		}
		if n := insns.Size() / asm.InstructionSize; len(seen) != int(n) {
			t.Errorf("the verifier visited %d of %d instructions:\n%s", len(seen), n, prog.VerifierLog)
		}
	}
	ret, _, err := prog.Test(make([]byte, 64))
	if err != nil {
		t.Fatal(err)
	}
	return ret
}
