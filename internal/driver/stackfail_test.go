package driver

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestStackFailures keeps two stacks per stack map (-D MAXSTACKS=2) while
// a forking workload allocates kernel memory from many call sites
// (kmem:kmalloc, bpf_get_stackid) and comes on a CPU after sleeping in
// many places (scheduler.cpu_on, a context task's stack): the stacks the
// maps cannot keep read as "", and the warning at exit counts each of
// them, exactly (a stack taken at a tracepoint always has frames, so
// every "" is a failure). The same script with the default size counts
// as exactly, whatever collisions its stacks meet in the map.
func TestStackFailures(t *testing.T) {
	requireFeature(t, "bpf")
	script := `global stacks, events
probe kernel.trace("kmem:kmalloc") {
	if (pid() == target()) { stacks[backtrace()] <<< 1; events++ }
}
probe scheduler.cpu_on {
	if (pid() == target()) { stacks[backtrace()] <<< 1; events++ }
}
probe end {
	foreach (s in stacks) keys++
	printf("events %d, keys %d, empty %d\n", events, keys, @count(stacks[""]))
}`
	warning := regexp.MustCompile(`^WARNING: There were (\d+) stack failures\. Try bpftap -D MAXSTACKS to increase the stack map size from (\d+)\.\n$`)
	for _, maxStacks := range []int{2, 16384} {
		var stdout, stderr bytes.Buffer
		status := Main([]string{"-D", fmt.Sprintf("MAXSTACKS=%d", maxStacks), "-e", script, "-c", workloadCommand() + " fork 5"},
			strings.NewReader(""), &stdout, &stderr)
		if status != 0 {
			t.Fatalf("MAXSTACKS=%d: exit status %d, stderr:\n%s", maxStacks, status, stderr.String())
		}
		var events, keys, empty int
		if _, err := fmt.Sscanf(stdout.String(), "events %d, keys %d, empty %d\n", &events, &keys, &empty); err != nil {
			t.Fatalf("MAXSTACKS=%d: %v in output %q", maxStacks, err, stdout.String())
		}
		failures := 0
		if m := warning.FindStringSubmatch(stderr.String()); m != nil {
			failures, _ = strconv.Atoi(m[1])
			if m[2] != strconv.Itoa(maxStacks) {
				t.Errorf("MAXSTACKS=%d: the warning gives the size as %s", maxStacks, m[2])
			}
		} else if stderr.Len() > 0 {
			t.Errorf("MAXSTACKS=%d: stderr is not the warning:\n%s", maxStacks, stderr.String())
		}
		t.Logf("MAXSTACKS=%d: %d events, %d keys, %d empty, %d failures reported", maxStacks, events, keys, empty, failures)
		if failures != empty {
			t.Errorf("MAXSTACKS=%d: %d failures reported, %d stacks read as \"\"", maxStacks, failures, empty)
		}
		// two stacks in each map, and ""
		if maxStacks == 2 && (empty == 0 || keys > 5 || events <= empty) {
			t.Errorf("MAXSTACKS=2: %d events, %d keys, %d of them empty: want some empty, at most 5 keys", events, keys, empty)
		}
	}
}

// TestBuildIDFailures keeps one stack per stack map (-D MAXSTACKS=1) while
// hot() is called from one stack many times: the addresses are kept once
// and found again, but the map of build-id frames takes an element before
// it compares, and has none left after the first call: every further call
// is a build-id failure, counted, while the stack still reads whole (its
// addresses are named from the frames of the first).
func TestBuildIDFailures(t *testing.T) {
	requireFeature(t, "bpf")
	hot := filepath.Join(cPrograms(), "hot")
	script := `global stacks, calls
probe process(@1).function("hot") {
	if (pid() == target()) { stacks[sprint_ubacktrace()] <<< 1; calls++ }
}
probe end {
	foreach (s in stacks) printf("%d calls:\n%s", @count(stacks[s]), s)
	printf("calls %d\n", calls)
}`
	var stdout, stderr bytes.Buffer
	status := Main([]string{"-D", "MAXSTACKS=1", "-e", script, "-c", hot + " 30", hot}, strings.NewReader(""), &stdout, &stderr)
	if status != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", status, stderr.String())
	}
	m := regexp.MustCompile(`(?m)^calls (\d+)$`).FindStringSubmatch(stdout.String())
	if m == nil || m[1] == "0" {
		t.Fatalf("no calls counted:\n%s", stdout.String())
	}
	calls, _ := strconv.Atoi(m[1])
	if !strings.HasPrefix(stdout.String(), fmt.Sprintf("%d calls:\nhot+0x0 [hot]\nwork+0x", calls)) {
		t.Errorf("want one stack counting every call, hot then work:\n%s", stdout.String())
	}
	want := fmt.Sprintf("WARNING: There were %d user stack build-id failures. Try bpftap -D MAXSTACKS to increase the stack map size from 1.\n", calls-1)
	if stderr.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), want)
	}
}

// TestStackCollisions keeps 20 stacks per stack map (-D MAXSTACKS=20)
// while the forking workload allocates kernel memory from more call sites
// than that (30 to 34 here): a stack trace map has a bucket per element,
// so some stacks find their bucket taken, and the map fills; those are
// kept by value in the second store (bpfgen's kernelStackID), and none is
// lost while both have room.
func TestStackCollisions(t *testing.T) {
	requireFeature(t, "bpf")
	script := `global stacks, events
probe kernel.trace("kmem:kmalloc") {
	if (pid() == target()) { stacks[backtrace()] <<< 1; events++ }
}
probe end {
	foreach (s in stacks) { keys++; counted += @count(stacks[s]) }
	printf("events %d, keys %d, counted %d, empty %d\n", events, keys, counted, @count(stacks[""]))
}`
	var stdout, stderr bytes.Buffer
	status := Main([]string{"-D", "MAXSTACKS=20", "-e", script, "-c", workloadCommand() + " fork 5"},
		strings.NewReader(""), &stdout, &stderr)
	if status != 0 || stderr.Len() > 0 {
		t.Fatalf("exit status %d, stderr:\n%s", status, stderr.String())
	}
	var events, keys, counted, empty int
	if _, err := fmt.Sscanf(stdout.String(), "events %d, keys %d, counted %d, empty %d\n", &events, &keys, &counted, &empty); err != nil {
		t.Fatalf("%v in output %q", err, stdout.String())
	}
	t.Logf("%d events, %d stacks", events, keys)
	if keys <= 20 || keys > 40 {
		t.Fatalf("%d distinct stacks: the test needs 21 to 40", keys)
	}
	if empty != 0 || counted != events {
		t.Errorf("%d events, %d counted under %d stacks, %d stacks lost", events, counted, keys, empty)
	}
}
