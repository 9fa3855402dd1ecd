package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"golang.org/x/sys/unix"
	"golang.org/x/tools/txtar"
)

// TestCLI runs the txtar scripts of testdata/cli against the built bpftap binary,
// as a user would run it from a shell. Each archive's comment is a script, one
// command a line (`#` starts a comment):
//
//	exec bpftap ARGS...      run a command; it must exit 0 (prefix `!` to expect failure)
//	status N                 the last command's exit status was N
//	stdout REGEXP            the last command's stdout matches (prefix `!` for no match)
//	stderr REGEXP            the same for stderr
//	cmp stdout FILE          stdout equals the archive's FILE exactly (also stderr)
//	signal NAME DURATION     the next exec receives SIGNAME (KILL, TERM, ...) after DURATION
//	signal NAME on REGEXP    ... as soon as its stderr matches REGEXP (a point in its run,
//	                         where a delay would depend on the machine's speed)
//	signal NAME on stdout REGEXP   the same, on its stdout
//	sleep DURATION           wait
//	exists FILE              FILE exists in the working directory (prefix `!` for absent)
//
// A line may start with a condition, `[!kfuncs]`: it runs only where the
// running kernel cannot probe kernel functions, with kprobes or fentry;
// `[!lsm]`: where it runs no BPF LSM program. Where it is skipped, the
// test's log says so. There are no `[kfuncs]` or `[lsm]`: such lines would
// run on no test machine (this host lacks both, and the guest kernels that
// have them run no testdata/cli); they are cases of testdata/guest.
//
// The archive's files are written to a fresh directory, which is the working directory;
// $BPFTAP names the binary for commands that run it through a shell;
// $EXAMPLES in an argument is the repository's examples directory; $RUN, in
// an argument and in the environment, is a number of this test process's
// own, to name what must not be shared with a second copy of the suite
// running at the same time (module names, the directories they serve).
func TestCLI(t *testing.T) {
	bin := buildBinary(t)
	archives, _ := filepath.Glob("../../testdata/cli/*.txt")
	if len(archives) == 0 {
		t.Fatal("no scripts in testdata/cli")
	}
	for _, path := range archives {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			t.Parallel()
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s := &cliScript{t: t, bin: bin, dir: t.TempDir(), files: map[string]string{}}
			for _, f := range ar.Files {
				s.files[f.Name] = string(f.Data)
				path := filepath.Join(s.dir, f.Name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, f.Data, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for i, line := range strings.Split(string(ar.Comment), "\n") {
				s.line = i + 1
				s.command(line)
			}
		})
	}
}

// cliRunID is $RUN: the test process's pid.
var cliRunID = strconv.Itoa(os.Getpid())

// buildBinary builds cmd/bpftap once into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bpftap")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/bpftap").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type cliScript struct {
	t              *testing.T
	bin, dir       string
	files          map[string]string
	line           int
	stdout, stderr string
	status         int
	signal         syscall.Signal // sent to the next exec after delay, or once its stderr (stdout) matches signalOn
	delay          time.Duration
	signalOn       *regexp.Regexp
	signalStdout   bool
}

func (s *cliScript) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("line %d: "+format, append([]any{s.line}, args...)...)
}

func (s *cliScript) command(line string) {
	s.t.Helper()
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return
	}
	if cond, rest, ok := strings.Cut(line, "] "); ok && strings.HasPrefix(cond, "[") {
		if !s.holds(strings.TrimPrefix(cond, "[")) {
			return
		}
		line = rest
	}
	negate := false
	if rest, ok := strings.CutPrefix(line, "! "); ok {
		negate, line = true, rest
	}
	words := splitArgs(line)
	switch words[0] {
	case "exec":
		s.exec(words[1:], negate)
	case "status":
		if want, _ := strconv.Atoi(words[1]); s.status != want {
			s.fatalf("exit status %d, want %d\nstderr:\n%s", s.status, want, s.stderr)
		}
	case "stdout", "stderr":
		s.match(words[0], strings.Join(words[1:], " "), negate)
	case "cmp":
		s.cmp(words[1], words[2])
	case "signal":
		if s.signal = unix.SignalNum("SIG" + words[1]); s.signal == 0 {
			s.fatalf("unknown signal %q", words[1])
		}
		if words[2] == "on" {
			pattern := words[3:]
			if s.signalStdout = pattern[0] == "stdout"; s.signalStdout {
				pattern = pattern[1:]
			}
			s.signalOn = s.regexp(strings.Join(pattern, " "))
		} else {
			s.delay = s.duration(words[2])
		}
	case "sleep":
		time.Sleep(s.duration(words[1]))
	case "exists":
		name := strings.ReplaceAll(words[1], "$RUN", cliRunID)
		if _, err := os.Stat(filepath.Join(s.dir, name)); (err == nil) == negate {
			s.fatalf("%s: exists is %v", words[1], err == nil)
		}
	default:
		s.fatalf("unknown command %q", words[0])
	}
}

func (s *cliScript) duration(word string) time.Duration {
	d, err := time.ParseDuration(word)
	if err != nil {
		s.fatalf("bad duration %q", word)
	}
	return d
}

