package sema

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/probestest"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Each testdata/*.txt file holds chunks:
//
//	=== NAME [-w] [-u]
//	script lines
//	---
//	expected output: the diagnostics as stap prints them (without the
//	"Pass 2" and "suppressed" trailer), or the warnings and the -p2 listing;
//	with -l or -L (listing.txt), stap's listing of the script's probes.
//
// The expectations were produced by `stap -p2` (see testdata/README).
func TestElaborate(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no test data")
	}
	lib, macros := libraryFiles(t), libraryMacros(t)
	for _, file := range files {
		var updated strings.Builder
		chunks, ran := readChunks(t, file), 0
		for _, c := range chunks {
			t.Run(filepath.Base(file)+"/"+c.name, func(t *testing.T) {
				got := run(t, c, lib, macros)
				ran++
				fmt.Fprintf(&updated, "=== %s\n%s\n---\n%s", strings.Join(append([]string{c.name}, c.flags...), " "), c.script, got)
				if got != c.want && !*update {
					t.Errorf("script:\n%s\ngot:\n%s\nwant:\n%s", c.script, got, c.want)
				}
			})
		}
		if *update && ran == len(chunks) {
			os.WriteFile(file, []byte(updated.String()), 0o644)
		}
	}
}

// update rewrites the expectations with bpftap's output, for chunks whose
// expectation did not come from stap (kernel.txt: the fake kernel).
var update = flag.Bool("update", false, "rewrite testdata expectations")

type chunk struct {
	name, script, want string
	flags              []string
}

func readChunks(t testing.TB, file string) []chunk {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []chunk
	for _, part := range strings.Split(string(data), "=== ")[1:] {
		head, rest, _ := strings.Cut(part, "\n")
		script, want, _ := strings.Cut(rest, "---\n")
		fields := strings.Fields(head)
		chunks = append(chunks, chunk{name: fields[0], flags: fields[1:], script: strings.TrimSuffix(script, "\n"), want: want})
	}
	return chunks
}

func libraryFiles(t testing.TB) []*syntax.File {
	stp, _ := tapset.Library()
	macros, _ := tapset.Macros()
	files, err := syntax.ParseFiles(stp, &syntax.Config{Tapset: true, Macros: macros})
	if err != nil {
		t.Fatalf("tapset library: %v", err)
	}
	return files
}

// libraryMacros are the macros of the library's .stpm files
// (@choose_defined), which scripts are parsed with, as the driver does.
func libraryMacros(t testing.TB) syntax.MacroLibrary {
	_, stpm := tapset.Library()
	macros, errs := syntax.LoadMacros(stpm...)
	if len(errs) > 0 {
		t.Fatalf("tapset macros: %v", errs)
	}
	return macros
}

func run(t *testing.T, c chunk, lib []*syntax.File, macros syntax.MacroLibrary) string {
	src := syntax.NewSource("<input>", c.script)
	f, err := syntax.Parse(src, &syntax.Config{Guru: hasFlag(c.flags, "-g"), Macros: macros})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	listing, vars := hasFlag(c.flags, "-l"), hasFlag(c.flags, "-L")
	opts := Options{Library: lib, NoWarnings: hasFlag(c.flags, "-w") || listing || vars,
		Unoptimized: hasFlag(c.flags, "-u") || vars, Verbose: hasFlag(c.flags, "-v"),
		Registry:     probes.BuiltinWith(probestest.New(), probes.Config{Listing: listing || vars}),
		KernelProbes: !hasFlag(c.flags, "--no-kernel"), Listing: listing || vars}
	prog, err := Elaborate([]*syntax.File{f}, opts)
	if err != nil {
		return err.(*Errors).Text()
	}
	if opts.Listing {
		return listed(prog, vars, opts.Verbose)
	}
	return strings.Join(prog.Warnings, "") + prog.String() +
		promoted(prog, "per-CPU", func(g *syntax.Var) bool { return g.PerCPU }) +
		promoted(prog, "per-CPU, touched while attached", func(g *syntax.Var) bool { return g.PerCPU && g.LiveUser }) +
		promoted(prog, "by thread", func(g *syntax.Var) bool { return g.ByThread })
}

// listed is a listing's output (-l, -L, with -v each probe of -L on its
// own line), then "# unresolved" and the errors met, if any.
func listed(prog *Program, vars, each bool) string {
	text, _, err := prog.Listing(vars, each)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	if prog.Unresolved != "" {
		text += "# unresolved\n" + prog.Unresolved
	}
	return text
}

// promoted lists the globals promoted to per-CPU or per-thread storage
// (not part of stap's listing; only kernel probes promote).
func promoted(prog *Program, what string, is func(*syntax.Var) bool) string {
	var names []string
	for _, g := range prog.Globals {
		if is(g) {
			names = append(names, g.Name)
		}
	}
	if names == nil {
		return ""
	}
	return "# " + what + " (bpftap): " + strings.Join(names, ", ") + "\n"
}

func hasFlag(flags []string, f string) bool {
	for _, x := range flags {
		if x == f {
			return true
		}
	}
	return false
}
