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
// "--help"); -title sets the title, -unit the unit, -chart the chart; a
// file names the input; an unknown flag or chart, or two files, are usage
// errors; a line not of the chart's form is an input error.
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
		{[]string{"--help"}, "", 0, "usage: bpftap-flamegraph [-chart flame|bars] [-title TITLE] [-unit UNIT] [FILE]", "<svg", ""},
		{[]string{"-h"}, "", 0, "-title TITLE", "<svg", ""},
		{[]string{"-unit", "ns"}, "main;hot 7\n", 0, ">hot (7 ns, 100.00%)", "", ""},
		{[]string{"-chart", "bars"}, "tid 1;read 7\n", 0, ">Bar Chart</text>", "Flame Graph", ""},
		{[]string{"-chart", "bars"}, "tid 1;read 7\n", 0, ">tid 1: read 7, 100.00% of 7</title>", "", ""},
		{[]string{"-chart", "bars", "-unit", "ns"}, "tid 1;read 7\n", 0, ">tid 1: read 7 ns, 100.00% of 7 ns</title>", "", ""},
		{[]string{"-chart", "pie"}, "", 2, "", "<svg", `invalid value "pie" for flag -chart: not flame or bars`},
		{[]string{"-chart", "bars"}, "tid 1 7\n", 1, "", "<svg", `line 1: not "THREAD;CATEGORY VALUE": "tid 1 7"`},
		{[]string{"-chart", "bars"}, "tid 1;read 1\ntid 1;read;more 7\n", 1, "", "<svg", `line 2: not "THREAD;CATEGORY VALUE"`},
		{nil, "a 9223372036854775807\nb 1\n", 1, "", "<svg", "line 2: the values add up past 9223372036854775807"},
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
