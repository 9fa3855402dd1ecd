package tapset_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/interp"
)

// TestRun runs each script of testdata/run.txt in the interpreter, with the
// clock stopped, and compares what it prints (standard output and error).
func TestRun(t *testing.T) {
	for _, c := range readRunChunks(t) {
		t.Run(c.name, func(t *testing.T) {
			if got := runScript(t, c.script); got != c.want {
				t.Errorf("script:\n%s\ngot:\n%q\nwant:\n%q", c.script, got, c.want)
			}
		})
	}
}

func runScript(t *testing.T, script string) string {
	t.Helper()
	prog, err := elaborate(t, script)
	if err != nil {
		t.Fatalf("elaborate:\n%v", err)
	}
	var out bytes.Buffer
	stopped := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	in, err := interp.New(prog, interp.Config{Stdout: &out, Stderr: &out,
		Now: func() time.Time { return stopped }})
	if err != nil {
		t.Fatalf("interp: %v", err)
	}
	in.Begin()
	in.End()
	return out.String()
}
