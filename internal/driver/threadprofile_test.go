package driver

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSyscallTimeFlamegraphExample runs examples/syscall_time_flamegraph.stp
// on syscall_paths, which reads /dev/zero a byte at a time 2000 times under
// main → read_phase → read_small, then sleeps 200 ms under main →
// sleep_phase → nap. The heaviest folded stack is the sleep's, through
// sleep_phase, topped by the call, weighing at least the 200 ms slept; the
// reads are charged to read_phase. (libc's wrappers have no frame pointer,
// so the walk skips the function that called them: nap and read_small
// are not on the stacks, docs/thread-profile.md.)
func TestSyscallTimeFlamegraphExample(t *testing.T) {
	requireFeature(t, "bpf")
	var folded, stderr bytes.Buffer
	status := Main([]string{"-c", filepath.Join(cPrograms(), "syscall_paths") + " 2000", "../../examples/syscall_time_flamegraph.stp"},
		strings.NewReader(""), &folded, &stderr)
	if status != 0 || stderr.Len() > 0 {
		t.Fatalf("exit status %d, stderr:\n%s", status, stderr.String())
	}
	stacks := foldedStacks(t, folded.String())
	heaviest := stacks[0]
	if !strings.Contains(heaviest.stack, ";main;sleep_phase;") || !strings.HasSuffix(heaviest.stack, ";clock_nanosleep") ||
		heaviest.weight < 200e6 {
		t.Errorf("heaviest stack %s %d, want main;sleep_phase;…;clock_nanosleep of at least 200 ms; folded stacks:\n%s",
			heaviest.stack, heaviest.weight, folded.String())
	}
	reads := int64(0)
	for _, s := range stacks {
		if strings.Contains(s.stack, ";main;read_phase;") && strings.HasSuffix(s.stack, ";read") {
			reads += s.weight
		}
	}
	if reads <= 0 || reads >= heaviest.weight {
		t.Errorf("reads under main;read_phase took %d ns, want some, less than the sleep; folded stacks:\n%s", reads, folded.String())
	}
}

// foldedStack is a line of folded output: a stack and its weight.
type foldedStack struct {
	stack  string
	weight int64
}

// foldedStacks reads "STACK WEIGHT" lines, failing t on any other.
func foldedStacks(t *testing.T, text string) []foldedStack {
	t.Helper()
	var stacks []foldedStack
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		i := strings.LastIndexByte(line, ' ')
		weight, err := strconv.ParseInt(line[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("not a folded stack: %q in\n%s", line, text)
		}
		stacks = append(stacks, foldedStack{line[:i], weight})
	}
	return stacks
}
