package bpfgen

import (
	"slices"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// TestReadBeforeWritten checks which locals of a probe need their
// initial value at every event.
func TestReadBeforeWritten(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`a = 1; b = a; println(b)`, ""},
		{`println(a); a = 1`, "a"},
		{`a += 1`, "a"},
		{`a++`, "a"},
		{`a = b = 2; println(a + b)`, ""},
		{`if (pid()) a = 1; println(a)`, "a"},
		{`if (pid()) a = 1 else a = 2; println(a)`, ""},
		{`if (pid()) a = 1 else next; println(a)`, ""},
		{`while (pid()) { a = 1 } println(a)`, "a"},
		{`while (i < 3) i++`, "i"},
		{`for (i = 0; i < 3; i++) a = i; println(a)`, "a"},
		{`foreach (k in g) println(k); println(k)`, "k"},
		{`foreach (k in g) { v = k; println(v) }`, ""},
		{`try { a = 1; b = 1 } catch (m) { a = 2; println(m) } println(a + b)`, "b"},
		{`pid() && (a = 1); println(a)`, "a"},
		{`a = pid() ? (b = 1) : 2; println(a, b)`, "b"},
		{`s = "x"; s .= "y"; println(s)`, ""},
	} {
		f, err := syntax.Parse(syntax.NewSource("<input>", "global g probe begin { "+c.body+" } probe end { g[1] = 1 }"), syntax.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		prog, err := sema.Elaborate([]*syntax.File{f}, sema.Options{NoWarnings: true})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for v := range readBeforeWritten(prog.Probes[0].Body) {
			got = append(got, v.Name)
		}
		slices.Sort(got)
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: read before written: %v, want %q", c.body, got, c.want)
		}
	}
}
