package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/syntax"
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

// stapOptionForm is one line of testdata/stap1-options.txt: an option
// form of stap(1), how bpftap answers it, and the arguments to try it with.
type stapOptionForm struct {
	line   int
	answer string   // works, accepted, refused
	name   string   // "-p", "--color"
	argv   []string // the options it needs, then the form
}

func readStapOptions(t *testing.T) []stapOptionForm {
	t.Helper()
	data, err := os.ReadFile("../../testdata/stap1-options.txt")
	if err != nil {
		t.Fatal(err)
	}
	release, arch := syntax.DefaultConfig().KernelRelease, syntax.DefaultConfig().Arch
	var forms []stapOptionForm
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words := strings.Fields(line)
		form, needs, _ := strings.Cut(strings.Join(words[1:], " "), " + ")
		// what the option needs comes first, as stap reads -g before
		// --suppress-time-limits
		argv := append(strings.Fields(needs), strings.Fields(form)...)
		for j, a := range argv {
			argv[j] = strings.NewReplacer("RELEASE", release, "ARCH", arch).Replace(a)
		}
		name, _, _ := strings.Cut(strings.Fields(form)[0], "=")
		forms = append(forms, stapOptionForm{i + 1, words[0], name, argv})
	}
	return forms
}

// TestStapOptionsAnswered tries every option form of stap(1) on bpftap's
// command line: none is unrecognized; a refused one is refused with its
// reason, the others are taken.
func TestStapOptionsAnswered(t *testing.T) {
	forms := readStapOptions(t)
	if len(forms) < 90 {
		t.Fatalf("%d option forms in testdata/stap1-options.txt: the list is cut short", len(forms))
	}
	for _, f := range forms {
		argv := f.argv
		switch {
		case f.name == "-" || f.name == "-e" || f.name == "-l" || f.name == "-L" || strings.HasPrefix(f.name, "--dump-"):
		default:
			argv = append(slices.Clone(argv), "-e", "probe begin {}")
		}
		_, err := parseArgs(argv)
		msg := fmt.Sprint(err)
		switch {
		case strings.Contains(msg, "unrecognized") || strings.Contains(msg, "invalid option"):
			t.Errorf("line %d: %q: %v", f.line, argv, err)
		case f.answer == "refused" && (err == nil || !strings.Contains(msg, "is not supported: ")):
			t.Errorf("line %d: %q: got %v, want it refused with its reason", f.line, argv, err)
		case f.answer != "refused" && err != nil:
			t.Errorf("line %d: %q: %v", f.line, argv, err)
		}
	}
}

// TestStapOptionsDocumented: --help, the manual page and docs/options.md
// name every option of stap(1).
func TestStapOptionsDocumented(t *testing.T) {
	man, err := os.ReadFile("../../docs/bpftap.1")
	if err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile("../../docs/options.md")
	if err != nil {
		t.Fatal(err)
	}
	help := helpText + stapOptionsHelp()
	for _, f := range readStapOptions(t) {
		if f.name == "-" {
			continue
		}
		// an option is followed by a space, "=", "[", ",", "`" or the line's end
		word := regexp.QuoteMeta(f.name) + "([ =\\[,`]|$)"
		if !regexp.MustCompile(`(?m)(^| )` + word).MatchString(help) {
			t.Errorf("--help does not name %s", f.name)
		}
		roff := strings.ReplaceAll(regexp.QuoteMeta(f.name), "-", `\\-`)
		if !regexp.MustCompile(`(?m)` + roff + `(["\\ =\[,]|$)`).Match(man) {
			t.Errorf("docs/bpftap.1 does not name %s", f.name)
		}
		if !regexp.MustCompile("`" + word).Match(table) {
			t.Errorf("docs/options.md does not name %s", f.name)
		}
	}
}

// TestFindExample: --example finds the one script of its name at any
// depth, and says so when there is none or more than one.
func TestFindExample(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a/x.stp", "b/c/y.stp", "d/y.stp", "e/x.stp.txt"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), nil, 0o644)
	}
	if got, err := findExample(dir, "x.stp"); err != nil || got != filepath.Join(dir, "a/x.stp") {
		t.Errorf("x.stp: %q, %v", got, err)
	}
	if _, err := findExample(dir, "y.stp"); err == nil || !strings.HasPrefix(err.Error(), "Multiple examples found:") {
		t.Errorf("y.stp: %v", err)
	}
	if _, err := findExample(dir, "z.stp"); err == nil || err.Error() != "Example 'z.stp' was not found under '"+dir+"'" {
		t.Errorf("z.stp: %v", err)
	}
}

// TestExporterRefusesRlimits: the exporter's scripts run in its own
// process, which --rlimit-* among a script's options would limit.
func TestExporterRefusesRlimits(t *testing.T) {
	var log strings.Builder
	if status := runScript(context.Background(), "x.stp", []string{"--rlimit-cpu=10"}, &log, nil); status != 1 {
		t.Errorf("status %d, want 1", status)
	}
	if !strings.Contains(log.String(), "--rlimit-* would limit the exporter itself") {
		t.Errorf("log %q", log.String())
	}
}
