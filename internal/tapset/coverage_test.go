package tapset_test

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// The coverage of SystemTap's documented library (testdata/stap/documented.txt):
// each function and probe alias of its Tapset Reference is elaborated (pass 2)
// as a script would use it, in guru mode, against the running kernel's
// functions and types with every kind of probe taken as attachable. A name is provided when that
// elaborates, refused when the error says why bpftap cannot serve it (refusals),
// and otherwise a failure, unless testdata/stap/missing.txt lists it as not yet
// built (a name listed there that resolves is a failure too: the list only
// shrinks).

// refusals are the words of the errors that refuse a name with a reason.
var refusals = []string{
	"cannot run in bpftap:",      // Builtin.Unsupported
	"is not available in bpftap", // an alias no BPF program can serve
}

// absences are the words of the errors that say what the running kernel
// or a program lacks (probes.Error.Absence, a feature's minimum version):
// the name resolves on a kernel or a build of the program that has it (the
// guests' cases use them; stap.cache_add_nss's marker is in stap built
// with NSS).
var absences = []string{
	"this kernel has no ",
	"is not loaded",
	"has no function",
	"has no marker",
	"this kernel lacks",
}

// documented is one line of documented.txt.
type documented struct {
	kind, sig, file string
}

func readDocumented(t *testing.T) []documented {
	t.Helper()
	f, err := os.Open("testdata/stap/documented.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var docs []documented
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("documented.txt: bad line %q", line)
		}
		docs = append(docs, documented{fields[0], fields[1], fields[2]})
	}
	return docs
}

// readMissing reads missing.txt: names (a function's signature or a probe
// alias) not yet built, one per line after its tapset file's comment.
func readMissing(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("testdata/stap/missing.txt")
	if err != nil {
		t.Fatal(err)
	}
	missing := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			missing[line] = true
		}
	}
	return missing
}

// coverageRegistry resolves points against the running kernel, taking
// every probe kind as attachable (this machine's kernel refuses kprobes;
// the guests run them).
func coverageRegistry() *probes.Registry {
	return probes.BuiltinFor(probes.RunningKernel{CanAttach: func(*attach.Point) error { return nil }})
}

// coverageUses are the scripts that use a documented name: a function is
// called with a literal of each parameter's type (long for an untyped
// one), its value printed, in a kernel probe, then in begin, then the same
// calls without a value (stap's declarations may leave the result out); an
// alias is probed.
func coverageUses(d documented) []string {
	if d.kind == "probe" {
		return []string{fmt.Sprintf("probe %s { print(pp()) }", d.sig)}
	}
	name, _, params := splitSignature(d.sig)
	for i, p := range params {
		if p == "?" {
			params[i] = "long"
		}
	}
	var uses []string
	for _, call := range []string{callOf(name, "any", params), callOf(name, "", params)} {
		call = "println(1); " + companions[name] + call // a probe of an elided call alone is elided too
		uses = append(uses, fmt.Sprintf(`probe kernel.trace("raw_syscalls:sys_enter") { %s }`, call),
			fmt.Sprintf("probe begin { %s }", call))
	}
	return uses
}

// The classes of a documented name, the columns of the test's table.
const (
	provided = iota
	refused
	absent
	notYet
	classes
)

// TestDocumentedCoverage checks each documented name (see above), and logs
// a table of the classes by SystemTap's tapset file.
func TestDocumentedCoverage(t *testing.T) {
	missing := readMissing(t)
	reg := coverageRegistry()
	byKind := map[string]*[classes]int{"function": new([classes]int), "probe": new([classes]int)}
	byFile := map[string]*[classes]int{}
	for _, d := range readDocumented(t) {
		err := elaborateIn(t, reg, coverageUses(d))
		class := classOf(err, missing[d.sig])
		switch {
		case missing[d.sig] && class != notYet:
			t.Errorf("%s %s is listed in missing.txt but resolves or is refused with a reason: remove it", d.kind, d.sig)
		case class < 0:
			t.Errorf("%s %s (%s) neither resolves nor is refused with a reason:\n%s", d.kind, d.sig, d.file, errorText(err))
			continue
		}
		if byFile[d.file] == nil {
			byFile[d.file] = new([classes]int)
		}
		byFile[d.file][class]++
		byKind[d.kind][class]++
	}
	for _, kind := range []string{"function", "probe"} {
		c := byKind[kind]
		t.Logf("documented %ss: %d provided, %d refused with a reason, %d absent from this kernel, %d not yet built (missing.txt)",
			kind, c[provided], c[refused], c[absent], c[notYet])
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	t.Logf("| tapset file | provided | refused | absent here | not yet |")
	for _, f := range files {
		c := byFile[f]
		t.Logf("| %s | %d | %d | %d | %d |", f, c[provided], c[refused], c[absent], c[notYet])
	}
}

// classOf is the class of a name whose elaboration gave err, listed in
// missing.txt or not; -1 for none. An unresolved function anywhere in the
// errors is no reason.
func classOf(err error, listed bool) int {
	switch {
	case err == nil:
		return provided
	case strings.Contains(errorText(err), "unresolved function"):
		if listed {
			return notYet
		}
		return -1
	case isRefusal(err):
		return refused
	case isAbsence(err):
		return absent
	case listed:
		return notYet
	}
	return -1
}

// elaborateIn elaborates each script with reg until one passes; else it
// returns the first error that refuses with a reason, or the first error.
func elaborateIn(t *testing.T, reg *probes.Registry, scripts []string) error {
	t.Helper()
	var first error
	for _, script := range scripts {
		err := elaborateScript(t, reg, script)
		switch {
		case err == nil:
			return nil
		case isRefusal(err):
			return err
		case first == nil:
			first = err
		}
	}
	return first
}

// elaborateScript elaborates script with the library files it reaches, as
// the driver does.
func elaborateScript(t *testing.T, reg *probes.Registry, script string) error {
	t.Helper()
	_, macros := libraryWithMacros(t)
	src := syntax.NewSource("<input>", script)
	stp, _ := tapset.LibraryIndex().Reach([]*syntax.Names{syntax.ScanNames(src, nil)}, probes.PrologueCalls)
	cfg := &syntax.Config{Arch: "x86_64", Macros: macros}
	user, err := syntax.Parse(src, cfg)
	if err != nil {
		return err
	}
	lib := parseLibrary(t, stp, cfg)
	_, err = sema.Elaborate([]*syntax.File{user}, sema.Options{Library: lib, KernelProbes: true, Registry: reg, Guru: true})
	return err
}

// errorText is the whole text of an elaboration's errors (each with the
// chain of its alias's probe points).
func errorText(err error) string {
	if e, ok := err.(*sema.Errors); ok {
		return e.Text()
	}
	return err.Error()
}

func isRefusal(err error) bool { return containsAny(errorText(err), refusals) }

func isAbsence(err error) bool { return containsAny(errorText(err), absences) }

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
