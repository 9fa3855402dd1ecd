package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandLine: -h and --help print the usage and draw nothing (the
// title was once taken from any argument: --help drew a graph titled
// "--help"); -title sets the title; a file names the input; an unknown
// flag or two files are usage errors.
func TestCommandLine(t *testing.T) {
	folded := filepath.Join(t.TempDir(), "prog.folded")
	os.WriteFile(folded, []byte("main;work;hot 3\nmain;work 1\n"), 0o644)
	for _, c := range []struct {
		args              []string
		stdin             string
		status            int
		stdout, notStdout string
		stderr            string
	}{
		{[]string{"--help"}, "", 0, "usage: bpftap-flamegraph [-title TITLE] [FILE]", "<svg", ""},
		{[]string{"-h"}, "", 0, "-title TITLE", "<svg", ""},
		{[]string{"-title", "my prog"}, "a;b 2\n", 0, ">my prog</text>", "--help", ""},
		{[]string{folded}, "", 0, ">Flame Graph</text>", "", ""},
		{nil, "main;hot 1\n", 0, ">hot (1 samples, 100.00%)", "", ""},
		{[]string{"--nosuch"}, "", 2, "", "<svg", "flag provided but not defined: -nosuch"},
		{[]string{folded, folded}, "", 2, "", "<svg", "one input file at most, not 2"},
		{[]string{filepath.Join(t.TempDir(), "none")}, "", 1, "", "<svg", "no such file"},
		{nil, "main;hot x\n", 1, "", "<svg", `line 1: not "STACK COUNT"`},
	} {
		var stdout, stderr bytes.Buffer
		status := run(c.args, strings.NewReader(c.stdin), &stdout, &stderr)
		if status != c.status || !strings.Contains(stdout.String(), c.stdout) ||
			c.notStdout != "" && strings.Contains(stdout.String(), c.notStdout) || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%q: status %d (want %d)\nstdout:\n%.400s\nstderr:\n%s", c.args, status, c.status, stdout.String(), stderr.String())
		}
	}
}
