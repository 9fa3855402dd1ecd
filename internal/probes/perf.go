package probes

import (
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
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
//
// .process("PATH") (or .process, the -c command's) keeps the samples taken
// while that program runs: stap opens the event on the program's task, so
// that only its own events count towards the period; here the event
// counts on every CPU for every task and the prologue keeps the samples
// whose current task runs the file (lifecycle.go's exeFilter), so the
// program gets its share of the samples rather than one every N of its
// own events.
//
// .counter("NAME") opens no sampling event and runs no handler: it names
// a counter that @perf("NAME") reads in the probes of the program (a
// point of family PerfCounterFamily; sema's perfcounter.go and the
// tapset's perf_counter.stp say how it is counted).

const (
	perfTypeSoftware = 1 // PERF_TYPE_SOFTWARE
	perfCPUClock     = 0 // PERF_COUNT_SW_CPU_CLOCK
	// defaultSamplePeriod is stap's period when the point gives none.
	defaultSamplePeriod = 1000000
)

// perfBase is the path of every perf event point.
const perfBase = "perf.type(number).config(number)"

// PerfCounterFamily is the family of the .counter("NAME") points.
const PerfCounterFamily = "perf.counter"

func perfFamily(k KernelInfo, cfg Config) *Family {
	return &Family{Name: "perf", Kernel: true,
		Paths: []string{perfBase, perfBase + ".sample(number)", perfBase + ".hz(number)",
			perfBase + ".process(string)", perfBase + ".process", "timer.profile.tick"},
		Expand: func(p *Point) ([]*Point, error) { return expandPerf(k, cfg, p) }}
}

// perfCounterFamily serves the counters; the elaborator collects its
// points, which run nothing.
func perfCounterFamily() *Family {
	return &Family{Name: PerfCounterFamily,
		Paths: []string{perfBase + ".counter(string)", perfBase + ".process(string).counter(string)"},
		Expand: func(p *Point) ([]*Point, error) {
			if _, err := PerfCounterOf(p); err != nil {
				return nil, err
			}
			if path, ok := p.Arg("process").(*syntax.StringLit); ok {
				return []*Point{concretePoint(p, "process", ResolveExecutable(path.Value))}, nil
			}
			return []*Point{p}, nil
		}}
}

// PerfCounter is a counter a .counter("NAME") point names.
type PerfCounter struct {
	Name string
	// Process is the program whose probes read it (resolved), "" when the
	// point names none (the first probe reading it gives it, as in stap).
	Process string
	// Dev and Ino identify Process's file (ExeIdentity), once it is
	// known: both 0 when there is no such file.
	Dev, Ino uint64
	Event    attach.Perf
	Pos      syntax.Pos // the point's, as the script wrote it (the elaborator's)
	// Read: a probe reads it (only such a counter's events are opened)
	Read bool
}

// SetProcess makes path, resolved, the counter's program.
func (c *PerfCounter) SetProcess(path string) {
	c.Process = ResolveExecutable(path)
	c.Dev, c.Ino, _ = ExeIdentity(c.Process)
}

// PerfCounterOf is the counter of a point of PerfCounterFamily.
func PerfCounterOf(p *Point) (*PerfCounter, error) {
	name := p.Arg("counter").(*syntax.StringLit).Value
	switch {
	case name == "":
		return nil, errorf("missing perf probe counter component name")
	case strings.ContainsAny(name, "*?["):
		return nil, errorf("wildcard not allowed with perf probe counter component")
	}
	e, err := perfEvent(p)
	if err != nil {
		return nil, err
	}
	c := &PerfCounter{Name: name, Event: *e}
	c.Event.Period = 0 // counted, never sampled
	if path, ok := p.Arg("process").(*syntax.StringLit); ok {
		c.SetProcess(path.Value)
	}
	return c, nil
}

// expandPerf gives a perf point its attach point, when the kernel opens
// the event, and a .process point its filter.
func expandPerf(k KernelInfo, cfg Config, p *Point) ([]*Point, error) {
	e, err := perfEvent(p)
	if err != nil {
		return nil, err
	}
	if !hasComponent(p, "process") {
		return perfPoint(k, p, e)
	}
	if p.Arg("process") == nil && cfg.TargetExecutable == "" {
		return nil, errorf("unspecified process probe is invalid without a -c COMMAND [man stapprobes]")
	}
	path := cfg.TargetExecutable
	if arg, ok := p.Arg("process").(*syntax.StringLit); ok {
		path = ResolveExecutable(arg.Value)
	}
	points, err := perfPoint(k, concretePoint(p, "process", path), e)
	if err != nil {
		return nil, err
	}
	points[0].Prologue, err = parsePrologue(p.Name(), "if (!"+exeFilter(path)+") next\n")
	return points, err
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
