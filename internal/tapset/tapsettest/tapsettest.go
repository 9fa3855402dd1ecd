// Package tapsettest gives tests the tapset library parsed as the driver
// parses it for the running machine.
package tapsettest

import (
	"testing"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Files parses every file of the tapset library, with its macros, for
// the host's architecture. Each call parses anew: an elaboration
// annotates the trees it is given.
func Files(t testing.TB) []*syntax.File {
	t.Helper()
	stp, _ := tapset.Library()
	macros, _ := tapset.Macros()
	files, err := syntax.ParseFiles(stp, &syntax.Config{Tapset: true, Arch: syntax.HostArch(), Macros: macros})
	if err != nil {
		t.Fatalf("tapset library: %v", err)
	}
	return files
}
