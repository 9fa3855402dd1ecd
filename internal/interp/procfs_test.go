package interp

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/tapset"
)

// TestProcfsFailure reads procfs files whose read probe fails half-way
// (a run-time error, MAXACTION, abort()) and writes one whose write probe
// fails: each is ErrProbeFailed, never the $value built up to the failure,
// and the error is on the script's output as every handler's. With
// MAXERRORS the session runs on and the next read fails again; a probe
// that catches its error serves what it built. Before Begin, or once the
// script stopped, reads are ErrNotRunning.
func TestProcfsFailure(t *testing.T) {
	prog := elaborate(t, `global zero, n
probe procfs("div").read { $value = "a 1\n"; $value .= sprint(1 / zero) }
probe procfs("loop").read { while (1) $value .= "b 1\n" }
probe procfs("abort").read { $value = "c 1\n"; abort() }
probe procfs("caught").read { try { $value = "d 1\n"; n = 1 / zero } catch { $value .= "caught\n" } }
probe procfs("set").write { n = 1 / zero }
`)
	limits := tapset.DefaultLimits()
	limits.MaxErrors = 10
	var stderr bytes.Buffer
	in, err := New(prog, Config{Stdout: &bytes.Buffer{}, Stderr: &stderr, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*ProcfsFile{}
	for _, f := range in.ProcfsFiles() {
		byName[f.Name] = f
	}
	read := func(name string) (string, error) { return in.ReadProcfs(context.Background(), byName[name]) }
	if _, err := read("caught"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("before Begin: %v, want ErrNotRunning", err)
	}
	in.Begin()
	for _, name := range []string{"div", "loop", "div"} {
		if value, err := read(name); !errors.Is(err, ErrProbeFailed) || value != "" {
			t.Errorf("read %s: %q, %v, want ErrProbeFailed and nothing", name, value, err)
		}
	}
	if err := in.WriteProcfs(context.Background(), byName["set"], "x"); !errors.Is(err, ErrProbeFailed) {
		t.Errorf("write set: %v, want ErrProbeFailed", err)
	}
	if value, err := read("caught"); err != nil || value != "d 1\ncaught\n" {
		t.Errorf("read caught: %q, %v, want its value", value, err)
	}
	for _, msg := range []string{"ERROR: division by 0", "ERROR: MAXACTION exceeded"} {
		if !strings.Contains(stderr.String(), msg) {
			t.Errorf("the script's output has no %q:\n%s", msg, stderr.String())
		}
	}
	if value, err := read("abort"); !errors.Is(err, ErrProbeFailed) || value != "" {
		t.Errorf("read abort: %q, %v, want ErrProbeFailed and nothing", value, err)
	}
	if _, err := read("caught"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("after abort(): %v, want ErrNotRunning", err)
	}
}
