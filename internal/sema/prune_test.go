package sema

import (
	"slices"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/syntax"
)

// TestPruneTapsetLocals checks what the pruning of the tapset's alias
// prologues drops, and that the program it leads to is the one the
// elision alone makes: the same listing and warnings with the pruning
// off.
func TestPruneTapsetLocals(t *testing.T) {
	const tapset = `
global lib_counter
probe two = begin { x = 1; y = sprintf("%d", x); name = "two"; s = twice(x) }
probe counting = begin { n = bump(); m = lib_counter; name = "counting" }
probe printing = begin { p = noisy(); q = exit_value(); name = "printing" }
probe looping = begin { r = forever(3); name = "looping" }
probe sets_global = begin { lib_counter = 5; name = "sets_global" }
probe outer = inner { z = 7; name = "outer" }
probe inner = begin { }
probe inner += begin { println(z) }
probe ctx = begin { c = $nothing; name = "ctx" }
function twice(v) { t = v * 2; return t }
function bump() { lib_counter++; return lib_counter }
function noisy() { println("noise"); return 1 }
function exit_value() { exit(); return 0 }
function forever(k) { return k ? forever(k - 1) : 0 }
`
	cases := []struct {
		name, script string
		flags        []string
		dropped      []string // sorted
	}{
		{name: "unread", script: `probe two { println(name) }`,
			dropped: []string{"(s) = (twice(x))", "(x) = (1)", `(y) = (sprintf("%d", x))`}},
		{name: "read_through", script: `probe two { println(y) }`,
			dropped: []string{`(name) = ("two")`, "(s) = (twice(x))"}},
		{name: "all_read", script: `probe two { println(name, y, s) }`},
		{name: "global_kept", script: `probe counting { println(name) }`},
		{name: "effects_kept", script: `probe printing { println(name) }`},
		{name: "recursion_kept", script: `probe looping { println(name) }`},
		{name: "library_global_assigned", script: `probe sets_global { println(name) }`},
		{name: "user_global_same_name", script: `global x; probe two { x = 2; println(name) }`},
		{name: "user_writes_what_alias_reads", script: `probe two { x = 2; println(name) }`},
		{name: "user_mentions_local", script: `probe two { y = "mine"; println(name) }`,
			dropped: []string{"(s) = (twice(x))"}},
		// inner's first definition has no epilogue: its probe needs no z
		{name: "read_by_inner_epilogue", script: `probe outer { println(name) }`,
			dropped: []string{"(z) = (7)"}},
		{name: "context_variable", script: `probe ctx { println(name) }`,
			dropped: []string{"(c) = ($nothing)"}},
		{name: "condition_reads", script: `global y; probe two if (y) { println(name) }`,
			dropped: []string{"(s) = (twice(x))"}},
		{name: "unoptimized", script: `probe two { println(name) }`, flags: []string{"-u"}},
		// the warning still suggests the locals left out
		{name: "misspelled", script: `probe two { println(nmae, yy) }`,
			dropped: []string{`(name) = ("two")`, "(s) = (twice(x))", "(x) = (1)", `(y) = (sprintf("%d", x))`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pruned, record := elaborated(t, c.script, c.flags, tapset, &pruneRecord{})
			slices.Sort(record.dropped)
			if !slices.Equal(record.dropped, c.dropped) {
				t.Errorf("dropped %q, want %q", record.dropped, c.dropped)
			}
			if whole, _ := elaborated(t, c.script, c.flags, tapset, &pruneRecord{off: true}); pruned != whole {
				t.Errorf("pruned:\n%s\nelided alone:\n%s", pruned, whole)
			}
		})
	}
}

// elaborated is the -p2 output of script over a library file of the
// text tapset (parsed anew: elaboration writes on the library's nodes),
// with record as the pruning's hook.
func elaborated(t *testing.T, script string, flags []string, tapset string, record *pruneRecord) (string, *pruneRecord) {
	t.Helper()
	f, err := syntax.Parse(syntax.NewSource("<input>", script), nil)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := syntax.Parse(syntax.NewSource("t.stp", tapset), &syntax.Config{Tapset: true})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Elaborate([]*syntax.File{f}, Options{Library: []*syntax.File{lib},
		Unoptimized: slices.Contains(flags, "-u"), pruning: record})
	if err != nil {
		return err.(*Errors).Text(), record
	}
	return strings.Join(prog.Warnings, "") + prog.String(), record
}
