package driver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The --monitor screen and the notice of a silent run, in a real
// terminal: tmux, on a server of the test's own (-S, its socket in the
// test's directory), its panes read
// with capture-pane, its keys typed with send-keys. tmux absent, the
// tests are skipped, unless BPFTAP_REQUIRE_TMUX is set (CI installs it).

// monitorScript counts the system calls of the target (a shell loop the
// test owns), by number, and the ticks of a timer, which prints.
const monitorScript = `global syscalls, ticks, nr
probe kernel.trace("raw_syscalls:sys_enter") { if (pid() == target()) { syscalls++; nr[$id]++ } }
probe timer.ms(200) { ticks++; if (ticks % 5 == 0) printf("tick %d\n", ticks) }
probe end { printf("end of the run\n") }
`

// silentScript prints only at its end.
const silentScript = `global n
probe kernel.trace("raw_syscalls:sys_enter") { if (pid() == target()) n++ }
probe end { printf("end: %d\n", n > 0) }
`

// tmuxServer is a tmux server of the test's own.
type tmuxServer struct {
	t      *testing.T
	socket string
}

func newTmux(t *testing.T) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("BPFTAP_REQUIRE_TMUX") != "" {
			t.Fatal("tmux is not installed (apt-get install tmux)")
		}
		t.Skip("tmux is not installed (apt-get install tmux)")
	}
	s := &tmuxServer{t: t, socket: filepath.Join(t.TempDir(), "tmux")}
	t.Cleanup(func() { exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxServer) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start runs command (sh) in a new detached session of 150×45.
func (s *tmuxServer) start(command string) {
	s.run("new-session", "-d", "-s", "t", "-x", "150", "-y", "45", command)
}

func (s *tmuxServer) screen() string { return s.run("capture-pane", "-p", "-t", "t") }

func (s *tmuxServer) keys(keys ...string) {
	s.run(append([]string{"send-keys", "-t", "t"}, keys...)...)
}

// waitScreen captures the pane until ok accepts it (a minute at most:
// the first run compiles and loads under whatever else the machine runs).
func (s *tmuxServer) waitScreen(what string, ok func(screen string) bool) string {
	s.t.Helper()
	var screen string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if screen = s.screen(); ok(screen) {
			return screen
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no %s within a minute; the screen:\n%s", what, screen)
		}
	}
}

func contains(s string) func(string) bool {
	return func(screen string) bool { return strings.Contains(screen, s) }
}

