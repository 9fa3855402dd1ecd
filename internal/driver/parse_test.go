package driver

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/target/targettest"
)

// TestPartialLibrary elaborates every script of testdata/run twice, on the
// library files pass 1 picks (tapset.Index) and on the whole library, and
// requires the same -p2 output and warnings: a script that needs a file the
// index did not pick fails here instead of silently paying the retry on the
// whole library (or, for a library global, resolving differently). Scripts
// that fail on the whole library fail on the partial one too, and then with
// its diagnostics (analyze's retry), so only the successes are compared.
func TestPartialLibrary(t *testing.T) {
	for _, script := range runScripts(t) {
		t.Run(strings.TrimSuffix(filepath.Base(script), ".stp"), func(t *testing.T) {
			whole, wholeErr := elaborated(t, script, true)
			if wholeErr != nil {
				return
			}
			partial, partialErr := elaborated(t, script, false)
			switch {
			case partialErr != nil:
				t.Fatalf("fails on the files pass 1 picked, not on the whole library:\n%v", partialErr)
			case partial != whole:
				t.Fatalf("-p2 on the files pass 1 picked:\n%s\non the whole library:\n%s", partial, whole)
			}
		})
	}
}

// elaborated runs passes 1 and 2 of `bpftap -p2 SCRIPT` (with the script's
// `#! args:` and `#! scriptargs:`) once, on the whole library or on the
// files the index picks, and returns the -p2 output after the warnings.
func elaborated(t *testing.T, script string, whole bool) (string, error) {
	var out bytes.Buffer
	prog, err := elaborateScript(t, script, whole, &out)
	if err != nil {
		return "", err
	}
	printElaborated(&out, prog)
	return out.String(), nil
}

// elaborateScript parses and elaborates a script of testdata/run with its
// directives' arguments, what bpftap prints going to out.
func elaborateScript(t *testing.T, script string, whole bool, out io.Writer) (*sema.Program, error) {
	text, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	d := caseDirectives(t, string(text))
	opts, err := parseArgs(append(append(append([]string{"-p2"}, d.args...), script), d.scriptArgs...))
	if err != nil {
		t.Fatal(err)
	}
	s := &session{opts: opts, stdin: strings.NewReader(""), stdout: out, stderr: out, kernel: targettest.Running(t)}
	user, libs, err := s.parse(whole)
	if err != nil {
		return nil, err
	}
	return s.elaborate(user, libs)
}

// TestRetryOnWholeLibrary checks the diagnostics of a pass 2 that fails on
// the files pass 1 picked: they are those of the whole library (an
// unresolved function's suggestions name library functions the script does
// not reach), and a script read from stdin is not read twice.
func TestRetryOnWholeLibrary(t *testing.T) {
	const script = `probe begin { println(errno_st(1)) }`
	var fromArg, fromStdin bytes.Buffer
	if status := Main([]string{"-p2", "-e", script}, strings.NewReader(""), io.Discard, &fromArg); status != 1 {
		t.Fatalf("exit status %d, want 1; stderr:\n%s", status, fromArg.String())
	}
	if !strings.Contains(fromArg.String(), "unresolved function errno_st (similar: errno_str") {
		t.Errorf("stderr lacks the suggestion of the library's errno_str:\n%s", fromArg.String())
	}
	Main([]string{"-p2", "-"}, strings.NewReader(script), io.Discard, &fromStdin)
	if fromStdin.String() != fromArg.String() {
		t.Errorf("from stdin:\n%s\nfrom -e:\n%s", fromStdin.String(), fromArg.String())
	}
}
