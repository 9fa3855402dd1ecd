package syntax

import (
	"fmt"
	"slices"
	"testing"
)

// TestScanNames checks what the quick scan records of probe points, alias
// names and their suffixes, and the names mentioned inside points.
func TestScanNames(t *testing.T) {
	for _, tc := range []struct {
		script  string
		points  []string
		aliases []string // NAME (takes suffixes) or NAME! (does not)
		idents  []string // among those mentioned
		macros  []string // macros used
		globals []string // declared
	}{
		{script: `probe syscall.*.return { }`, points: []string{"syscall.*.return"}},
		{script: `probe kernel.function("vfs_read").return, process("/bin/ls").function("main") { }`,
			points: []string{"kernel.function.return", "process.function"}},
		{script: `probe timer.s(1), begin(-1) { }`, points: []string{"timer.s", "begin"}},
		{script: `probe syscall.read = kernel.trace("syscalls:sys_enter_read") ? { }`,
			points: []string{"kernel.trace"}, aliases: []string{"syscall.read!"}},
		{script: `probe syscall.send = kernel.trace("x") !, never { }`,
			points: []string{"kernel.trace", "never"}, aliases: []string{"syscall.send!"}},
		{script: `probe nd_syscall = syscall { }`, points: []string{"syscall"}, aliases: []string{"nd_syscall"}},
		{script: `probe a.b, c = kernel.function("f") { }`, points: []string{"kernel.function"}, aliases: []string{"a.b", "c"}},
		{script: `probe @p { }`, points: []string{"*"}, macros: []string{"p"}},
		{script: `probe process(@path).function(fname).call { }`, points: []string{"process.function.call"},
			idents: []string{"fname"}, macros: []string{"path"}},
		{script: `probe foo.bar_$1 { }`, points: []string{"foo.*"}},
		{script: "private a, b = 1\nprivate function f() { }\nprivate global c", globals: []string{"a", "b", "c"}},
	} {
		n := ScanNames(NewSource("<input>", tc.script), nil)
		var aliases []string
		for _, a := range n.Aliases {
			aliases = append(aliases, a.Name+map[bool]string{true: "", false: "!"}[a.Suffixes])
		}
		check := func(what string, got, want []string, all bool) {
			if all && fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %s %q, want %q", tc.script, what, got, want)
			}
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Errorf("%s: %s %q lack %q", tc.script, what, got, w)
				}
			}
		}
		check("points", n.Points, tc.points, true)
		check("aliases", aliases, tc.aliases, true)
		check("identifiers", n.Idents, tc.idents, false)
		check("macro uses", n.MacroUses, tc.macros, false)
		check("globals", n.Globals, tc.globals, true)
	}
}
