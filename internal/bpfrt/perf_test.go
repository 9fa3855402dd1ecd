package bpfrt

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TestPerfSampling counts the samples of cpu-clock at 1000 Hz on every CPU
// for 200 ms of wall time: each online CPU gives about 200 (idle CPUs
// count too, in the idle task), so there are at least 100 per CPU.
func TestPerfSampling(t *testing.T) {
	requireBPF(t)
	point := &attach.Point{Kind: attach.PerfEvent, Perf: &attach.Perf{Type: unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK, Freq: 1000}}
	if err := CanAttach(point); err != nil {
		t.Fatalf("cpu-clock: %v", err)
	}
	counts := newCounts(t)
	defer counts.Close()
	p := loadAttached(t, &ProgramSpec{Name: "sample", Attach: point, Instructions: countAllProgram,
		Maps: map[string]*ebpf.Map{"counts": counts}})
	time.Sleep(200 * time.Millisecond)
	p.Close()
	n, err := SumPerCPU(counts, 0)
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := onlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if n < uint64(100*len(cpus)) {
		t.Errorf("%d samples on %d CPUs in 200 ms at 1000 Hz", n, len(cpus))
	}
}

// TestPerfUnavailable: an event the kernel does not have is refused by
// CanAttach with the reason, before any program is loaded.
func TestPerfUnavailable(t *testing.T) {
	requireBPF(t)
	bogus := &attach.Point{Kind: attach.PerfEvent, Perf: &attach.Perf{Type: unix.PERF_TYPE_SOFTWARE, Config: 999, Period: 1000}}
	err := CanAttach(bogus)
	if err == nil || !strings.Contains(err.Error(), "no such event") {
		t.Errorf("CanAttach(software event 999) = %v, want no such event", err)
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string]string{"0": "[0]", "0-3": "[0 1 2 3]", "0-1,4,6-7": "[0 1 4 6 7]"} {
		got, err := parseCPUList(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("parseCPUList(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := parseCPUList("x"); err == nil {
		t.Error("parseCPUList(\"x\") succeeded")
	}
}
