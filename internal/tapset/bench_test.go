package tapset_test

import (
	"testing"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// BenchmarkParseLibrary measures what every start-up pays to parse the
// embedded library.
func BenchmarkParseLibrary(b *testing.B) {
	stp, stpm := tapset.Library()
	macros, _ := syntax.LoadMacros(stpm...)
	cfg := &syntax.Config{Tapset: true, Arch: "x86_64", Macros: macros}
	for b.Loop() {
		for _, src := range stp {
			if _, err := syntax.Parse(src, cfg); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLibraryIndex measures the scan that index_gen.go is made of
// (index.go), which every start-up paid before it was made at build time.
func BenchmarkLibraryIndex(b *testing.B) {
	stp, stpm := tapset.Library()
	for b.Loop() {
		for _, src := range append(stp, stpm...) {
			syntax.ScanNames(src, nil)
		}
	}
}