func (s *cliScript) exec(args []string, wantFailure bool) {
	s.t.Helper()
	prog := args[0]
	if prog == "bpftap" {
		prog = s.bin
	}
	// a command that runs for a minute is stuck, except on a machine
	// so busy that creating a 91 MiB map took longer (verbose_big_map)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	examples, _ := filepath.Abs("../../examples")
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], "$EXAMPLES", examples)
		args[i] = strings.ReplaceAll(args[i], "$RUN", cliRunID)
	}
	args = expandWorkload(args)
	cmd := exec.CommandContext(ctx, prog, args[1:]...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "BPFTAP="+s.bin, "RUN="+cliRunID)
	stdout, stderr := &watchedBuffer{}, &watchedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		s.fatalf("%v", err)
	}
	if s.signal != 0 {
		sig := s.signal
		send := func() { cmd.Process.Signal(sig) }
		switch {
		case s.signalOn != nil && s.signalStdout:
			stdout.watch(s.signalOn, send)
		case s.signalOn != nil:
			stderr.watch(s.signalOn, send)
		default:
			timer := time.AfterFunc(s.delay, send)
			defer timer.Stop()
		}
		s.signal, s.signalOn, s.signalStdout = 0, nil, false
	}
	err := cmd.Wait()
	s.stdout, s.stderr, s.status = stdout.String(), stderr.String(), 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		s.status = exitErr.ExitCode()
	case err != nil:
		s.fatalf("%v", err)
	}
	if (s.status != 0) != wantFailure {
		s.fatalf("%s exited with status %d\nstdout:\n%s\nstderr:\n%s", args[0], s.status, s.stdout, s.stderr)
	}
}

func (s *cliScript) regexp(pattern string) *regexp.Regexp {
	re, err := regexp.Compile("(?m)" + pattern)
	if err != nil {
		s.fatalf("bad regexp: %v", err)
	}
	return re
}

// watchedBuffer is a command's stdout or stderr that calls a function the
// first time its text matches a regexp.
type watchedBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	re   *regexp.Regexp
	call func()
}

func (w *watchedBuffer) watch(re *regexp.Regexp, call func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.re, w.call = re, call
	w.check()
}

func (w *watchedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	w.check()
	return n, err
}

func (w *watchedBuffer) check() {
	if w.re != nil && w.re.Match(w.buf.Bytes()) {
		w.call()
		w.re = nil
	}
}

func (w *watchedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (s *cliScript) match(stream, pattern string, negate bool) {
	s.t.Helper()
	re := s.regexp(pattern)
	text := s.stdout
	if stream == "stderr" {
		text = s.stderr
	}
	if re.MatchString(text) == negate {
		verb := "does not match"
		if negate {
			verb = "matches"
		}
		s.fatalf("%s %s %q:\n%s", stream, verb, pattern, text)
	}
}

func (s *cliScript) cmp(stream, file string) {
	s.t.Helper()
	want, ok := s.files[file]
	if !ok {
		s.fatalf("no file %q in the archive", file)
	}
	got := s.stdout
	if stream == "stderr" {
		got = output.WithoutUnreadWarning(s.stderr, want)
	}
	if got != want {
		s.fatalf("%s differs from %s\n--- got ---\n%s--- want ---\n%s%s", stream, file, got, want, firstDifference(got, want))
	}
}

// firstDifference says where got and want first differ, last in a
// failure's message: a log that keeps only its tail still shows it.
func firstDifference(got, want string) string {
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := 0; ; i++ {
		if i == len(g) || i == len(w) || g[i] != w[i] {
			return fmt.Sprintf("--- first difference, line %d ---\ngot:  %q\nwant: %q", i+1, lineAt(g, i), lineAt(w, i))
		}
	}
}

// lineAt is lines[i], or "" past the end.
func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

// holds tells whether the condition of a line holds on this machine, and
// logs why a line is skipped.
func (s *cliScript) holds(cond string) bool {
	name, negated := strings.CutPrefix(cond, "!")
	has, known := map[string]func() bool{"kfuncs": probesKernelFunctions, "lsm": runsLSM}[name]
	switch {
	case !known:
		s.fatalf("unknown condition [%s]", cond)
	case !negated:
		s.fatalf("[%s]: such a line runs on no test machine (the guest kernels, which have %s, run no testdata/cli): make it a case of testdata/guest", cond, name)
	case has():
		s.t.Logf("line %d skipped: this kernel has %s", s.line, name)
		return false
	}
	return true
}

// runsLSM tells whether the running kernel attaches a BPF LSM program to
// the file_open hook (and runs it: the BPF LSM is active).
var runsLSM = sync.OnceValue(func() bool {
	b, err := kernel.Kernel()
	if err != nil {
		return false
	}
	proto, err := b.Prototype("bpf_lsm_file_open")
	return err == nil && bpfrt.CanAttach(&attach.Point{Kind: attach.LSM, Event: "file_open", BTFID: proto.Func}) == nil
})

// probesKernelFunctions tells whether the running kernel attaches a
// kprobe or an fentry program to vfs_read.
var probesKernelFunctions = sync.OnceValue(func() bool {
	if bpfrt.CanAttach(&attach.Point{Kind: attach.Kprobe, Event: "vfs_read"}) == nil {
		return true
	}
	b, err := kernel.Kernel()
	if err != nil {
		return false
	}
	proto, err := b.Prototype("vfs_read")
	return err == nil && bpfrt.CanAttach(&attach.Point{Kind: attach.Fentry, Event: "vfs_read", BTFID: proto.Func}) == nil
})
