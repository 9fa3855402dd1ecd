package probes

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/probes/probestest"
	"github.com/bpftap/bpftap/internal/syntax"
	"golang.org/x/sys/unix"
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

// TestSimilarAgreesWithFullTable checks the bounded search against the
// plain one (every distance computed in full, then sorted) on names that
// share prefixes, suffixes and lengths, with and without a limit.
func TestSimilarAgreesWithFullTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = "abcde_"[rng.IntN(6)]
		}
		return string(b)
	}
	for round := range 200 {
		var names []string
		for range 1 + rng.IntN(60) {
			names = append(names, word())
		}
		name, limit := word(), []int{-1, 2, 5}[round%3]
		type cand struct {
			s string
			d int
		}
		var all []cand
		for _, c := range names {
			if d, _ := boundedLevenshtein(name, c, -1); limit < 0 || d <= limit {
				all = append(all, cand{c, d})
			}
		}
		sort.SliceStable(all, func(i, j int) bool { return similar(all[i]).before(similar(all[j])) })
		var want []string
		for i := 0; i < len(all) && i < 5; i++ {
			want = append(want, all[i].s)
		}
		if got := closest(name, names, 5, limit); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("closest(%q, %q, 5, %d) = %q, want %q", name, names, limit, got, want)
		}
	}
}

// TestSimilarLongName: the "similar" list of a 480 KB name (issue 24 saw
// 50 s for one) is made in bounded time, and is empty: no name is near it.
// The time is the thread's CPU time (0.14 s here), not the wall clock's,
// which a loaded machine stretches twentyfold.
func TestSimilarLongName(t *testing.T) {
	long := strings.Repeat("abcdefghij", 48_000)
	var names []string
	for i := range 40_000 {
		names = append(names, fmt.Sprintf("function_number_%d", i))
	}
	var got string
	took := threadCPU(t, func() { got = similarNames("functions", long, names) })
	if got != "" || took > 2*time.Second {
		t.Errorf("similarNames of a 480 KB name: %q in %v", got, took)
	}
	if got := similarNames("functions", "function_number_1234x", names); !strings.HasPrefix(got, " (similar functions: function_number_1234, ") {
		t.Errorf("similarNames of a near name: %q", got)
	}
}

// threadCPU is the CPU time f takes on its thread (the goroutine locked to
// it), which other work on the machine does not lengthen.
func threadCPU(t *testing.T, f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() time.Duration {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	f()
	return cpu() - start
}

// TestMatchUnlisted checks that MatchUnlisted gives the points a pattern
// matches but those of a family's list of names, without reading the list.
func TestMatchUnlisted(t *testing.T) {
	listed := &Family{Name: "call", Paths: []string{"call.*.return"}, Names: func() ([]string, error) {
		t.Error("MatchUnlisted read a list of names")
		return []string{"read", "write"}, nil
	}}
	alias := &Family{Name: "call.ni.return", Paths: []string{"call.ni.return"}, Suffix: true}
	reg := NewRegistry(listed, alias)
	src := syntax.NewSource("<test>", "probe call.*.return {}")
	file, err := syntax.Parse(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	pts := reg.MatchUnlisted(file.Decls[0].(*syntax.ProbeDecl).Points[0].Components)
	if len(pts) != 1 || pts[0].Family != alias {
		t.Errorf("MatchUnlisted(call.*.return) = %v, want call.ni.return's point alone", pts)
	}
}
