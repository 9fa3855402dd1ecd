package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tables is thread_profile.stp's output for two threads: the second
// started 1.865 ms after the first call and was killed by exit_group.
const tables = `----- TID 22746 -----
lifetime           +0.000 ms to +56.491 ms: 56.491 ms
system calls       54.301 ms in 205 calls: 96.12 % of the lifetime
call                         time      calls  % lifetime
clock_nanosleep         50.062 ms          1       88.61
read                     3.971 ms        203        7.02
execve                   0.268 ms          1        0.47
----- TID 22747 -----
lifetime           +1.865 ms to +52.414 ms: 50.549 ms
system calls       50.338 ms in 201 calls: 99.58 % of the lifetime
call                         time      calls  % lifetime
clock_nanosleep         50.091 ms          1       99.09
read                     0.246 ms        200        0.48
set_robust_list          0.001 ms          0        0.00
`

// profiles are the files bpftap-tau writes for tables, as TAU's format
// has them: times in microseconds, ".TAU application" spanning the
// lifetime and calling every system call, exclusive time the lifetime
// less the calls' time.
var profiles = map[string]string{
	"profile.0.0.0": `4 templated_functions_MULTI_TIME
# Name Calls Subrs Excl Incl ProfileCalls # <metadata><attribute><name>TID</name><value>22746</value></attribute><attribute><name>Lifetime start (ms from the first system call)</name><value>0.000</value></attribute><attribute><name>Lifetime end (ms from the first system call)</name><value>56.491</value></attribute><attribute><name>Source</name><value>bpftap examples/thread_profile.stp</value></attribute></metadata>
".TAU application" 1 205 2190 56491 0 GROUP="TAU_DEFAULT"
"clock_nanosleep" 1 0 50062 50062 0 GROUP="SYSCALL"
"read" 203 0 3971 3971 0 GROUP="SYSCALL"
"execve" 1 0 268 268 0 GROUP="SYSCALL"
0 aggregates
`,
	"profile.0.0.1": `4 templated_functions_MULTI_TIME
# Name Calls Subrs Excl Incl ProfileCalls # <metadata><attribute><name>TID</name><value>22747</value></attribute><attribute><name>Lifetime start (ms from the first system call)</name><value>1.865</value></attribute><attribute><name>Lifetime end (ms from the first system call)</name><value>52.414</value></attribute><attribute><name>Source</name><value>bpftap examples/thread_profile.stp</value></attribute></metadata>
".TAU application" 1 201 211 50549 0 GROUP="TAU_DEFAULT"
"clock_nanosleep" 1 0 50091 50091 0 GROUP="SYSCALL"
"read" 200 0 246 246 0 GROUP="SYSCALL"
"set_robust_list" 0 0 1 1 0 GROUP="SYSCALL"
0 aggregates
`,
}

// TestConvert converts tables from a file and from standard input, into
// a directory it makes: the files are exactly profiles, and each is named
// with its TID on standard output.
func TestConvert(t *testing.T) {
	input := filepath.Join(t.TempDir(), "omp.prof")
	os.WriteFile(input, []byte(tables), 0o644)
	for _, c := range []struct {
		args  []string
		stdin string
	}{
		{[]string{input}, ""},
		{nil, tables},
	} {
		dir := filepath.Join(t.TempDir(), "omp.tau")
		var stdout, stderr bytes.Buffer
		if status := run(append([]string{"-d", dir}, c.args...), strings.NewReader(c.stdin), &stdout, &stderr); status != 0 {
			t.Fatalf("%q: status %d, stderr:\n%s", c.args, status, stderr.String())
		}
		if want := "profile.0.0.0: TID 22746\nprofile.0.0.1: TID 22747\n"; stdout.String() != want {
			t.Errorf("%q: stdout %q, want %q", c.args, stdout.String(), want)
		}
		written, _ := filepath.Glob(filepath.Join(dir, "*"))
		if len(written) != len(profiles) {
			t.Errorf("%q: wrote %q, want %d files", c.args, written, len(profiles))
		}
		for name, want := range profiles {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || string(got) != want {
				t.Errorf("%q: %s (%v):\n%s--- want ---\n%s", c.args, name, err, got, want)
			}
		}
	}
}

// TestErrors: usage errors exit 2 after the usage; input that is not the
// tables, or cut ones, exits 1 naming the line and saying what it is.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	cut := strings.Replace(tables, "read                     3.971 ms        203        7.02\n", "", 1)
	for _, c := range []struct {
		args           []string
		stdin          string
		status         int
		stdout, stderr string
	}{
		{[]string{"-h"}, "", 0, "usage: bpftap-tau [-d DIR] [FILE]", ""},
		{[]string{"--nosuch"}, "", 2, "", "flag provided but not defined: -nosuch"},
		{[]string{"a", "b"}, "", 2, "", "one input file at most, not 2"},
		{[]string{filepath.Join(dir, "none")}, "", 1, "", "no such file"},
		{nil, "", 1, "", "no thread tables in the input"},
		{nil, "2 threads\n" + tables, 1, "", `line 1: not a line of thread_profile.stp's tables (with -o FILE, the command's own output stays out of them): "2 threads"`},
		{nil, "tid 4242;read 123456\n", 1, "", `line 1: folded lines ("tid T;CALL NS", -G folded=1) carry no call counts`},
		{nil, "----- TID 4242 -----\ncall | time\n", 1, "", "line 2: STaKTAU's tables (-G staktau=1) carry no call counts"},
		{nil, "----- TID 4242 -----\n", 1, "", `line 2: not a line of thread_profile.stp's tables (with -o FILE, the command's own output stays out of them): "(the end of the input)"`},
		{nil, tables + "2 threads\n", 1, "", `line 15: not a line`},
		{nil, cut, 1, "", "TID 22746: the calls of its rows do not add up to its total (is the table cut?): 2 calls in its rows, 205 in its head"},
		{[]string{"-d", filepath.Join(dir, "file", "sub")}, tables, 1, "", "not a directory"},
	} {
		os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
		var stdout, stderr bytes.Buffer
		status := run(c.args, strings.NewReader(c.stdin), &stdout, &stderr)
		if status != c.status || !strings.Contains(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%q %.30q: status %d (want %d)\nstdout:\n%s\nstderr:\n%s", c.args, c.stdin, status, c.status, stdout.String(), stderr.String())
		}
	}
}
