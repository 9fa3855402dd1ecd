package probes

import (
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
)

// Sampling perf events: perf.type(T).config(C), fired every N events with
// .sample(N) (every 1000000 without), or N times a second with .hz(N); and
// timer.profile.tick, stap's profile timer, which fires on every CPU at
// every tick: here the cpu-clock software event sampled every 1/HZ
// seconds of CPU time (CONFIG_HZ), which the idle task fills on an idle
// CPU. The named events (perf.sw.cpu_clock, perf.hw.cpu_cycles, ...) and
// timer.profile are aliases of the tapset (perf.stp, timers.stp), as in
// stap. Whether the kernel opens an event (hardware counters need a CPU
// that exposes them) is asked when the point is resolved, so that a
// missing event is an error of pass 2, not of the run.

const (
	perfTypeSoftware = 1 // PERF_TYPE_SOFTWARE
	perfCPUClock     = 0 // PERF_COUNT_SW_CPU_CLOCK
	// defaultSamplePeriod is stap's period when the point gives none.
	defaultSamplePeriod = 1000000
)

func perfFamily(k KernelInfo) *Family {
	base := "perf.type(number).config(number)"
	return &Family{Name: "perf", Kernel: true,
		Paths:  []string{base, base + ".sample(number)", base + ".hz(number)", "timer.profile.tick"},
		Expand: func(p *Point) ([]*Point, error) { return expandPerf(k, p) }}
}

// expandPerf gives a perf point its attach point, when the kernel opens
// the event.
func expandPerf(k KernelInfo, p *Point) ([]*Point, error) {
	e, err := perfEvent(p)
	if err != nil {
		return nil, err
	}
	return perfPoint(k, p, e)
}

// perfPoint is p on the perf event e, when the kernel opens it.
func perfPoint(k KernelInfo, p *Point, e *attach.Perf) ([]*Point, error) {
	a := &attach.Point{Kind: attach.PerfEvent, Perf: e, Regs: true}
	if err := k.Attachable(a); err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	q := *p
	q.Context = &Context{kernel: k, Attach: a}
	return []*Point{&q}, nil
}

// perfEvent is the event a perf point names.
func perfEvent(p *Point) (*attach.Perf, error) {
	if p.Components[0].Name == "timer" {
		return &attach.Perf{Type: perfTypeSoftware, Config: perfCPUClock, Period: uint64(1_000_000_000 / kernel.HZ())}, nil
	}
	typ, _ := p.Number("type")
	config, _ := p.Number("config")
	e := &attach.Perf{Type: uint64(typ), Config: uint64(config), Period: defaultSamplePeriod}
	if n, ok := p.Number("sample"); ok {
		if n <= 0 {
			return nil, errorf("invalid perf sample period %d", n)
		}
		e.Period = uint64(n)
	}
	if n, ok := p.Number("hz"); ok {
		if n <= 0 {
			return nil, errorf("invalid perf sample frequency %d", n)
		}
		e.Period, e.Freq = 0, uint64(n)
	}
	if typ < 0 || config < 0 || typ > 0xffffffff {
		return nil, errorf("invalid perf event type %d config %d", typ, config)
	}
	return e, nil
}
