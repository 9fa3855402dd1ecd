package bpfrt

import (
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// TestHasFuncTypes checks which programs load their functions' BTF: those
// whose first instruction names the main function's type (bpfgen marks it
// when a program has subprograms), and then funcInfo makes its records.
func TestHasFuncTypes(t *testing.T) {
	main := &btf.Func{Name: "main", Type: &btf.FuncProto{Return: &btf.Int{Name: "int", Size: 4}}, Linkage: btf.GlobalFunc}
	for _, c := range []struct {
		name  string
		insns asm.Instructions
		want  bool
	}{
		{"no instructions", nil, false},
		{"one function", asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}, false},
		{"functions", asm.Instructions{btf.WithFuncMetadata(asm.Mov.Imm(asm.R0, 0), main), asm.Return()}, true},
	} {
		if got := HasFuncTypes(c.insns); got != c.want {
			t.Errorf("%s: HasFuncTypes = %v, want %v", c.name, got, c.want)
		}
		if c.insns == nil {
			continue
		}
		var attr progLoadAttr
		ft, err := funcInfo(&ProgramSpec{Name: "t", Instructions: c.insns}, &attr)
		if err != nil {
			t.Fatalf("%s: funcInfo: %v", c.name, err)
		}
		if made := ft != nil && attr.funcInfoCnt > 0; made != c.want {
			t.Errorf("%s: funcInfo made records: %v, HasFuncTypes says %v", c.name, made, c.want)
		}
		ft.close()
	}
}
