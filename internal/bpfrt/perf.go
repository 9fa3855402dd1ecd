package bpfrt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Sampling perf events (timer.profile, perf.sw.*, perf.type(T).config(C)):
// a perf event opened on every online CPU for all tasks, the program set
// on each. The kernel runs the program on the CPU whose event overflowed,
// with struct bpf_perf_event_data as its context: the interrupted
// registers, then the sample period and address. Hardware events exist
// only where the CPU's counters are virtualized; check opens the event once
// (on CPU 0, without a program) to tell before anything is loaded.
type perfSampler struct{}

func init() { register(attach.PerfEvent, perfSampler{}) }

func (perfSampler) prepare(_ *attach.Point, attr *progLoadAttr) error {
	attr.progType = unix.BPF_PROG_TYPE_PERF_EVENT
	return nil
}

// perfEvents are the per-CPU events of one program: closing them detaches it.
type perfEvents []int

func (es perfEvents) Close() error {
	var errs []error
	for _, fd := range es {
		errs = append(errs, unix.Close(fd))
	}
	return errors.Join(errs...)
}

func (perfSampler) attach(prog *ebpf.Program, p *attach.Point) (io.Closer, error) {
	cpus, err := OnlineCPUs()
	if err != nil {
		return nil, err
	}
	var events perfEvents
	for _, cpu := range cpus {
		fd, err := openPerf(p.Perf, cpu)
		if err != nil {
			err = perfUnavailable(p.Perf, err)
		} else {
			err = setProgram(fd, prog)
		}
		if err != nil {
			events.Close()
			return nil, fmt.Errorf("CPU %d: %w", cpu, err)
		}
		events = append(events, fd)
	}
	return events, nil
}

// setProgram sets prog on the perf event fd and enables the event; on
// failure it closes fd.
func setProgram(fd int, prog *ebpf.Program) error {
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); err != nil {
		unix.Close(fd)
		return fmt.Errorf("set BPF program on perf event: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		unix.Close(fd)
		return fmt.Errorf("enable perf event: %w", err)
	}
	return nil
}

// openPerf opens e on cpu for every task, disabled.
func openPerf(e *attach.Perf, cpu int) (int, error) {
	attr := unix.PerfEventAttr{Type: uint32(e.Type), Config: e.Config, Sample: e.Period, Bits: unix.PerfBitDisabled,
		Bp_type: e.BreakType, Ext1: e.BreakAddr, Ext2: e.BreakLen}
	if e.Freq != 0 {
		attr.Sample, attr.Bits = e.Freq, attr.Bits|unix.PerfBitFreq
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("perf_event_open: %w", err)
	}
	return fd, nil
}

// OpenCounter opens e on cpu for every task, counting from now (no
// sampling: @perf's counters, bpfgen/perfcounter.go).
func OpenCounter(e *attach.Perf, cpu int) (int, error) {
	fd, err := openPerf(e, cpu)
	if err != nil {
		return -1, perfUnavailable(e, err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("enable perf event: %w", err)
	}
	return fd, nil
}

// check opens the event once, which tells whether the kernel (and the
// CPU) offers it.
func (perfSampler) check(p *attach.Point) error {
	if p.Perf == nil {
		return fmt.Errorf("no perf event")
	}
	fd, err := openPerf(p.Perf, 0)
	if err != nil {
		return perfUnavailable(p.Perf, err)
	}
	return unix.Close(fd)
}

// perfUnavailable says why the kernel refused to open e.
func perfUnavailable(e *attach.Perf, err error) error {
	what := fmt.Sprintf("the kernel cannot open perf event type %d config %d", e.Type, e.Config)
	switch {
	case e.BreakType != 0 && errors.Is(err, unix.ENOSPC):
		return fmt.Errorf("the kernel cannot set a hardware breakpoint at %#x (%w): every debug register of the CPU is taken", e.BreakAddr, err)
	case e.BreakType != 0:
		return fmt.Errorf("the kernel cannot set a hardware breakpoint of %d bytes at %#x (%w): the address must be a kernel one, aligned to the length", e.BreakLen, e.BreakAddr, err)
	case e.Type == unix.PERF_TYPE_HARDWARE || e.Type == unix.PERF_TYPE_HW_CACHE:
		return fmt.Errorf("%s (%w): this machine offers no hardware performance counters", what, err)
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%s (%w): no such event", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// OnlineCPUs lists the online CPUs, from /sys/devices/system/cpu/online
// ("0-3,6").
func OnlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	return parseCPUList(strings.TrimSpace(string(b)))
}

func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		first, err := strconv.Atoi(lo)
		last := first
		if err == nil && isRange {
			last, err = strconv.Atoi(hi)
		}
		if err != nil {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
