package bpfrt

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
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
// the function's entry: ip is the address after ftrace's call (vfs_read+9
// on Debian's 6.12, whose functions start with endbr64), where a kprobe's
// ip is the probed address plus one (+5 there, +1 on 6.1), as after an
// int3; bpf_get_func_ip gives the function's address to both. A
// kretprobe_multi program sees the return value in rax.
//
// A kprobe session (Linux 6.10) is a kprobe_multi link whose program,
// loaded for BPF_TRACE_KPROBE_SESSION, runs at both the entry and the
// return of each function (attach.KprobeSession).
type kprobeMulti struct{ ret, session bool }

func init() {
	register(attach.KprobeMulti, kprobeMulti{})
	register(attach.KretprobeMulti, kprobeMulti{ret: true})
	register(attach.KprobeSession, kprobeMulti{session: true})
}

func (k kprobeMulti) attachType() ebpf.AttachType {
	if k.session {
		return ebpf.AttachTraceKprobeSession
	}
	return ebpf.AttachTraceKprobeMulti
}

func (k kprobeMulti) prepare(_ *attach.Point, attr *progLoadAttr) error {
	attr.progType = unix.BPF_PROG_TYPE_KPROBE
	attr.expectedAttachType = uint32(k.attachType())
	return nil
}

func (k kprobeMulti) attach(prog *ebpf.Program, p *attach.Point) (io.Closer, error) {
	if len(p.Symbols) == 0 {
		return nil, fmt.Errorf("a %s link needs the functions of its points", p.Kind)
	}
	opts := link.KprobeMultiOptions{Symbols: p.Symbols, Cookies: make([]uint64, len(p.Symbols)), Session: k.session}
	for i := range opts.Cookies {
		opts.Cookies[i] = uint64(i)
	}
	if k.ret {
		return link.KretprobeMulti(prog, opts)
	}
	return link.KprobeMulti(prog, opts)
}

// kprobeMultiVerdict keeps check's verdicts on the kernel: "multi" for
// kprobe_multi links, "session" for kprobe sessions.
var kprobeMultiVerdict verdicts

// check loads an empty program and attaches it to p's first function: a
// kernel without fprobe (CONFIG_FPROBE off, or before 5.18) refuses the
// link, one before 6.10 a session. The verdict is the kernel's, kept for
// the process, unless the function does not exist.
func (k kprobeMulti) check(p *attach.Point) error {
	sym := p.Event
	if len(p.Symbols) > 0 {
		sym = p.Symbols[0]
	}
	if err := (kprobeMulti{}).verdict(sym); err != nil || !k.session {
		return err
	}
	return k.verdict(sym)
}

// verdict returns the kept verdict on k's kind of link, trying it at sym
// if there is none yet.
func (k kprobeMulti) verdict(sym string) error {
	key := "multi"
	if k.session {
		key = "session"
	}
	return kprobeMultiVerdict.get(key, func() (bool, error) {
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
	if k.session {
		sample.Kind = attach.KprobeSession
	}
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
	case k.session && noLink(err):
		return target.Missing(target.KprobeSession, "")
	case noLink(err):
		// cilium/ebpf's message blames the kernel's version, which on a
		// kernel built without fprobe is wrong.
		if v, ok := kernel.Config("CONFIG_FPROBE"); ok && v == "" {
			return target.Missing(target.KprobeMulti, "CONFIG_FPROBE is off")
		}
		return target.Missing(target.KprobeMulti, "")
	}
	return fmt.Errorf("this kernel refuses %s links (on %s): %w", sample.Kind, sym, err)
}

// noLink tells whether err is the kernel's saying that it lacks a kind of
// link.
func noLink(err error) bool {
	return errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, enotsupp)
}
