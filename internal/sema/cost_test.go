package sema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/growth"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/probestest"
	"github.com/bpftap/bpftap/internal/syntax"
)

// scaled are scripts of a size n that elaborate (or are refused) at a
// cost linear in n.
var scaled = []struct {
	name    string
	script  func(n int) string
	refused bool
}{
	{"functions each returning the next one's value", chain, false},
	{"functions each returning the next one's value, by name last first", func(n int) string {
		return chainNamed(n, func(i int) string { return fmt.Sprintf("f%08d", n-i) })
	}, false},
	{"a chain of statement calls", func(n int) string {
		var b strings.Builder
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "function f%d() { f%d() }\n", i, i+1)
		}
		fmt.Fprintf(&b, "function f%d() { println(1) }\nprobe begin { f1() }\n", n)
		return b.String()
	}, false},
	{"assignments elided on one line", oneLine("x%d = 1;", "exit()"), false},
	{"unresolved functions on one line", oneLine("u%d();", ""), true},
}

// oneLine is a begin probe of n statements stmt (formatted with their
// number) and then last, on one line.
func oneLine(stmt, last string) func(n int) string {
	return func(n int) string {
		var b strings.Builder
		b.WriteString("probe begin {")
		for i := range n {
			fmt.Fprintf(&b, " "+stmt, i)
		}
		fmt.Fprintf(&b, " %s }", last)
		return b.String()
	}
}

// chain is n functions, each returning the next one's value, the last 1,
// and a probe printing the first one's.
func chain(n int) string { return chainNamed(n, func(i int) string { return fmt.Sprintf("f%d", i) }) }

func chainNamed(n int, name func(i int) string) string {
	var b strings.Builder
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "function %s() { return %s() }\n", name(i), name(i+1))
	}
	fmt.Fprintf(&b, "function %s() { return 1 }\nprobe begin { println(%s()) }\n", name(n), name(1))
	return b.String()
}

// TestElaborationCost: elaboration grows linearly with the script (20,000
// functions each returning the next one's value did not elaborate in 10
// minutes: each type pass visited every function, and the types settled
// one function a pass).
func TestElaborationCost(t *testing.T) {
	for _, s := range scaled {
		t.Run(s.name, func(t *testing.T) {
			growth.Linear(t, []int{100, 200, 400, 800}, 2, func(n int) float64 {
				return growth.Allocated(func() { elaborateScaled(t, s.script(n), s.refused, nil) })
			})
			if s.refused {
				return
			}
			t.Run("type visits", func(t *testing.T) {
				growth.Linear(t, []int{100, 200, 400, 800}, 2, func(n int) float64 {
					visits := 0
					elaborateScaled(t, s.script(n), s.refused, &visits)
					return float64(visits)
				})
			})
		})
	}
}

// elaborateScaled elaborates text, which must be refused or not, counting
// the type passes' visits in visits (if not nil).
func elaborateScaled(t testing.TB, text string, refused bool, visits *int) {
	if _, err := elaborateText(t, text, visits); (err != nil) != refused {
		t.Fatalf("%.40q...: error %v", text, err)
	}
}

// TestLongChainTyped: every function of the chain of the issue (20,000,
// 20,000 type passes) gets its type.
func TestLongChainTyped(t *testing.T) {
	prog, err := elaborateText(t, chain(20000), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range prog.Funcs {
		if f.Decl != nil && f.Result != syntax.TypeLong {
			t.Fatalf("%s() is %v", f.Name, f.Result)
		}
	}
}

func elaborateText(t testing.TB, text string, visits *int) (*Program, error) {
	f, err := syntax.Parse(syntax.NewSource("<input>", text), &syntax.Config{})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return Elaborate([]*syntax.File{f}, Options{Registry: probes.BuiltinWith(probestest.New(), probes.Config{}), typeVisits: visits})
}

// BenchmarkElaborateChain elaborates 20,000 functions each returning the
// next one's value.
func BenchmarkElaborateChain(b *testing.B) {
	text := chain(20000)
	for range b.N {
		if _, err := elaborateText(b, text, nil); err != nil {
			b.Fatal(err)
		}
	}
}
