package driver

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goWork is a Go program that calls main.work three times.
const goWork = `package main

import "fmt"

//go:noinline
func work(n int) int { return 2 * n }

func main() {
	s := 0
	for i := 0; i < 3; i++ {
		s += work(i)
	}
	fmt.Println(s)
}
`

// TestUprobeGo probes a Go program built here: a .return probe is refused
// where its point resolves (a uretprobe breaks when Go moves a
// goroutine's stack), naming the point, the script's line and why, with
// a non-zero status; entry probes on it run, and read its parameters by
// name from its DWARF.
func TestUprobeGo(t *testing.T) {
	prog := buildGo(t, goWork)
	for _, c := range []struct {
		name, script string
		bpf          bool
		status       int
		stdout       string
		stderr       []string
	}{
		{name: "return", script: `probe process(@1).function("main.work").return { println($return) }`, status: 1,
			stderr: []string{"while resolving probe point: identifier 'process' at SCRIPT:1:7\n",
				"\nsemantic error: cannot probe process(\"PROG\").function(\"main.work\").return: PROG is a Go program, " +
					"and Go moves a goroutine's stack as it grows, which breaks the return address a uretprobe plants (the program would die of SIGILL); " +
					"probe the function's entry instead\n"}},
		{name: "wildcard_return", script: `probe process(@1).function("main.wor*").return { println($return) }`, status: 1,
			stderr: []string{"at SCRIPT:1:7\n", "cannot probe process(\"PROG\").function(\"main.wor*\").return: PROG is a Go program"}},
		{name: "entry", script: `probe process(@1).function("main.work") { printf("work(%d)\n", register("rax")) }`, bpf: true,
			stdout: "work(0)\nwork(1)\nwork(2)\n"}, // Go's register ABI: the first argument in rax
		{name: "param", script: `probe process(@1).function("main.work") { printf("work(%d)\n", $n) }`, bpf: true,
			stdout: "work(0)\nwork(1)\nwork(2)\n"}, // by name, from the program's DWARF (its location lists name rax)
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.bpf {
				requireBPF(t)
			}
			script := filepath.Join(t.TempDir(), "s.stp")
			if err := os.WriteFile(script, []byte(c.script+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			status := Main([]string{"-T", "20", "-c", prog, script, prog}, strings.NewReader(""), &stdout, &stderr)
			if status != c.status || stdout.String() != c.stdout {
				t.Errorf("status %d, stdout %q; want %d, %q\nstderr:\n%s", status, stdout.String(), c.status, c.stdout, stderr.String())
			}
			for _, want := range c.stderr {
				want = strings.NewReplacer("SCRIPT", script, "PROG", prog).Replace(want)
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

// buildGo builds a Go program of one file, source, and returns its path.
func buildGo(t *testing.T, source string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"main.go": source, "go.mod": "module gowork\n\ngo 1.21\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-o", "gowork", ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "gowork")
}
