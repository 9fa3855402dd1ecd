package tapset_test

import (
	"testing"

	"github.com/bpftap/bpftap/internal/syntax"
)

// TestParseEveryArch parses the library as each architecture sees it: some
// files choose code with %( arch == ... %) conditionals.
func TestParseEveryArch(t *testing.T) {
	stp, macros := libraryWithMacros(t)
	for _, arch := range []string{"x86_64", "i386", "arm64", "powerpc", "s390", "riscv"} {
		for _, src := range stp {
			if _, err := syntax.Parse(src, &syntax.Config{Tapset: true, Arch: arch, Macros: macros}); err != nil {
				t.Errorf("%s on %s: %v", src.Name, arch, err)
			}
		}
	}
}
