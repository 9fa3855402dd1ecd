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

// userStacksScript counts the calls of leaf() in the sites program per
// user stack, and prints each stack with its count.
const userStacksScript = `global stacks, calls
probe process(@1).function("leaf") {
	if (pid() == target()) { stacks[sprint_ubacktrace()] <<< 1; calls++ }
}
probe end {
	foreach (s in stacks) printf("%d calls:\n%s\n", @count(stacks[s]), s)
	printf("calls %d\n", calls)
}`

// runSites runs userStacksScript on 5 rounds of the sites program's 32
// call sites with -D MAXSTACKS=maxStacks: it returns the calls counted
// under each stack's text and stderr.
func runSites(t *testing.T, maxStacks int) (calls map[string]int, stderr string) {
	t.Helper()
	sites := filepath.Join(cPrograms(), "sites")
	var stdout, errs bytes.Buffer
	status := Main([]string{"-D", fmt.Sprintf("MAXSTACKS=%d", maxStacks), "-e", userStacksScript, "-c", sites + " 5", sites},
		strings.NewReader(""), &stdout, &errs)
	if status != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", status, errs.String())
	}
	out, found := strings.CutSuffix(stdout.String(), "calls 160\n")
	if !found {
		t.Fatalf("want 160 calls:\n%s", stdout.String())
	}
	calls = map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^(\d+) calls:\n((?:.+\n)*)\n`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		calls[m[2]] += n
	}
	return calls, errs.String()
}

// TestUserStackCollisions keeps 32 stacks per stack map (-D MAXSTACKS=32)
// while leaf() is called from 32 stacks, 5 times each: 32 stacks hash
// into the 32 buckets of each map, so some find their bucket taken (all
// fall in distinct buckets once in 10^13); those are kept by value, their
// addresses and build-id frames side by side (bpfgen's userStackID), and
// none is lost. Every stack is named through its build-id frames after
// the program exited, the addresses of a stack kept by value too.
func TestUserStackCollisions(t *testing.T) {
	requireFeature(t, "bpf")
	calls, stderr := runSites(t, 32)
	if stderr != "" {
		t.Errorf("stderr:\n%s", stderr)
	}
	frame := regexp.MustCompile(`^leaf\+0x0 \[sites\]\nsite\+0x[0-9a-f]+ \[sites\]\nmain\+0x[0-9a-f]+ \[sites\]\n`)
	for stack, n := range calls {
		if n != 5 || !frame.MatchString(stack) {
			t.Errorf("%d calls under a stack, want 5 under leaf, site, main:\n%s", n, stack)
		}
	}
	if len(calls) != 32 {
		t.Errorf("%d stacks, want 32", len(calls))
	}
}

// TestBuildIDFailures keeps one stack per stack map (-D MAXSTACKS=1)
// while leaf() is called from 32 stacks, 5 rounds. The first call of a
// round (A) is kept in both maps, the second (B) finds the bucket taken
// and is kept by value, the other 30 find every store full: lost,
// counted. From the second round on, the map of build-id frames, which
// takes an element before it compares, fails A although it has it, and A
// (not in the full store of stacks kept by value) keeps its addresses
// alone: a build-id failure, counted. Those addresses are named only if
// user space read A's frames first (its text is then A's), else shown
// as addresses: either way 10 calls under A and B, B named.
func TestBuildIDFailures(t *testing.T) {
	requireFeature(t, "bpf")
	calls, stderr := runSites(t, 1)
	want := "WARNING: There were 150 stack failures. Try bpftap -D MAXSTACKS to increase the stack map size from 1.\n" +
		"WARNING: There were 4 user stack build-id failures. Try bpftap -D MAXSTACKS to increase the stack map size from 1.\n"
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
	kept, named := 0, 0
	for stack, n := range calls {
		switch {
		case stack == "":
		case strings.HasPrefix(stack, "leaf+0x0 [sites]\nsite+0x"):
			kept += n
			if n == 5 {
				named++
			}
		case strings.HasPrefix(stack, "0x"):
			kept += n
		default:
			t.Errorf("%d calls under a stack that is not leaf's:\n%s", n, stack)
		}
	}
	if calls[""] != 150 || kept != 10 || named == 0 || len(calls) > 4 {
		t.Errorf("want 150 calls under \"\" and 10 under A and B, B named with 5: %v", calls)
	}
}

// TestStackCollisions keeps 24 stacks per stack map (-D MAXSTACKS=24)
// while the forking workload allocates kernel memory from more call sites
// than that (30 to 34 here): a stack trace map has a bucket per element,
// so some stacks find their bucket taken, and the map fills; those are
// kept by value in the second store (bpfgen's kernelStackID), and none is
// lost while both have room. (Interrupts that allocate while the workload
// is current add stacks of their own on a busy machine: with 20 a store,
// about 16 in the map and 18 by value left room for 2 more, and a paired
// run of the suite lost 2; 24 leave room for about 8.)
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
	status := Main([]string{"-D", "MAXSTACKS=24", "-e", script, "-c", workloadCommand() + " fork 5"},
		strings.NewReader(""), &stdout, &stderr)
	if status != 0 || stderr.Len() > 0 {
		t.Fatalf("exit status %d, stderr:\n%s", status, stderr.String())
	}
	var events, keys, counted, empty int
	if _, err := fmt.Sscanf(stdout.String(), "events %d, keys %d, counted %d, empty %d\n", &events, &keys, &counted, &empty); err != nil {
		t.Fatalf("%v in output %q", err, stdout.String())
	}
	t.Logf("%d events, %d stacks", events, keys)
	if keys <= 24 || keys > 48 {
		t.Fatalf("%d distinct stacks: the test needs 25 to 48", keys)
	}
	if empty != 0 || counted != events {
		t.Errorf("%d events, %d counted under %d stacks, %d stacks lost", events, counted, keys, empty)
	}
}
