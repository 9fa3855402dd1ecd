package bpfrt

import (
	"fmt"
	"io"
	"os"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Kprobes and kretprobes: a kprobe-type program, its context the kernel's
// registers (struct pt_regs), attached to a perf event of the kernel's
// "kprobe" PMU (Linux 4.17) that names the function. A kretprobe with a
// MaxActive bound goes through tracefs's kprobe_events instead, the only
// interface that takes one (cilium/ebpf does that; tracefs must then be
// mounted).
//
// A module's function is named by its name alone: the kernel looks the
// name up in vmlinux first, then in the modules (kallsyms_lookup_name), and
// since Linux 6.6 refuses a name several functions share (EADDRNOTAVAIL).
type kprobe struct{ ret bool }

func init() {
	register(attach.Kprobe, kprobe{})
	register(attach.Kretprobe, kprobe{ret: true})
}

func (kprobe) prepare(_ *attach.Point, attr *progLoadAttr) error {
	attr.progType = unix.BPF_PROG_TYPE_KPROBE
	return nil
}

func (k kprobe) attach(prog *ebpf.Program, p *attach.Point) (io.Closer, error) {
	if k.ret {
		return link.Kretprobe(p.Event, prog, &link.KprobeOptions{RetprobeMaxActive: p.MaxActive, Offset: p.Offset})
	}
	return link.Kprobe(p.Event, prog, &link.KprobeOptions{Offset: p.Offset})
}

// kprobePMU is the sysfs directory of the kernel's kprobe PMU.
const kprobePMU = "/sys/bus/event_source/devices/kprobe"

// check looks for the kprobe PMU (CONFIG_KPROBE_EVENTS), and where it is
// missing asks the kernel's configuration whether kprobes are missing
// altogether (CONFIG_KPROBES), as on a kernel built without them. A
// kretprobe with a MaxActive bound needs tracefs mounted as well.
func (kprobe) check(p *attach.Point) error {
	_, err := os.Stat(kprobePMU)
	if err == nil && p.MaxActive > 0 && kernel.TracefsMount() == "" {
		return fmt.Errorf("a kretprobe with a bound on pending returns (maxactive) is made through tracefs, which is not mounted (mount -t tracefs nodev /sys/kernel/tracing)")
	}
	if err == nil {
		return nil
	}
	if v, ok := kernel.Config("CONFIG_KPROBES"); ok && v == "" {
		return target.Missing(target.Kprobes, "")
	}
	return target.Missing(target.Kprobes, fmt.Sprintf("no kprobe perf events (CONFIG_KPROBE_EVENTS): %v", err))
}
