package driver

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/output"
	kern "github.com/bpftap/bpftap/internal/target"
	"github.com/bpftap/bpftap/internal/target/targettest"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

var update = flag.Bool("update", false, "rewrite the expected outputs of testdata/run from what bpftap prints")

// TestRun runs every script of testdata/run through the whole pipeline and compares
// what it prints with the files beside it:
//
//	NAME.stp   the script; `#! args: ...` lines add command-line options (before the
//	           script; $WORKLOAD names a workload program, see TestMain),
//	           `#! scriptargs: ...` script arguments (after it),
//	           `#! stdin: "TEXT"` the standard input (a Go string literal),
//	           `#! status: N` gives the expected exit status (default 0), and
//	           `#! requires: bpf` marks a case that loads BPF programs: without
//	           the privilege or the kernel support it is skipped, and the reason
//	           is printed once; `#! requires: python3.11` one that runs Debian's
//	           /usr/bin/python3.11 (skipped, saying so, where it is absent);
//	           `#! requires: task_from_pid` one that finds tasks by pid (the
//	           bpf_task_from_pid kfunc, Linux 6.2); `#! allow: skipped probes`
//	           lets a script whose probes fire system-wide end with stap's
//	           skipped-probes warning and no error, beside its NAME.err (a
//	           probe re-entered on a CPU, from an interrupt, is skipped; how
//	           often depends on what else the machine runs)
//	NAME.out   expected standard output
//	NAME.err   expected standard error (absent: none)
//
// Scripts run in-process through Main, exactly as the command runs them.
// A script whose run saved its program in the cache of programs (in the
// tests' directory: TestMain) runs a second time, from the cache, and
// must do exactly as the first.
func TestRun(t *testing.T) {
	for _, script := range runScripts(t) {
		name := strings.TrimSuffix(filepath.Base(script), ".stp")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if first := runCase(t, script); first != nil && first.programFile != "" && !t.Failed() {
				if second := runCase(t, script); second == nil || !second.programCached || second.programFile != first.programFile {
					t.Errorf("the second run did not read the program the first saved in %s", first.programFile)
				}
			}
		})
	}
}

// runScripts returns the scripts of testdata/run.
func runScripts(t *testing.T) []string {
	scripts, err := filepath.Glob("../../testdata/run/*.stp")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts in testdata/run: %v", err)
	}
	return scripts
}

// TestRunAsOf510 runs the scripts of testdata/run again on this kernel
// told to lack what Linux 5.10 lacks (BPFTAP_KERNEL_AS_OF=5.10), so that
// every fallback bpftap has for older kernels runs in the ordinary suite
// (the guests then show the 5.10 verifier accepts it). A script whose
// output differs there has NAME.out@5.10 and NAME.err@5.10 beside its
// own, and `#! status@5.10: N` when its status does.
func TestRunAsOf510(t *testing.T) {
	old, had := os.LookupEnv("BPFTAP_KERNEL_AS_OF")
	os.Setenv("BPFTAP_KERNEL_AS_OF", "5.10") // the subtests run in this process, and only they now
	t.Cleanup(func() {
		if had {
			os.Setenv("BPFTAP_KERNEL_AS_OF", old)
		} else {
			os.Unsetenv("BPFTAP_KERNEL_AS_OF")
		}
	})
	for _, script := range runScripts(t) {
		name := strings.TrimSuffix(filepath.Base(script), ".stp")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runCaseOn(t, script, "5.10")
		})
	}
}

func runCase(t *testing.T, script string) *session { return runCaseOn(t, script, "") }

// runCaseOn runs a script of testdata/run and compares what it did with
// what the files beside it expect, on kernel ("" for this one as it is,
// else what NAME.out@KERNEL and NAME.err@KERNEL expect where they exist);
// it returns the session that ran it (nil when Main made none).
func runCaseOn(t *testing.T, script, kernel string) *session {
	text, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	d := caseDirectives(t, string(text))
	for _, r := range d.requires {
		requireFeature(t, r)
	}
	var stdout, stderr bytes.Buffer
	// A safety net: a script that never exits ends after 20 s and fails its comparison.
	argv := append(append(append([]string{"-T", "20"}, d.args...), script), d.scriptArgs...)
	var ran *session
	status := runMain(argv, strings.NewReader(d.stdin), &stdout, &stderr, func(s *session) { ran = s })
	base := strings.TrimSuffix(script, ".stp")
	expected := expectedFiles(base, kernel)
	out, errs, want := expected(".out"), expected(".err"), d.status
	if s, ok := d.statusOn[kernel]; ok {
		want = s
	}
	if *update {
		updateExpected(t, base+".out", kernel, stdout.String())
		updateExpected(t, base+".err", kernel, stderr.String())
	}
	compareFile(t, "stdout", out, stdout.String())
	if d.skipsAllowed {
		stderr = *bytes.NewBufferString(skipsOnly.ReplaceAllString(stderr.String(), ""))
	}
	compareFile(t, "stderr", errs, stderr.String())
	if status != want {
		t.Errorf("exit status %d, want %d\nstderr:\n%s", status, want, stderr.String())
	}
	return ran
}

