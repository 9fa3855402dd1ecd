package tapset_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// TestScanFindsEveryDeclaration checks the index's scan against the
// parser on every embedded file: each function, global and alias name the
// parser finds, the scan finds too (it may find more).
func TestScanFindsEveryDeclaration(t *testing.T) {
	stp, _ := tapset.Library()
	macros, errs := tapset.Macros()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cfg := &syntax.Config{Tapset: true, Arch: "x86_64", Macros: macros}
	for _, src := range stp {
		f, err := syntax.Parse(src, cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := syntax.ScanNames(src, nil)
		for _, d := range f.Decls {
			var name string
			var found []string
			switch d := d.(type) {
			case *syntax.FuncDecl:
				name, found = d.Name, n.Funcs
			case *syntax.GlobalDecl:
				name, found = d.Name, n.Globals
			case *syntax.AliasDecl:
				for _, a := range d.Names {
					var parts []string
					for _, c := range a.Components {
						parts = append(parts, c.Name)
					}
					name := strings.Join(parts, ".")
					if !slices.ContainsFunc(n.Aliases, func(s syntax.AliasName) bool { return s.Name == name }) {
						t.Errorf("%s: the scan misses alias %s", src.Name, name)
					}
				}
				continue
			default:
				continue
			}
			if !slices.Contains(found, name) {
				t.Errorf("%s: the scan misses %s", src.Name, name)
			}
		}
	}
}

// TestReach checks the closure on scripts whose needs are known.
var implied = []tapset.Implied{{Point: "process", Suffixes: true, Calls: []string{"__process_in_target"}}}

func TestReach(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   []string // files that must be reached
		not    []string // files that must not be
	}{
		{`probe begin { exit() }`, nil, []string{"tapset/syscalls.stp", "tapset/json.stp", "tapset/process.stp"}},
		{`probe process.begin { }`, []string{"tapset/process.stp"}, nil},
		{`probe syscall.* { println(argstr) }`, []string{"tapset/syscalls.stp"}, []string{"tapset/json.stp"}},
		{`probe sys*.open { }`, []string{"tapset/syscalls.stp"}, nil},
		// the entries' aliases (on kernel.trace) take no .return: only
		// socketcall_return.stp's syscall.send.return and the like are named
		{`probe syscall.*.return { println(name) }`, []string{"tapset/socketcall_return.stp"}, []string{"tapset/syscalls.stp", "tapset/socketcall.stp"}},
		// nd_syscall = syscall takes suffixes
		{`probe nd_syscall.*.return { }`, []string{"tapset/syscalls.stp"}, nil},
		{`probe syscall.read.return { }`, nil, []string{"tapset/syscalls.stp"}},
		{`probe vfs.read.return { }`, []string{"tapset/vfs_probes.stp"}, nil},
		{`probe kernel.function("vfs_read").return { }`, nil, []string{"tapset/syscalls.stp", "tapset/vfs_probes.stp"}},
		{`probe begin { println(errno_str(1)) }`, []string{"tapset/errno.stp"}, []string{"tapset/syscalls.stp"}},
		{`probe json_data { @json_output_data_start }`, []string{"tapset/json.stp", "tapset/json.stpm"}, nil},
		{`@define p %( syscall.open %) probe @p { }`, []string{"tapset/syscalls.stp"}, nil},
	} {
		stp, stpm := tapset.LibraryIndex().Reach([]*syntax.Names{syntax.ScanNames(syntax.NewSource("<input>", tc.script), nil)}, implied)
		var got []string
		for _, src := range append(stp, stpm...) {
			got = append(got, src.Name)
		}
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: %s not reached (got %v)", tc.script, w, got)
			}
		}
		for _, w := range tc.not {
			if slices.Contains(got, w) {
				t.Errorf("%s: %s reached", tc.script, w)
			}
		}
	}
}

// TestReachImpliedLocal: an implied call with a Local is reached once the
// local is mentioned anywhere in the closure (the script, before or after
// the point, or a library file reached later), not otherwise.
func TestReachImpliedLocal(t *testing.T) {
	implied := []tapset.Implied{{Point: "process", Suffixes: true, Calls: []string{"json_set_prefix"}, Local: "err"}}
	for script, reached := range map[string]bool{
		`probe process.begin { }`:                                       false,
		`probe process.begin { println(err) }`:                          true,
		`probe begin { err = 1 } probe process.begin { }`:               true,
		`probe process.begin { println(errno_str(1)) }`:                 true, // errno.stp names its parameter err
		`probe begin { println(err) }`:                                  false,
		`probe process.begin { println(errno_str(1)) } probe begin { }`: true,
	} {
		stp, _ := tapset.LibraryIndex().Reach([]*syntax.Names{syntax.ScanNames(syntax.NewSource("<input>", script), nil)}, implied)
		got := slices.ContainsFunc(stp, func(s *syntax.Source) bool { return s.Name == "tapset/json.stp" })
		if got != reached {
			t.Errorf("%s: json.stp reached %v, want %v", script, got, reached)
		}
	}
}