// screenNumber is the number after NAME= on the screen, -1 without one.
func screenNumber(screen, name string) int64 {
	m := regexp.MustCompile(`(?m)(?:^|\s)` + regexp.QuoteMeta(name) + `=(\d+)`).FindStringSubmatch(screen)
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// probeTable is the probe table's rows: index, state, hits, name.
func probeTable(screen string) [][4]string {
	var rows [][4]string
	for _, m := range regexp.MustCompile(`(?m)^\s*(\d+)\s+(on|off)\s+(\d+)\s+\d+\s+\d+\s+\d+\s+(\S.*)$`).FindAllStringSubmatch(screen, -1) {
		rows = append(rows, [4]string{m[1], m[2], m[3], strings.TrimSpace(m[4])})
	}
	return rows
}

// kernelHits is the hits of the script's kernel probe on the screen.
func kernelHits(t *testing.T, screen string) int64 {
	t.Helper()
	for _, r := range probeTable(screen) {
		if strings.HasPrefix(r[3], "kernel.trace") {
			n, _ := strconv.ParseInt(r[2], 10, 64)
			return n
		}
	}
	t.Fatalf("no kernel.trace row in the probe table:\n%s", screen)
	return 0
}

// startTmuxCase is what a test in tmux needs: its terminal, bpftap, the
// script written to a file, and a workload loop to trace (its pid).
func startTmuxCase(t *testing.T, script string) (tm *tmuxServer, bin, path string, pid int) {
	t.Helper()
	requireBPF(t)
	tm = newTmux(t)
	bin = buildBinary(t)
	path = filepath.Join(t.TempDir(), "script.stp")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return tm, bin, path, workloadLoop(t)
}

// workloadLoop starts a shell that opens /dev/null and sleeps, in a
// loop, until the test ends: a target whose system calls never stop.
func workloadLoop(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do : </dev/null; sleep 0.02; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// TestMonitorInTmux runs --monitor=1 in a terminal: the globals change
// from one refresh to the next, the probe table shows the hits, s sorts
// it by hits, p pauses every probe (nothing counts, the timer stops) and
// r resumes them, c resets the globals, and q ends the run as Ctrl-C
// does: the end probes print after the output the screen kept, on the
// main screen, the terminal's modes restored.
func TestMonitorInTmux(t *testing.T) {
	tm, bin, script, pid := startTmuxCase(t, monitorScript)
	stty := filepath.Join(t.TempDir(), "stty")
	tm.start(fmt.Sprintf("stty -a > %s.before; %s --monitor=1 %s -x %d; echo EXIT=$?; stty -a > %s.after; sleep 600", stty, bin, script, pid, stty))

	first := tm.waitScreen("screen with a count", func(s string) bool { return screenNumber(s, "syscalls") > 0 && screenNumber(s, "ticks") > 0 })
	for _, want := range []string{"uptime ", "refresh 1s", "nr: ", "index*", "-- output --", "q quit"} {
		if !strings.Contains(first, want) {
			t.Errorf("no %q on the screen:\n%s", want, first)
		}
	}
	later := tm.waitScreen("refresh with more counted", func(s string) bool {
		return screenNumber(s, "syscalls") > screenNumber(first, "syscalls") && screenNumber(s, "ticks") > screenNumber(first, "ticks")
	})
	if kernelHits(t, later) <= kernelHits(t, first) {
		t.Errorf("hits did not grow from\n%s\nto\n%s", first, later)
	}
	tm.waitScreen("timer output in the output region", contains("tick 5"))

	tm.keys("s")
	sorted := tm.waitScreen("table sorted by hits", contains("hits*"))
	rows := probeTable(sorted)
	for i := 1; i < len(rows); i++ {
		if a, _ := strconv.Atoi(rows[i-1][2]); func() bool { b, _ := strconv.Atoi(rows[i][2]); return a < b }() {
			t.Errorf("rows not by hits, descending:\n%s", sorted)
		}
	}

	tm.keys("p")
	paused := tm.waitScreen("pause", func(s string) bool { return strings.Contains(s, "PAUSED") && strings.Contains(s, " off ") })
	time.Sleep(2500 * time.Millisecond) // two refreshes at least
	still := tm.screen()
	for _, name := range []string{"syscalls", "ticks"} {
		if a, b := screenNumber(paused, name), screenNumber(still, name); a != b || a < 0 {
			t.Errorf("paused, %s went from %d to %d", name, a, b)
		}
	}
	if a, b := kernelHits(t, paused), kernelHits(t, still); a != b {
		t.Errorf("paused, the kernel probe's hits went from %d to %d", a, b)
	}

	tm.keys("r")
	resumed := tm.waitScreen("resume", func(s string) bool {
		return !strings.Contains(s, "PAUSED") && screenNumber(s, "syscalls") > screenNumber(still, "syscalls")
	})
	tm.keys("c")
	tm.waitScreen("reset", func(s string) bool {
		n := screenNumber(s, "syscalls")
		return n >= 0 && n < screenNumber(resumed, "syscalls") && strings.Contains(s, "globals reset")
	})

	tm.keys("q")
	end := tm.waitScreen("end of the run", contains("EXIT=0"))
	if !regexp.MustCompile(`(?s)tick 5\n.*end of the run\n.*EXIT=0`).MatchString(end) {
		t.Errorf("after q, the main screen shows no output kept then the end probe's:\n%s", end)
	}
	if strings.Contains(end, "uptime ") {
		t.Errorf("the screen stayed after q:\n%s", end)
	}
	if on := strings.TrimSpace(tm.run("display-message", "-p", "-t", "t", "#{alternate_on}")); on != "0" {
		t.Errorf("alternate screen still on: %q", on)
	}
	before, _ := os.ReadFile(stty + ".before")
	after, _ := os.ReadFile(stty + ".after")
	if len(before) == 0 || string(before) != string(after) {
		t.Errorf("terminal modes before:\n%s\nafter:\n%s", before, after)
	}
}

// TestNoticeInTmux: a run that prints only at its end says it traces on
// a terminal, once, and ends at Ctrl-C with its output; with standard
// error elsewhere it says nothing.
func TestNoticeInTmux(t *testing.T) {
	tm, bin, script, pid := startTmuxCase(t, silentScript)
	errFile := filepath.Join(t.TempDir(), "stderr")
	tm.start(fmt.Sprintf("%s %s -x %d; echo EXIT=$?; %s %s -x %d -T 1 2>%s; echo EXIT=$?; sleep 600", bin, script, pid, bin, script, pid, errFile))
	tm.waitScreen("notice", contains("Tracing 2 probes... Hit Ctrl-C to end.\n"))
	tm.keys("C-c")
	screen := tm.waitScreen("both runs' ends", func(s string) bool { return strings.Count(s, "EXIT=0") == 2 })
	// the notice first and once; the terminal echoes Ctrl-C as ^C; a
	// machine busy with other BPF programs may add stap's closing warning
	want := regexp.MustCompile(`^Tracing 2 probes\.\.\. Hit Ctrl-C to end\.\n(\^C)?end: \d\n(WARNING: .*\n)*EXIT=0\nend: \d\nEXIT=0\n`)
	if !want.MatchString(screen) || strings.Count(screen, "Tracing") != 1 {
		t.Errorf("screen:\n%s\nwant it to match %s", screen, want)
	}
	if data, _ := os.ReadFile(errFile); len(data) != 0 {
		t.Errorf("standard error of the run whose stderr is a file: %q", data)
	}
}

// TestMonitorSuspendInTmux: in an interactive shell, Ctrl-Z gives the
// terminal back (the main screen, the shell's modes) while bpftap is
// stopped, and fg gives the screen back, its keys working again (bash
// sets its modes again after continuing the job: the screen sets its
// own back at the next refresh).
func TestMonitorSuspendInTmux(t *testing.T) {
	tm, bin, script, pid := startTmuxCase(t, monitorScript)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash: the test needs a shell with job control")
	}
	tm.start("bash --norc --noprofile -i")
	tm.keys(fmt.Sprintf("%s --monitor=1 %s -x %d", bin, script, pid), "Enter")
	tm.waitScreen("the screen", contains("uptime "))
	alternate := func() string { return strings.TrimSpace(tm.run("display-message", "-p", "-t", "t", "#{alternate_on}")) }
	tm.keys("C-z")
	tm.waitScreen("the job stopped", contains("Stopped"))
	if on := alternate(); on != "0" {
		t.Errorf("stopped, the alternate screen is still on:\n%s", tm.screen())
	}
	tm.keys("stty -a | grep -o -- '-icanon' || echo canonical", "Enter")
	tm.waitScreen("the shell's modes", contains("\ncanonical\n"))
	tm.keys("fg", "Enter")
	tm.waitScreen("the screen again", func(s string) bool { return strings.HasPrefix(s, "uptime ") })
	if on := alternate(); on != "1" {
		t.Errorf("continued, the alternate screen is off:\n%s", tm.screen())
	}
	tm.keys("s")
	tm.waitScreen("the sort key working again", contains("hits*"))
	tm.keys("q")
	tm.waitScreen("end of the run", contains("end of the run\n"))
}