// expectedFiles returns what names the file of a script's expected output
// with suffix (".out", ".err") on kernel: base+suffix+"@"+kernel where it
// exists, else base+suffix.
func expectedFiles(base, kernel string) func(suffix string) string {
	return func(suffix string) string {
		if kernel != "" {
			if _, err := os.Stat(base + suffix + "@" + kernel); err == nil {
				return base + suffix + "@" + kernel
			}
		}
		return base + suffix
	}
}

// skipsOnly is stap's closing warning when probes were skipped and no
// error was met (`#! allow: skipped probes`).
var skipsOnly = regexp.MustCompile(`(?m)^WARNING: Number of errors: 0, skipped probes: \d+\n`)

// directives are the `#!` lines of a test script.
type directives struct {
	args, scriptArgs, requires []string
	stdin                      string
	status                     int
	skipsAllowed               bool
	// statusOn is the status on a kernel, where it differs (`#!
	// status@5.10: 1`).
	statusOn map[string]int
}

// caseDirectives reads the `#! args:`, `#! scriptargs:`, `#! stdin:`,
// `#! status:` (`#! status@5.10:` on TestRunAsOf510's kernel),
// `#! requires:` and `#! allow:` lines of a test script.
func caseDirectives(t *testing.T, text string) (d directives) {
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, "#! ")
		if !ok {
			continue
		}
		key, value, _ := strings.Cut(rest, ":")
		value = strings.TrimSpace(value)
		switch key {
		case "args":
			d.args = append(d.args, expandWorkload(splitArgs(value))...)
		case "scriptargs":
			d.scriptArgs = append(d.scriptArgs, expandWorkload(splitArgs(value))...)
		case "requires":
			d.requires = append(d.requires, splitArgs(value)...)
		case "stdin":
			s, err := strconv.Unquote(value)
			if err != nil {
				t.Fatalf("bad stdin directive %q", line)
			}
			d.stdin = s
		case "status", "status@5.10":
			n, err := strconv.Atoi(value)
			if err != nil {
				t.Fatalf("bad status directive %q", line)
			}
			if _, kernel, on := strings.Cut(key, "@"); on {
				d.statusOn = map[string]int{kernel: n}
			} else {
				d.status = n
			}
		case "allow":
			if value != "skipped probes" {
				t.Fatalf("bad allow directive %q", line)
			}
			d.skipsAllowed = true
		default:
			t.Fatalf("unknown directive %q", line)
		}
	}
	return d
}

// requireFeature skips t unless this process has feature: "bpf" (it may
// create maps and load programs), "python3.11" (the file
// /usr/bin/python3.11, whose markers the python tapset probes), or a
// kernel feature of package target by its name, which fails t where the
// kernel's version says it must be there (targettest.Require).
func requireFeature(t *testing.T, feature string) {
	switch feature {
	case "bpf":
		requireBPF(t)
	case "python3.11":
		if _, err := os.Stat("/usr/bin/python3.11"); err != nil {
			t.Skipf("requires Debian's python3.11: %v", err)
		}
	default:
		f := kern.ByName(feature)
		if f == nil {
			t.Fatalf("unknown requirement %q", feature)
		}
		requireBPF(t)
		targettest.Require(t, targettest.Running(t), f)
	}
}

// requireBPF skips t unless this process may use bpf, checked once by
// doing so. The first skip says why; the others refer to it.
func requireBPF(t testing.TB) {
	bpfOnce.Do(func() { bpfMissing = probeBPF() })
	if bpfMissing == nil {
		return
	}
	reported := bpfReported.Swap(true)
	if !reported {
		t.Skipf("requires bpf, which this process cannot use: %v", bpfMissing)
	}
	t.Skip("requires bpf (see the first skipped case for why)")
}

