package guest

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The suites of SystemTap's own testsuite that TestStapSuites runs: buildok
// (scripts stap must translate and build, `-p4`: bpftap verifies and loads
// them) and semok (scripts that must pass elaboration, `-p2`).
var stapSuites = []string{"buildok", "semok"}

// stapSuiteLibraries are the testsuite's directories of scripts the
// suites' tests name through $SRCDIR: semlib (-I), transko.
var stapSuiteLibraries = []string{"semlib", "transko"}

// stapSuitesKernel is the kernel TestStapSuites boots: Debian 13's.
const stapSuitesKernel = "6.12"

// A stapSuiteFailure is a line of testdata/stapsuites/expected.txt: a test
// of SystemTap's suites that fails in bpftap, its class (why it cannot
// pass: stapSuiteClasses) and words its error says.
type stapSuiteFailure struct {
	class, says string
	line        int
}

// stapSuiteClasses are the reasons a test of SystemTap's suites may fail in
// bpftap: those issue 37 allows, and bpftap's known gaps, each listed.
var stapSuiteClasses = map[string]string{
	"dwarf":     "needs DWARF debuginfo this guest has not installed (the kernel's, a program's)",
	"embedded":  "has embedded C, which no BPF program can run",
	"guru":      "writes kernel memory or registers (guru mode), which no BPF program can",
	"kernel":    "needs a kernel function, module, tracepoint or feature this kernel lacks",
	"internals": "tests stap's internals: its tapset's private functions, its translator's options or its module runtime",
	"tool":      "needs a program this guest has not (a C compiler, glibc, stap's installed examples)",
	"gap":       "needs what bpftap lacks (docs/stap-suites.md lists it)",
}

// TestStapSuites runs SystemTap's buildok and semok suites in the 6.12
// guest, with bpftap as stap, and checks each result against
// testdata/stapsuites/expected.txt: a test listed there must fail with the
// words listed, one not listed must pass. It logs the counts by suite and
// class. SystemTap's testsuite is not in Debian's binary packages:
// $BPFTAP_STAP_TESTSUITE names a directory holding SystemTap's
// testsuite/buildok and testsuite/semok (from SystemTap's source: `git
// archive HEAD testsuite | tar -x`); without it the test skips.
func TestStapSuites(t *testing.T) {
	expected := readStapSuiteExpected(t) // checked everywhere
	src := os.Getenv("BPFTAP_STAP_TESTSUITE")
	if src == "" {
		t.Skipf("BPFTAP_STAP_TESTSUITE is not set: it names SystemTap's testsuite directory (from SystemTap's source, which Debian's binary packages do not have); expected.txt lists %d tests that fail", len(expected))
	}
	files := stapSuiteFiles(t, src)
	run := bootStapSuites(t, files)
	got := parseStapSuiteRun(t, run)
	checkStapSuites(t, got, expected)
}

// stapSuiteFiles are the suites' files under src, with the libraries
// some of their scripts read (stapSuiteLibraries), by their path in the
// guest (stapsuites/testsuite/buildok/NAME.stp).
func stapSuiteFiles(t *testing.T, src string) map[string]string {
	files := map[string]string{}
	for _, dir := range slices.Concat(stapSuites, stapSuiteLibraries) {
		scripts, err := filepath.Glob(filepath.Join(src, dir, "*.stp"))
		if err != nil || len(scripts) == 0 {
			t.Fatalf("BPFTAP_STAP_TESTSUITE: no %s/*.stp in %s", dir, src)
		}
		for _, s := range scripts {
			files["stapsuites/testsuite/"+dir+"/"+filepath.Base(s)] = s
		}
	}
	return files
}

