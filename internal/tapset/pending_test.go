package tapset_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bpftap/bpftap/internal/syntax"
)

// TestPendingParses parses the tapset files that wait for a probe family
// (pending/): they must be ready to move into the library.
func TestPendingParses(t *testing.T) {
	files, _ := filepath.Glob("pending/*.stp")
	if len(files) == 0 {
		t.Fatal("no pending tapset files")
	}
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := syntax.Parse(syntax.NewSource(file, string(text)), syntax.DefaultConfig()); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
}
