package sema

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestPruneLongChain elaborates a kernel probe whose condition is a chain
// of 24 `||` (as the set of call numbers the syscall.*.return program
// keeps): the @defined pruner once pruned the condition of each `||`, its
// left side, twice, 2^24 visits here; it now visits each node once.
func TestPruneLongChain(t *testing.T) {
	var terms []string
	for i := range 24 {
		terms = append(terms, fmt.Sprintf("$id == %d", i))
	}
	script := fmt.Sprintf(`global n probe kernel.trace("sys_enter") { if (%s) n++ }`, strings.Join(terms, " || "))
	start := time.Now()
	out := run(t, chunk{script: script}, nil, nil)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("elaborating a chain of 24 || took %v", took)
	}
	if !strings.Contains(out, `kernel.trace("raw_syscalls:sys_enter")`) {
		t.Errorf("elaborated:\n%s", out)
	}
}