// bootStapSuites boots the 6.12 guest with the suites and the runner
// (testdata/stapsuites/run.sh) and returns the runner's output.
func bootStapSuites(t *testing.T, files map[string]string) *Run {
	cache, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	k := Kernels[slices.IndexFunc(Kernels, func(k Kernel) bool { return k.String() == stapSuitesKernel })]
	qemu, err := k.Arch.QEMUPath()
	unavailable(t, err)
	busybox, err := k.Arch.Busybox(cache)
	unavailable(t, err)
	img, err := k.Fetch(cache)
	unavailable(t, err)
	dir := t.TempDir()
	bpftap, _, _, err := BuildStatic("../..", dir, k.Arch, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Initramfs{Busybox: busybox, Bpftap: bpftap, Config: img.Config, Files: files,
		Bench: filepath.Join("testdata", "stapsuites", "run.sh")}
	// the NFS client and server, which nfs.*, nfsd.* and sunrpc.* probe
	if err := r.AddModules(img, slices.Concat(k.Arch.BootModules(), CaseModules)...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if deadline, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), deadline.Add(-time.Minute))
	}
	defer cancel()
	start := time.Now()
	run, _, err := BootBench(ctx, qemu, img, r, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: ran %d scripts in %v", img.Kernel, len(files), time.Since(start).Round(time.Second))
	if run.Status != 0 {
		t.Fatalf("the runner exited with status %d\n%s%s", run.Status, run.Stdout, run.Stderr)
	}
	return run
}

// A stapSuiteResult is a test's exit status in the guest and, for a
// failure, the lines of its output that say why.
type stapSuiteResult struct {
	status string
	why    string
}

// parseStapSuiteRun reads the runner's lines, FILE STATUS [| WHY].
func parseStapSuiteRun(t *testing.T, run *Run) map[string]stapSuiteResult {
	got := map[string]stapSuiteResult{}
	sc := bufio.NewScanner(strings.NewReader(run.Stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		head, why, _ := strings.Cut(sc.Text(), " | ")
		name, status, ok := strings.Cut(head, " ")
		if !ok {
			t.Fatalf("runner: bad line %q", sc.Text())
		}
		got[name] = stapSuiteResult{status, why}
	}
	return got
}

// readStapSuiteExpected reads testdata/stapsuites/expected.txt: a line
// NAME CLASS WORDS... per test expected to fail; # starts a comment.
func readStapSuiteExpected(t *testing.T) map[string]stapSuiteFailure {
	path := filepath.Join("testdata", "stapsuites", "expected.txt")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]stapSuiteFailure{}
	for i, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 || stapSuiteClasses[f[1]] == "" || want[f[0]].line != 0 {
			t.Fatalf("%s:%d: want NAME CLASS WORDS..., a class of %v, each name once", path, i+1, slices.Sorted(maps.Keys(stapSuiteClasses)))
		}
		want[f[0]] = stapSuiteFailure{class: f[1], says: strings.Join(f[2:], " "), line: i + 1}
	}
	return want
}

// checkStapSuites fails for each test whose result is not the one
// expected, and logs the counts.
func checkStapSuites(t *testing.T, got map[string]stapSuiteResult, want map[string]stapSuiteFailure) {
	counts := map[string]map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		res, exp := got[name], want[name]
		suite, _, _ := strings.Cut(name, "/")
		class := "pass"
		switch {
		case res.status == "0" && exp.line != 0:
			t.Errorf("%s passes: remove it from expected.txt (line %d, %s)", name, exp.line, exp.class)
		case res.status != "0" && exp.line == 0:
			t.Errorf("%s fails (status %s): %s", name, res.status, res.why)
			class = "unexpected"
		case res.status != "0" && !strings.Contains(res.why, exp.says):
			t.Errorf("%s fails for another reason than expected.txt's (line %d, %q): %s", name, exp.line, exp.says, res.why)
			class = "unexpected"
		case res.status != "0":
			class = exp.class
		}
		if counts[suite] == nil {
			counts[suite] = map[string]int{}
		}
		counts[suite][class]++
	}
	for name, exp := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("expected.txt line %d: %s is not in the suites", exp.line, name)
		}
	}
	for _, suite := range stapSuites {
		var parts []string
		for _, class := range slices.Sorted(maps.Keys(counts[suite])) {
			parts = append(parts, fmt.Sprintf("%s %d", class, counts[suite][class]))
		}
		t.Logf("%s: %s", suite, strings.Join(parts, ", "))
	}
}
