package bpfrt

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Mechanism is how a program is attached to a tracepoint.
type Mechanism uint8

const (
	// TPBTF is a BTF-typed raw tracepoint (tp_btf): context u64 args[],
	// pointer arguments typed and directly dereferenceable.
	TPBTF Mechanism = iota
	// RawTracepoint: context u64 args[], memory read by helper.
	RawTracepoint
	// Tracepoint is a classic tracepoint through a perf event: the context
	// is the trace event record (tracefs's events/SYSTEM/EVENT/format).
	Tracepoint
)

func (m Mechanism) String() string {
	switch m {
	case TPBTF:
		return "tp_btf"
	case RawTracepoint:
		return "raw_tracepoint"
	case Tracepoint:
		return "tracepoint"
	}
	return fmt.Sprintf("mechanism %d", uint8(m))
}

// Choose returns the cheapest mechanism that can attach to tp: tp_btf when
// the kernel has the tracepoint's BTF prototype and BTF-typed programs, a
// raw tracepoint otherwise, a classic tracepoint for a trace event without
// a raw tracepoint.
func Choose(tp *kernel.Tracepoint) (Mechanism, error) {
	switch {
	case tp.Proto != 0 && haveTPBTF(tp):
		return TPBTF, nil
	case tp.Proto != 0:
		return RawTracepoint, nil
	case tp.System != "":
		return Tracepoint, nil
	}
	return 0, fmt.Errorf("tracepoint %s cannot be attached: the kernel describes it neither in BTF nor in tracefs", tp)
}

var (
	tpBTFOnce sync.Once
	tpBTFErr  error
)

// haveTPBTF tells whether the kernel loads BTF-typed tracepoint programs
// (Linux 5.5), by loading an empty one on tp once per process.
func haveTPBTF(tp *kernel.Tracepoint) bool {
	tpBTFOnce.Do(func() {
		spec := &ProgramSpec{Name: "probe_tp_btf", Mechanism: TPBTF, Tracepoint: tp,
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}}
		p, err := Load(spec)
		if err == nil {
			p.Close()
		}
		tpBTFErr = err
	})
	return tpBTFErr == nil
}

func attach(p *Program) (interface{ Close() error }, error) {
	tp := p.Spec.Tracepoint
	switch p.Spec.Mechanism {
	case TPBTF:
		return link.AttachTracing(link.TracingOptions{Program: p.Program, AttachType: ebpf.AttachTraceRawTp})
	case RawTracepoint:
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp.Event, Program: p.Program})
	case Tracepoint:
		return attachPerfTracepoint(p.Program, tp)
	}
	return nil, fmt.Errorf("unknown mechanism %d", p.Spec.Mechanism)
}

// perfEvent is a classic tracepoint attachment: closing the perf event
// detaches the program.
type perfEvent struct{ fd int }

func (e *perfEvent) Close() error { return unix.Close(e.fd) }

// attachPerfTracepoint opens the trace event as a perf event (one for all
// CPUs: a tracepoint runs its BPF programs wherever it fires) and sets the
// program on it.
func attachPerfTracepoint(prog *ebpf.Program, tp *kernel.Tracepoint) (*perfEvent, error) {
	id, err := kernel.TracepointID(tp.System, tp.Event)
	if err != nil {
		return nil, err
	}
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_TRACEPOINT,
		Config:      id,
		Sample:      1,
		Wakeup:      1,
		Sample_type: unix.PERF_SAMPLE_RAW,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("perf_event_open: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set BPF program on perf event: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("enable perf event: %w", err)
	}
	return &perfEvent{fd}, nil
}
