package regexdfa

import (
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/regexdfa/regexcases"
)

// cases reads testdata/cases.txt, which package bpfgen's kernel test
// reads too.
func cases(t *testing.T) (patterns, subjects []string) {
	patterns, subjects, err := regexcases.Load("testdata/cases.txt")
	if err != nil {
		t.Fatal(err)
	}
	return patterns, subjects
}

// interp is what the interpreter answers (package interp).
func interp(pattern, s string) bool {
	re := regexp.MustCompile("(?s)" + pattern)
	re.Longest()
	return re.MatchString(s)
}

func TestAgainstGo(t *testing.T) {
	patterns, subjects := cases(t)
	for _, p := range patterns {
		d, err := Compile(p)
		if err != nil {
			t.Errorf("%q: %v", p, err)
			continue
		}
		for _, s := range subjects {
			if got, want := d.MatchString(s), interp(p, s); got != want {
				t.Errorf("%q =~ %q: automaton %v, regexp %v", s, p, got, want)
			}
		}
	}
}

// TestRandom matches random subjects over a small alphabet, where
// matches are frequent, and random bytes.
func TestRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	patterns, _ := cases(t)
	alphabet := []string{"a", "b", "c", "x", ".", "\n", " ", "_", "1", "é", "\xff", "\xe2\x82", "€", "A", "$", "^"}
	for _, p := range patterns {
		d, err := Compile(p)
		if err != nil {
			continue
		}
		for range 300 {
			var b strings.Builder
			for range rng.Intn(12) {
				b.WriteString(alphabet[rng.Intn(len(alphabet))])
			}
			s := b.String()
			if got, want := d.MatchString(s), interp(p, s); got != want {
				t.Fatalf("%q =~ %q: automaton %v, regexp %v", s, p, got, want)
			}
		}
	}
}

func TestLimits(t *testing.T) {
	for _, c := range []struct{ pattern, want string }{
		{"(a|b)*a(a|b){12}", "needs more than 500 DFA states"},
		{"a(", "invalid regular expression"},
		{`[\p{Greek}\p{Cyrillic}\p{Han}\p{Arabic}\p{Hebrew}\p{Thai}]`, "non-ASCII characters into"},
	} {
		_, err := Compile(c.pattern)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.pattern, err, c.want)
		}
	}
}

// TestDead checks that a failed anchored prefix stops the search.
func TestDead(t *testing.T) {
	d, err := Compile("^abc")
	if err != nil {
		t.Fatal(err)
	}
	if s := d.Next[d.Start*(d.Classes+1)+d.Class('x')]; s != Dead {
		t.Errorf("^abc after x: state %d, want Dead", s)
	}
}
