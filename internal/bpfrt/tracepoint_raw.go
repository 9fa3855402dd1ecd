package bpfrt

import (
	"io"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Raw tracepoints (Linux 4.17): the context is the tracepoint's arguments
// as u64 args[], memory behind them read with bpf_probe_read_kernel.
type rawTracepoint struct{}

func init() { register(attach.RawTracepoint, rawTracepoint{}) }

func (rawTracepoint) prepare(_ *attach.Point, attr *progLoadAttr) error {
	attr.progType = unix.BPF_PROG_TYPE_RAW_TRACEPOINT
	return nil
}

func (rawTracepoint) attach(prog *ebpf.Program, p *attach.Point) (io.Closer, error) {
	return link.AttachRawTracepoint(link.RawTracepointOptions{Name: p.Event, Program: prog})
}

// check accepts: every kernel bpftap runs on (it needs BTF) has them.
func (rawTracepoint) check(*attach.Point) error { return nil }
