package regexdfa

import (
	"os"
	"strings"
	"testing"
)

// TestStapSyntax checks CheckStapSyntax against what SystemTap 4.8 said of
// each pattern of testdata/stapsyntax.txt.
func TestStapSyntax(t *testing.T) {
	data, err := os.ReadFile("testdata/stapsyntax.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		pattern, want, _ := strings.Cut(line, "\t")
		got := "ok"
		if err := CheckStapSyntax(pattern); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s\n got: %s\nwant: %s", pattern, got, want)
		}
	}
}

// FuzzStapSyntax checks that no pattern makes the parser fail otherwise
// than with a SyntaxError.
func FuzzStapSyntax(f *testing.F) {
	for _, s := range []string{`(`, `[[:alpha:]]`, `\x4g`, `a{1,2}`, `[a-\\]`, `\0`, `(?:a|b)*`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		CheckStapSyntax(pattern)
	})
}
