package bpfrt

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TestPerfSampling samples cpu-clock at 1000 Hz on every CPU until each
// online CPU has given 5 samples. A busy CPU gives 1000 a second; an idle
// one few (about 20 a second were measured on this 6.18 VM, where the
// test once counted 199 samples in 200 ms on two CPUs and failed a bound
// of 100 each), and a busy machine throttles
// sampling (the kernel lowers perf_event_max_sample_rate when its
// interrupts run long), so the test waits for samples rather than timing
// them: 10 s without them on some CPU is a failure.
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
	defer p.Close()
	cpus, err := OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	var perCPU []uint64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := counts.Lookup(uint32(0), &perCPU); err != nil {
			t.Fatal(err)
		}
		if slices.IndexFunc(cpus, func(c int) bool { return perCPU[c] < 5 }) < 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("samples by CPU after 10 s at 1000 Hz: %v (online: %v), want 5 on each", perCPU, cpus)
		}
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
