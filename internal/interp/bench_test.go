package interp

import (
	"io"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// benchLoops is how many times each benchmark script goes round its loop.
const benchLoops = 100000

// The benchmarks run one begin probe with a loop of benchLoops iterations
// per operation and report the cost of one iteration as ns/iter.
func BenchmarkScripts(b *testing.B) {
	cases := []struct{ name, script string }{
		{"loop", `probe begin { for (i = 0; i < 100000; i++) s += i }`},
		{"while", `probe begin { while (i < 100000) { i++; if (i % 3 == 0) s -= i else s += i } }`},
		{"array", `global a; probe begin { for (i = 0; i < 100000; i++) a[i % 100] += i }`},
		{"array2", `global a; probe begin { for (i = 0; i < 100000; i++) a[i % 10, "k"] = a[i % 10, "k"] + 1 }`},
		{"concat", `probe begin { for (i = 0; i < 100000; i++) { s .= "ab"; if (strlen(s) > 200) s = "" } }`},
		// a line of @prometheus_dump_array1
		{"promline", `global s; probe begin { for (i = 0; i < 100000; i++) s = "calls_count" . "{" . "key" . "=" . string_quoted(sprint(i)) . "} " . text_str(sprint(i)) . "\n" }`},
		{"printf", `probe begin { for (i = 0; i < 100000; i++) printf("%d %s\n", i, "abc") }`},
		{"call", `function f(x) { return x + 1 } probe begin { for (i = 0; i < 100000; i++) s = f(s) }`},
		{"stat", `global st; probe begin { for (i = 0; i < 100000; i++) st <<< i }`},
		{"global", `global n, m; probe begin { for (i = 0; i < 100000; i++) { n += i; m = n } }`},
		{"statarray", `global st; probe begin { for (i = 0; i < 100000; i++) st[i % 10] <<< i }`},
		{"foreach", `global a; probe begin { for (i = 0; i < 1000; i++) a[i] = i; for (j = 0; j < 100; j++) foreach (k in a) s += a[k] }`},
	}
	lib := libraryFiles(b)
	for _, c := range cases {
		prog := benchProgram(b, c.script, lib)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				in, err := New(prog, Config{Stdout: io.Discard, Stderr: io.Discard,
					Limits: tapset.Limits{MaxStringLen: 512, MaxAction: 1 << 40, MaxMapEntries: 2048},
					Now:    func() time.Time { return fixedNow }, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				in.Begin()
				if in.End() != 0 {
					b.Fatal("script failed")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchLoops, "ns/iter")
		})
	}
}

func benchProgram(b *testing.B, script string, lib []*syntax.File) *sema.Program {
	f, err := syntax.Parse(syntax.NewSource("<input>", script), syntax.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	prog, err := sema.Elaborate([]*syntax.File{f}, sema.Options{Library: lib, NoWarnings: true})
	if err != nil {
		b.Fatal(err)
	}
	return prog
}
