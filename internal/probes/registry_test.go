package probes

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/probes/probestest"
	"github.com/bpftap/bpftap/internal/syntax"
)

// TestMatch resolves each point of testdata/match.txt against the builtin
// registry (and runs the family's check) and compares with the expectation.
func TestMatch(t *testing.T) {
	f, err := os.Open("testdata/match.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reg := BuiltinFor(probestest.New())
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		point, want, _ := strings.Cut(line, " => ")
		if got := resolve(t, reg, point); got != want {
			t.Errorf("%s:\n got %s\nwant %s", point, got, want)
		}
	}
}

func resolve(t *testing.T, reg *Registry, point string) string {
	src := syntax.NewSource("<test>", "probe "+point+" {}")
	file, err := syntax.Parse(src, nil)
	if err != nil {
		t.Fatalf("%s: %v", point, err)
	}
	pp := file.Decls[0].(*syntax.ProbeDecl).Points[0]
	pts, err := reg.Match(pp.Components)
	var expanded []*Point
	for _, p := range pts {
		if err == nil && p.Family.Check != nil {
			err = p.Family.Check(p)
		}
		more := []*Point{p}
		if err == nil && p.Family.Expand != nil {
			more, err = p.Family.Expand(p)
		}
		expanded = append(expanded, more...)
	}
	pts = expanded
	if err != nil {
		e := err.(*Error)
		s := "error: " + e.Error()
		if e.At != nil {
			s += " @ " + e.At.Name
		}
		return s
	}
	var names []string
	for _, p := range pts {
		names = append(names, p.Name())
	}
	return strings.Join(names, " | ")
}

func TestSimilar(t *testing.T) {
	got := Similar("ms", []string{"hz", "jiffies", "ms", "msec", "ns", "nsec", "s", "sec", "us", "usec"})
	if want := "ms, s, ns, us, hz"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}
