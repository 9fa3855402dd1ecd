package interp

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// kernelScript stands in for a program with kernel probes: the never probe's
// printf and division play the kernel side's print and error records.
const kernelScript = `global n
probe begin { printf("begin\n") }
probe timer.ms(1) { n++; printf("timer\n"); exit() }
probe end { printf("end %d\n", n) }
probe never { printf("k %d %s\n", 1, "x"); n = 1 / n }
`

type kernelSession struct {
	in             *Interp
	stdout, stderr bytes.Buffer
	call           *syntax.PrintCall
	div            syntax.Pos
}

func newKernelSession(t *testing.T, limits tapset.Limits, skipped int64, options ...func(*Config)) *kernelSession {
	t.Helper()
	prog := elaborate(t, kernelScript)
	s := &kernelSession{}
	for _, p := range prog.Probes {
		syntax.Walk(p.Body, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.PrintCall:
				if n.Format != nil && n.Format.Value == "k %d %s\n" {
					s.call = n
				}
			case *syntax.Binary:
				if n.Op == "/" {
					s.div = n.Pos
				}
			}
			return true
		})
	}
	cfg := Config{Stdout: &s.stdout, Stderr: &s.stderr, Limits: limits,
		Now: func() time.Time { return fixedNow }, Skipped: func() int64 { return skipped }}
	for _, o := range options {
		o(&cfg)
	}
	var err error
	s.in, err = New(prog, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *kernelSession) print(i int64, str string) {
	s.in.KernelPrint(s.call, []format.Arg{format.Long(i), format.String(str)})
}

func (s *kernelSession) check(t *testing.T, status int, stdout, stderr string) {
	t.Helper()
	if got := s.in.End(); got != status {
		t.Errorf("status %d, want %d", got, status)
	}
	if s.stdout.String() != stdout {
		t.Errorf("stdout:\n%s\nwant:\n%s", s.stdout.String(), stdout)
	}
	if s.stderr.String() != stderr {
		t.Errorf("stderr:\n%s\nwant:\n%s", s.stderr.String(), stderr)
	}
}

func TestKernelOutputOrder(t *testing.T) {
	s := newKernelSession(t, tapset.DefaultLimits(), 0)
	s.in.Begin()
	s.print(1, "a")
	s.print(2, "b")
	if s.stdout.String() != "begin\n" {
		t.Errorf("kernel output written before Flush: %q", s.stdout.String())
	}
	s.in.Flush()
	s.print(3, "c")
	// the timer handler writes the pending record first, then its own output
	s.in.Run(t.Context())
	s.print(4, "d")
	s.check(t, 0, "begin\nk 1 a\nk 2 b\nk 3 c\ntimer\nk 4 d\nend 1\n", "")
}

func TestKernelStringsAreClipped(t *testing.T) {
	limits := tapset.DefaultLimits()
	limits.MaxStringLen = 8
	s := newKernelSession(t, limits, 0)
	s.print(1, "abcdefghij")
	s.print(2, "ab\x00cd")
	s.check(t, 0, "k 1 abcdefg\nk 2 ab\nend 0\n", "")
}

func TestKernelErrors(t *testing.T) {
	limits := tapset.DefaultLimits()
	limits.MaxErrors = 1
	s := newKernelSession(t, limits, 3)
	s.in.Begin()
	s.print(1, "a")
	s.in.KernelError("division by 0", s.div)
	select {
	case <-s.in.Done():
		t.Fatal("session stopped at the first error, with MAXERRORS=1")
	default:
	}
	s.in.KernelError(tapset.OverflowMessage(&syntax.Var{Name: "a"}), syntax.Pos{})
	select {
	case <-s.in.Done():
	default:
		t.Fatal("session still running past MAXERRORS")
	}
	div := "ERROR: division by 0 near operator '/' at <input>:5:50\n"
	s.check(t, 1, "begin\nk 1 a\n",
		div+"ERROR: Array overflow, check MAXMAPENTRIES\nWARNING: Number of errors: 2, skipped probes: 3\n")
}

func TestSkippedProbesWarning(t *testing.T) {
	s := newKernelSession(t, tapset.DefaultLimits(), 4)
	s.check(t, 0, "end 0\n", "WARNING: Number of errors: 0, skipped probes: 4\n")
	// With -t, stap says why: every skip here is a nested run.
	s = newKernelSession(t, tapset.DefaultLimits(), 4, func(c *Config) { c.Timing = true })
	s.check(t, 0, "end 0\n", "WARNING: Number of errors: 0, skipped probes: 4\nWARNING: Skipped due to reentrancy: 4\n")
}

// TestSkippedTooMany: past MAXSKIPPED the session ends in error as stap's
// does, "Skipped too many probes", with the error probes instead of the
// end probes and exit status 1; at MAXSKIPPED it runs on. The count is
// read while the run lasts (a run that would last a minute stops) and
// once more at its end.
func TestSkippedTooMany(t *testing.T) {
	const script = `probe timer.s(60) { println("timer") } probe end { println("end") } probe error { println("error") }`
	const tooMany = "ERROR: Skipped too many probes, check MAXSKIPPED or try again with bpftap -t for more details.\n"
	for _, c := range []struct {
		name           string
		skipped        int64
		run            bool
		status         int
		stdout, stderr string
	}{
		{"during the run", 101, true, 1, "error\n", tooMany + "WARNING: Number of errors: 0, skipped probes: 101\n"},
		{"at its end", 101, false, 1, "error\n", tooMany + "WARNING: Number of errors: 0, skipped probes: 101\n"},
		{"at MAXSKIPPED", 100, false, 0, "end\n", "WARNING: Number of errors: 0, skipped probes: 100\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			in, err := New(elaborate(t, script), Config{Stdout: &stdout, Stderr: &stderr, Skipped: func() int64 { return c.skipped }})
			if err != nil {
				t.Fatal(err)
			}
			in.Begin()
			if c.run {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				start := time.Now()
				in.Run(ctx)
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("the run went on for %s past MAXSKIPPED", d)
				}
			}
			if status := in.End(); status != c.status || stdout.String() != c.stdout || stderr.String() != c.stderr {
				t.Errorf("status %d, stdout %q, stderr:\n%s\nwant %d, %q, stderr:\n%s", status, stdout.String(), stderr.String(), c.status, c.stdout, c.stderr)
			}
		})
	}
}
