package interp

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// glanceScript fills globals of every kind; its end probe prints a's
// unsorted walk, whose order a glance must leave alone.
const glanceScript = `global n = 5, s = "x", st, a, b
probe begin {
	n = 7; s = "y"; st <<< 3; st <<< 5
	for (i = 0; i < 100; i++) a[i] = i % 10
	b["k"] <<< 1; b["k"] <<< 2; b["j"] <<< 1
}
probe end { foreach (k in a limit 12) printf("%d ", k); print(n, s, @count(st), [5] in a, @count(b["k"]), "\n") }
`

// glanceText renders glances as `NAME(LEN) ELEMENT...`.
func glanceText(gs []Glance) string {
	var lines []string
	for _, g := range gs {
		text := fmt.Sprintf("%s(%d)", g.Name, g.Len)
		for _, e := range g.Elements {
			text += " " + elementString(e)
		}
		lines = append(lines, text)
	}
	return strings.Join(lines, "\n")
}

func newGlanced(t *testing.T, prog *sema.Program, cfg Config) (*Interp, *bytes.Buffer) {
	t.Helper()
	var stdout bytes.Buffer
	cfg.Stdout = &stdout
	in, err := New(prog, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return in, &stdout
}

// A glance shows each scalar's value and each array's size and first
// elements by value, descending (ties by key), in memory and in hash
// storage alike, and changes no order a script sees.
func TestGlance(t *testing.T) {
	prog := elaborate(t, glanceScript)
	for _, storage := range []string{"memory", "hash"} {
		t.Run(storage, func(t *testing.T) {
			cfg := Config{}
			if storage == "hash" {
				cfg.Storage = hashStorage(3)
			}
			in, stdout := newGlanced(t, prog, cfg)
			in.Begin()
			got := glanceText(in.Glance(3))
			want := `n(0) =7
s(0) ="y"
st(0) @count=2
a(100) [9]=9 [19]=9 [29]=9
b(2) ["k"]@count=2 ["j"]@count=1`
			if got != want {
				t.Errorf("glance:\n%s\nwant:\n%s", got, want)
			}
			if got := glanceText(in.Glance(0)); !strings.Contains(got, "a(100)\n") {
				t.Errorf("glance of no elements:\n%s", got)
			}
			in.End()
			wantEnd := "0 1 2 3 4 5 6 7 8 9 10 11 7y212\n"
			if storage == "memory" && stdout.String() != wantEnd {
				t.Errorf("end output %q, want %q: the glance changed a's order", stdout.String(), wantEnd)
			}
		})
	}
}

// ResetGlobals gives scalars their start values (-G, else the
// initialiser, else 0 or "") and empties arrays and statistics.
func TestResetGlobals(t *testing.T) {
	f, err := syntax.Parse(syntax.NewSource("<input>", glanceScript), syntax.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prog, err := sema.Elaborate([]*syntax.File{f}, sema.Options{Library: libraryFiles(t), NoWarnings: true, Overrides: []string{"n=42"}})
	if err != nil {
		t.Fatal(err)
	}
	in, stdout := newGlanced(t, prog, Config{})
	in.Begin()
	in.ResetGlobals()
	want := "n(0) =42\ns(0) =\"x\"\nst(0) @count=0\na(0)\nb(0)"
	if got := glanceText(in.Glance(3)); got != want {
		t.Errorf("after reset:\n%s\nwant:\n%s", got, want)
	}
	in.End()
	if want := "42x000\n"; stdout.String() != want {
		t.Errorf("end output %q, want %q", stdout.String(), want)
	}
}

// A paused session fires no timer; resumed, it fires them again.
func TestPauseTimers(t *testing.T) {
	prog := elaborate(t, `global n
probe timer.ms(1) { n++ }
probe end { print(n > 0) }
`)
	for _, paused := range []bool{true, false} {
		in, stdout := newGlanced(t, prog, Config{})
		in.Begin()
		in.Pause(paused)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		in.Run(ctx)
		cancel()
		in.End()
		if want := map[bool]string{true: "0", false: "1"}[paused]; stdout.String() != want {
			t.Errorf("paused %v: fired %q, want %q", paused, stdout.String(), want)
		}
	}
}
