package syntax

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/growth"
)

// garbage are inputs that parse with an error at every repetition of
// their unit, on one line (the worst case for the source line each error
// shows) or on many.
var garbage = []struct{ name, unit string }{
	{"declarations cut short", "probe x{"},
	{"statements cut short", "probe begin { x = ; } "},
	{"junk between declarations", "probe begin {} ) "},
	{"unclosed conditionals", "%( probe "},
	{"many lines (linear before too)", "probe x{\n"},
}

// TestRejectionCost: garbage is rejected, its errors reported, at a cost
// that grows linearly with its size (a megabyte line with a thousand
// errors took 106 s and 2.5 GB: each error rendered the whole line).
func TestRejectionCost(t *testing.T) {
	for _, g := range garbage {
		t.Run(g.name, func(t *testing.T) {
			growth.Linear(t, []int{100, 200, 400, 800}, 2, func(n int) float64 {
				return growth.Allocated(func() { reject(t, strings.Repeat(g.unit, n)) })
			})
		})
	}
}

// reject parses text, which must fail, and renders its errors.
func reject(t testing.TB, text string) {
	_, err := Parse(NewSource("garbage.stp", text), DefaultConfig())
	if err == nil {
		t.Fatalf("%.40q... parsed", text)
	}
	_ = err.(ErrorList).Report()
}

// TestLongLineExcerpt: an error on a line longer than maxShownLine shows
// the part of the line around the column, the caret under the token.
func TestLongLineExcerpt(t *testing.T) {
	text := "probe begin { x = 1 " + strings.Repeat("+ 1 ", 5000) + "+ ; " + strings.Repeat("+ 1 ", 5000) + "}"
	_, err := Parse(NewSource("long.stp", text), DefaultConfig())
	report := err.(ErrorList).Report()
	var source, caret string
	for line := range strings.Lines(report) {
		if s, ok := strings.CutPrefix(line, errAlign+"source: "); ok {
			source = strings.TrimSuffix(s, "\n")
		} else if source != "" && caret == "" {
			caret = strings.TrimPrefix(strings.TrimSuffix(line, "\n"), errAlign+"        ")
		}
	}
	if !strings.HasPrefix(source, "...") || !strings.HasSuffix(source, "...") || len(source) > 2*shownContext+6 {
		t.Fatalf("source line is not an excerpt (%d bytes):\n%.300s", len(source), report)
	}
	if at := len(caret) - 1; caret[at] != '^' || source[at] != ';' {
		t.Errorf("the caret is not under the ';':\n%s\n%s", source, caret)
	}
}

// BenchmarkRejectGarbage parses and reports a line of 200 KB with an error
// every 8 bytes (1,001 errors: the parser stops there).
func BenchmarkRejectGarbage(b *testing.B) {
	text := strings.Repeat("probe x{", 26000)
	for range b.N {
		reject(b, text)
	}
}

// TestMacroExpansionBounded: macros each using the one before twice (2^40
// tokens from 900 bytes) are refused at the invocation once they have
// given maxExpanded tokens.
func TestMacroExpansionBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("@define a0 %( x %)\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "@define a%d %%( @a%d @a%d %%)\n", i, i-1, i-1)
	}
	b.WriteString("probe begin { @a40 }\n")
	_, err := Parse(NewSource("laughs.stp", b.String()), DefaultConfig())
	want := fmt.Sprintf("parse error: macro expansion gives more than %d tokens\n         at: operator '@a40' at laughs.stp:42:15\n", maxExpanded)
	if err == nil || !strings.HasPrefix(err.(ErrorList).Report(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}
