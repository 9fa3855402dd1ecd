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

// BenchmarkReachSyscalls measures the search of the library that pass 1
// makes for `syscall.*` (whose files mention hundreds of points, each
// tried against the aliases).
func BenchmarkReachSyscalls(b *testing.B) {
	src := syntax.NewSource("<input>", `probe syscall.* { printf("%s(%s)\n", name, argstr) }`)
	for b.Loop() {
		tapset.LibraryIndex().Reach([]*syntax.Names{syntax.ScanNames(src, nil)}, nil)
	}
}
