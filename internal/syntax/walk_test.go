package syntax

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWalk walks the parsed tapset library, every node visited.
func BenchmarkWalk(b *testing.B) {
	macros, errs := LoadMacros(sources(b, "../tapset/*.stpm")...)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	files, err := ParseFiles(sources(b, "../tapset/*.stp"), &Config{Tapset: true, Macros: macros})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		for _, f := range files {
			Walk(f, func(Node) bool { return true })
		}
	}
}

// sources reads the files pattern names.
func sources(b testing.TB, pattern string) []*Source {
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		b.Fatalf("no files %s: %v", pattern, err)
	}
	var srcs []*Source
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		srcs = append(srcs, NewSource(p, string(text)))
	}
	return srcs
}
