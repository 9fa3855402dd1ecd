package driver

import (
	"slices"
	"testing"
)

// TestSymbolOptions: -d objects are recorded in order, --ldd as a flag,
// --all-modules changes nothing (kallsyms lists every module's symbols).
func TestSymbolOptions(t *testing.T) {
	o, err := parseArgs([]string{"-d", "/bin/ls", "--all-modules", "-dlibc.so.6", "--ldd", "-e", "probe begin {}"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/bin/ls", "libc.so.6"}; !slices.Equal(o.SymbolObjects, want) || !o.SymbolLibraries {
		t.Errorf("SymbolObjects %q, SymbolLibraries %v; want %q, true", o.SymbolObjects, o.SymbolLibraries, want)
	}
	o, err = parseArgs([]string{"-e", "probe begin {}"})
	if err != nil {
		t.Fatal(err)
	}
	if o.SymbolObjects != nil || o.SymbolLibraries {
		t.Errorf("without -d and --ldd: SymbolObjects %q, SymbolLibraries %v", o.SymbolObjects, o.SymbolLibraries)
	}
}

// TestListOptions: -l and -L take the pattern; every operand is a script
// argument then, as in stap.
func TestListOptions(t *testing.T) {
	o, err := parseArgs([]string{"-L", "timer.ms($1)", "250", "x.stp"})
	if err != nil {
		t.Fatal(err)
	}
	if o.List == nil || *o.List != "timer.ms($1)" || !o.ListVars || o.Script != "" || !slices.Equal(o.Args, []string{"250", "x.stp"}) {
		t.Errorf("-L: List %v, ListVars %v, Script %q, Args %q", o.List, o.ListVars, o.Script, o.Args)
	}
	o, err = parseArgs([]string{"-lsyscall.*"})
	if err != nil {
		t.Fatal(err)
	}
	if o.List == nil || *o.List != "syscall.*" || o.ListVars {
		t.Errorf("-l: List %v, ListVars %v", o.List, o.ListVars)
	}
}
