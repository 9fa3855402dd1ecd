package monitor

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// recorded notes each write to either stream, in order.
type recorded struct{ writes []string }

func (r *recorded) stream(name string) io.Writer {
	return writeFunc(func(b []byte) (int, error) {
		r.writes = append(r.writes, name+":"+string(b))
		return len(b), nil
	})
}

type writeFunc func([]byte) (int, error)

func (f writeFunc) Write(b []byte) (int, error) { return f(b) }

// Before capture and after release writes pass straight through; what
// comes between is kept, shown by lines across streams, and given back
// in order, each stream's consecutive pieces in one write.
func TestPaneCaptureRelease(t *testing.T) {
	var r recorded
	s := New(nil, nil, r.stream("out"), r.stream("err"))
	p := s.out
	io.WriteString(s.Stdout(), "before\n")
	p.capture()
	io.WriteString(s.Stdout(), "a1\na2\npart")
	io.WriteString(s.Stderr(), "WARNING: w\n")
	io.WriteString(s.Stdout(), "ial\n")
	if got := strings.Join(p.tail(10), "|"); got != "a1|a2|partWARNING: w|ial" {
		t.Errorf("tail(10) = %q", got)
	}
	if got := strings.Join(p.tail(2), "|"); got != "partWARNING: w|ial" {
		t.Errorf("tail(2) = %q", got)
	}
	if len(r.writes) != 1 {
		t.Errorf("writes while capturing: %q", r.writes)
	}
	p.release()
	io.WriteString(s.Stdout(), "after\n")
	want := []string{"out:before\n", "out:a1\na2\npart", "err:WARNING: w\n", "out:ial\n", "out:after\n"}
	if fmt.Sprint(r.writes) != fmt.Sprint(want) {
		t.Errorf("writes %q, want %q", r.writes, want)
	}
}

// The pane keeps the last keepLines lines and says how many it dropped;
// a line longer than a piece is kept whole.
func TestPaneKeepsLastLines(t *testing.T) {
	var out, errs bytes.Buffer
	s := New(nil, nil, &out, &errs)
	s.out.capture()
	long := strings.Repeat("x", 3*pieceSize) + "\n"
	io.WriteString(s.Stdout(), long)
	for i := range keepLines + 100 {
		fmt.Fprintf(s.Stdout(), "%d\n", i)
	}
	if got := s.out.tail(1); len(got) != 1 || got[0] != fmt.Sprint(keepLines+99) {
		t.Errorf("tail(1) = %q", got)
	}
	s.out.release()
	if want := fmt.Sprintf("bpftap: --monitor dropped the first 101 lines of the run's output: it keeps the last %d (4 MiB at most)\n", keepLines); errs.String() != want {
		t.Errorf("stderr %q, want %q", errs.String(), want)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != keepLines || lines[0] != "100" {
		t.Errorf("%d lines given back, the first %q; want %d from 100", len(lines), lines[0], keepLines)
	}
}