var (
	bpfOnce     sync.Once
	bpfMissing  error
	bpfReported atomic.Bool
)

// probeBPF creates a map and loads a program that returns 0.
func probeBPF() error {
	if err := bpfrt.CheckPrivileges(); err != nil {
		return err
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return err
	}
	m.Close()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err != nil {
		return err
	}
	return p.Close()
}

// splitArgs splits a directive's value into words; single or double quotes group.
func splitArgs(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func compareFile(t *testing.T, what, path, got string) {
	want, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if what == "stderr" {
		got = output.WithoutUnreadWarning(got, string(want))
	}
	if got != string(want) {
		t.Errorf("%s differs from %s\n--- got ---\n%s--- want ---\n%s", what, filepath.Base(path), got, want)
	}
}

// updateExpected writes content as the expectation path holds on kernel:
// path itself when kernel is "", else path@kernel unless path holds
// content already.
func updateExpected(t *testing.T, path, kernel, content string) {
	if kernel == "" {
		writeExpected(t, path, content)
		return
	}
	if base, _ := os.ReadFile(path); string(base) == content {
		os.Remove(path + "@" + kernel)
		return
	}
	if err := os.WriteFile(path+"@"+kernel, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeExpected(t *testing.T, path, content string) {
	if content == "" {
		os.Remove(path)
		return
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDebianUserExamples runs Debian's SystemTap examples that need only
// user-side probes, unchanged, and compares what they print. sizeof.stp
// runs with its meta file's test_check arguments: the size it prints is
// the one the kernel's BTF gives (its installcheck asks for a type of a C
// library header, which bpftap cannot read: cast_sizeof_headers).
func TestDebianUserExamples(t *testing.T) {
	const dir = "/usr/share/systemtap/examples/"
	btf, err := kernel.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	task, err := btf.TypeByName("task_struct", kernel.KindStruct)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		script string
		args   []string
		want   string
	}{
		{"general/helloworld.stp", nil, "hello world\n"},
		{"general/sizeof.stp", []string{"task_struct", "kernel<include/linux/sched.h>"},
			fmt.Sprintf("type task_struct in kernel<include/linux/sched.h> byte-size: %d\n", task.Size)},
	} {
		t.Run(filepath.Base(c.script), func(t *testing.T) {
			script := dir + c.script
			if _, err := os.Stat(script); err != nil {
				t.Fatalf("%v (CI installs systemtap-doc)", err)
			}
			var stdout, stderr bytes.Buffer
			status := Main(append([]string{script}, c.args...), strings.NewReader(""), &stdout, &stderr)
			if status != 0 || stderr.Len() > 0 || stdout.String() != c.want {
				t.Errorf("exit status %d, stdout %q (want %q), stderr:\n%s", status, stdout.String(), c.want, stderr.String())
			}
		})
	}
}

// TestSwitchfileExample runs Debian's switchfile.stp as its meta file's
// installcheck does (-o FILE), for 5.5 s instead of 8: a line a second,
// switch_file() at 5 s, so FILE has the first lines and FILE.1 the rest.
func TestSwitchfileExample(t *testing.T) {
	const script = "/usr/share/systemtap/examples/io/switchfile.stp"
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("%v (CI installs systemtap-doc)", err)
	}
	out := filepath.Join(t.TempDir(), "switchfile.stp.out")
	var stdout, stderr bytes.Buffer
	if status := Main([]string{"-o", out, script, "-T", "5.5"}, strings.NewReader(""), &stdout, &stderr); status != 0 || stderr.Len() > 0 {
		t.Fatalf("exit status %d, stderr:\n%s", status, stderr.String())
	}
	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(out + ".1")
	if err != nil {
		t.Fatal(err)
	}
	// the fifth line and the switch are due at the same time
	firstRe := regexp.MustCompile(`\ABegin logging\n(log data\n){4,5}\z`)
	secondRe := regexp.MustCompile(`\A(log data\n){0,1}End logging\n\z`)
	lines := strings.Count(string(first)+string(second), "log data\n")
	if !firstRe.Match(first) || !secondRe.Match(second) || lines != 5 || stdout.Len() > 0 {
		t.Errorf("%s:\n%s%s.1:\n%s(stdout %q)", out, first, out, second, stdout.String())
	}
	if _, err := os.Stat(out + ".2"); err == nil {
		t.Errorf("%s.2 exists: one switch made two", out)
	}
}
