package bpfrt

import (
	"fmt"
	"io"
	"os"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Uprobes and uretprobes (Linux 4.17 for the perf PMU): a kprobe-type
// program, its context the user's registers (struct pt_regs), attached to a
// perf event of the kernel's "uprobe" PMU that names the file and the
// offset of the probed instruction. The event covers every process that
// maps the file, now or later (an executable's inode, not a process):
// target filtering, where a script asks for it, is the program's business.
type uprobe struct{ ret bool }

func init() {
	register(attach.Uprobe, uprobe{})
	register(attach.Uretprobe, uprobe{ret: true})
}

func (uprobe) prepare(_ *attach.Point, attr *progLoadAttr) error {
	attr.progType = unix.BPF_PROG_TYPE_KPROBE
	return nil
}

func (u uprobe) attach(prog *ebpf.Program, p *attach.Point) (io.Closer, error) {
	ex, err := link.OpenExecutable(p.Path)
	if err != nil {
		return nil, err
	}
	opts := &link.UprobeOptions{Address: p.Offset, RefCtrOffset: p.RefCtrOffset}
	if u.ret {
		return ex.Uretprobe("", prog, opts)
	}
	return ex.Uprobe("", prog, opts)
}

// uprobePMU is the sysfs directory of the kernel's uprobe PMU.
const uprobePMU = "/sys/bus/event_source/devices/uprobe"

// check looks for the uprobe PMU (CONFIG_UPROBE_EVENTS).
func (uprobe) check(*attach.Point) error {
	if _, err := os.Stat(uprobePMU); err != nil {
		return fmt.Errorf("this kernel has no uprobe perf events (CONFIG_UPROBE_EVENTS): %w", err)
	}
	return nil
}
