package driver

import (
	"slices"
	"testing"
)

// TestPlainWords checks which commands skip sh's expansion, and that the
// words of each that does are those sh's expansion gives (commandWords).
func TestPlainWords(t *testing.T) {
	for _, tc := range []struct {
		command string
		plain   bool
	}{
		{"/bin/true", true},
		{"dd if=/dev/zero of=/dev/null bs=1 count=3", true},
		{"  ls\t-l  /tmp ", true},
		{"./omp-2.1 a,b c:d e+f g@h 50% x^y", true},
		{"OMP_NUM_THREADS=2 ./omp", false}, // an assignment: exported by sh
		{"echo $HOME", false},
		{"echo 'a b'", false},
		{`echo "a b"`, false},
		{`echo a\ b`, false},
		{"ls ~", false},
		{"ls *.c", false},
		{"ls [ab]", false},
		{"echo a #b", false},
		{"", false},
		{"   ", false},
		{"echo é", false},
	} {
		words, plain := plainWords(tc.command)
		if plain != tc.plain {
			t.Errorf("plainWords(%q) plain = %v, want %v", tc.command, plain, tc.plain)
			continue
		}
		if !plain {
			continue
		}
		expanded, err := commandWords(tc.command)
		if err != nil {
			t.Fatalf("commandWords(%q): %v", tc.command, err)
		}
		if !slices.Equal(words, expanded) {
			t.Errorf("plainWords(%q) = %q, sh expands it to %q", tc.command, words, expanded)
		}
	}
}
