package driver

import (
	"io"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/target/targettest"
)

// TestPrintsBeforeEnd: a run prints before its end when a probe other
// than end and error probes prints, directly or through the functions it
// calls, with the print family, warn, log, error or system.
func TestPrintsBeforeEnd(t *testing.T) {
	for _, c := range []struct {
		script string
		prints bool
	}{
		{`global n; probe timer.s(1) { n++ } probe end { printf("%d\n", n) }`, false},
		{`global n; probe kernel.trace("sched:sched_switch") { n++ } probe timer.s(5) { exit() } probe end { print(n) }`, false},
		{`probe begin { s = sprintf("%d", 1); x = s } probe error { println("failed") }`, false},
		{`probe begin { printf("hi\n") }`, true},
		{`probe timer.s(1) { println(1) }`, true},
		{`probe kernel.trace("sched:sched_switch") { print("x") }`, true},
		{`function f() { g() } function g() { printd(",", 1, 2) } probe timer.ms(10) { f() }`, true},
		{`probe timer.s(1) { warn("w") }`, true},
		{`probe timer.s(1) { log("l") }`, true},
		{`probe timer.s(1) { system("true") }`, true},
		{`global s; probe timer.s(1) { s <<< 1; print(@hist_log(s)) }`, true},
	} {
		opts, err := parseArgs([]string{"-p2", "-e", c.script})
		if err != nil {
			t.Fatal(err)
		}
		s := &session{opts: opts, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, kernel: targettest.Running(t)}
		user, libs, err := s.parse(false)
		if err != nil {
			t.Fatalf("%s: %v", c.script, err)
		}
		prog, err := s.analyze(user, libs)
		if err != nil {
			t.Fatalf("%s: %v", c.script, err)
		}
		if got := printsBeforeEnd(prog); got != c.prints {
			t.Errorf("%s: prints before the end: %v, want %v", c.script, got, c.prints)
		}
	}
}
