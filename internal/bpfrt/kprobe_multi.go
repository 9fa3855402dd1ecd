package bpfrt

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// kprobe_multi (Linux 5.18, CONFIG_FPROBE): one kprobe-type program,
// loaded for BPF_TRACE_KPROBE_MULTI, attached to many kernel functions
// with one link, by fprobe (ftrace), not by kprobes: a wildcard's thousand
// functions cost one system call, where a kprobe each costs a perf event
// each. The link gives the program of each function the cookie at the
// same index, which bpf_get_attach_cookie returns: here the index itself,
// the point's place in Symbols and in the program's table of points
// (package bpfgen), as for uprobe_multi.
//
// The context is struct pt_regs, as for a kprobe, but built by ftrace at
// the function's entry: ip is the function's address (no +1 of an int3),
// and bpf_get_func_ip gives it too. A kretprobe_multi program sees the
// return value in rax.
type kprobeMulti struct{ ret bool }

func init() {
	register(attach.KprobeMulti, kprobeMulti{})
	register(attach.KretprobeMulti, kprobeMulti{ret: true})
}

func (kprobeMulti) prepare(_ *attach.Point, attr *progLoadAttr) error {
	attr.progType = unix.BPF_PROG_TYPE_KPROBE
	attr.expectedAttachType = uint32(ebpf.AttachTraceKprobeMulti)
	return nil
}

func (k kprobeMulti) attach(prog *ebpf.Program, p *attach.Point) (io.Closer, error) {
	if len(p.Symbols) == 0 {
		return nil, fmt.Errorf("a kprobe_multi link needs the functions of its points")
	}
	opts := link.KprobeMultiOptions{Symbols: p.Symbols, Cookies: make([]uint64, len(p.Symbols))}
	for i := range opts.Cookies {
		opts.Cookies[i] = uint64(i)
	}
	if k.ret {
		return link.KretprobeMulti(prog, opts)
	}
	return link.KprobeMulti(prog, opts)
}

// kprobeMultiVerdict keeps check's verdict on the kernel.
var kprobeMultiVerdict verdicts

// check loads an empty kprobe_multi program and attaches it to p's first
// function: a kernel without fprobe (CONFIG_FPROBE off, or before 5.18)
// refuses the load's attach type or the link. The verdict is the
// kernel's, kept for the process, unless the function does not exist.
func (k kprobeMulti) check(p *attach.Point) error {
	sym := p.Event
	if len(p.Symbols) > 0 {
		sym = p.Symbols[0]
	}
	return kprobeMultiVerdict.get("", func() (bool, error) {
		err := k.try(sym)
		if errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("the kernel has no function %s to attach a kprobe_multi link to: %w", sym, err)
		}
		return true, err
	})
}

// try loads and attaches an empty program at sym.
func (k kprobeMulti) try(sym string) error {
	sample := &attach.Point{Kind: attach.KprobeMulti, Symbols: []string{sym}}
	prog, err := Load(&ProgramSpec{Name: "probe_kpm", Attach: sample,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err == nil {
		var l io.Closer
		l, err = k.attach(prog.Program, sample)
		if err == nil {
			l.Close()
		}
		prog.Close()
	}
	switch {
	case err == nil, errors.Is(err, os.ErrNotExist):
		return err
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, enotsupp):
		if v, ok := kernel.Config("CONFIG_FPROBE"); ok && v == "" {
			return fmt.Errorf("this kernel has no kprobe_multi links (CONFIG_FPROBE is off)")
		}
		return fmt.Errorf("this kernel has no kprobe_multi links (CONFIG_FPROBE, Linux 5.18): %w", err)
	}
	return fmt.Errorf("this kernel refuses kprobe_multi links (on %s): %w", sym, err)
}
