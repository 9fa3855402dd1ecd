package bpfgen_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

// TestStatReadAllCPUs moves the child over every CPU (taskset on the
// shell itself) while the probe adds cpu() to a statistic and to shared
// longs; once the statistic's minimum and maximum span every CPU, which
// only a read of the other CPUs' partials can see, the extractors must
// equal the shared totals. The array element goes through the last-key
// cache, whose pending partials the read must fold in.
func TestStatReadAllCPUs(t *testing.T) {
	requireBPF(t)
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	if ncpu < 2 {
		t.Skip("one possible CPU")
	}
	script := fmt.Sprintf(`global done, s, a, n, sum
probe begin {
  c = cpu(); s <<< c; a["k"] <<< c; n++; sum += c
  if (done || @min(s) != 0 || @max(s) != %d) next
  done = 1
  printf("%%d %%d %%d %%d\n", @count(s) == n, @sum(s) == sum, @count(a["k"]) == n, @sum(a["k"]) == sum)
  printf("%%d %%d %%d\n", @min(a["k"]), @max(a["k"]), @avg(s) == sum / n)
}`, ncpu-1)
	var cpus []string
	for c := range ncpu {
		cpus = append(cpus, fmt.Sprint(c))
	}
	shell := "read x; for c in " + strings.Join(cpus, " ") + "; do taskset -pc $c $$ >/dev/null; done"
	got := runScript(t, script, newChild(t, "sh", "-c", shell))
	if want := fmt.Sprintf("1 1 1 1\n0 %d 1\n", ncpu-1); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}
