package bpfgen

import (
	"testing"

	"github.com/bpftap/bpftap/internal/tapset"
)

// TestBuiltinCodesMatchTable checks that the code generator compiles
// exactly the builtins tapset's table marks InKernel.
func TestBuiltinCodesMatchTable(t *testing.T) {
	for name, b := range tapset.Builtins {
		if _, ok := builtinCodes[name]; ok != (b.Kernel == tapset.InKernel) {
			t.Errorf("%s: kernel %v in the table, compiled: %v", name, b.Kernel, ok)
		}
	}
	for name := range builtinCodes {
		if tapset.Builtins[name] == nil {
			t.Errorf("%s is compiled but not in tapset's table", name)
		}
	}
}
