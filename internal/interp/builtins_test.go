package interp

import (
	"testing"

	"github.com/bpftap/bpftap/internal/tapset"
)

// TestBuiltinsMatchTable checks that the interpreter implements exactly the
// builtins of tapset's table: every one runs in user-side probes.
func TestBuiltinsMatchTable(t *testing.T) {
	for name := range tapset.Builtins {
		if builtins[name] == nil {
			t.Errorf("%s is in tapset's table but not implemented", name)
		}
	}
	for name := range builtins {
		if tapset.Builtins[name] == nil {
			t.Errorf("%s is implemented but not in tapset's table", name)
		}
	}
}
