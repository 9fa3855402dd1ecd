package bpfrt

import (
	"fmt"
	"io"
	"unsafe"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Classic tracepoints: the trace event opened as a perf event, the program
// set on it. The context is the event's record, laid out as tracefs's
// events/SYSTEM/EVENT/format says; the event's ID comes from tracefs.
type perfTracepoint struct{}

func init() { register(attach.Tracepoint, perfTracepoint{}) }

func (perfTracepoint) prepare(_ *attach.Point, attr *progLoadAttr) error {
	attr.progType = unix.BPF_PROG_TYPE_TRACEPOINT
	return nil
}

// perfEvent is a classic tracepoint attachment: closing the perf event
// detaches the program.
type perfEvent struct{ fd int }

func (e *perfEvent) Close() error { return unix.Close(e.fd) }

// attach opens the trace event as a perf event (one for all CPUs: a
// tracepoint runs its BPF programs wherever it fires) and sets the program
// on it.
func (perfTracepoint) attach(prog *ebpf.Program, p *attach.Point) (io.Closer, error) {
	id, err := kernel.TracepointID(p.System, p.Event)
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
	if err := setProgram(fd, prog); err != nil {
		return nil, err
	}
	return &perfEvent{fd}, nil
}

// check accepts: tracepoints as perf events predate every kernel with BTF.
func (perfTracepoint) check(*attach.Point) error { return nil }
