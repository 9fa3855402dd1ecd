package sema

import (
	"strings"
	"testing"
)

// TestWarnHiddenWrites checks the warning about the user's code writing
// an alias's local that a global of the script is named as: only for a
// write (repeats suppressed, as stap's), and only where the global
// exists.
func TestWarnHiddenWrites(t *testing.T) {
	const tapset = `probe counted = begin { count = 5; total = 7; name = "counted" }`
	const warning = "here is the local the alias sets at t.stp:1:25, not the global 'count'"
	cases := []struct {
		name, script string
		warnings     int
	}{
		{name: "write", script: `global count; probe counted { count++; count += 2; println(count) } probe end { println(count) }`, warnings: 1},
		{name: "assign", script: `global count; probe counted { count = total; println(count) } probe end { println(count) }`, warnings: 1},
		{name: "read", script: `global count = 1; probe counted { println(count) } probe end { println(count) }`},
		{name: "no_global", script: `probe counted { count++; println(count) }`},
		{name: "array_global", script: `global count; probe counted { count[name] = count }`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _ := elaborated(t, c.script, nil, tapset, nil)
			if n := strings.Count(out, warning); n != c.warnings {
				t.Errorf("%d warnings %q, want %d:\n%s", n, warning, c.warnings, out)
			}
		})
	}
}
