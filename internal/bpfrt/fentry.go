package bpfrt

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// fentry and fexit (Linux 5.5): a tracing program checked against the
// function's BTF prototype (BTF_KIND_FUNC BTFID, in vmlinux's BTF or, for
// a module's function, in the module's, whose BTF object the load names
// by fd), called from a BPF trampoline the kernel writes at the
// function's entry: no int3, no perf event, the cheapest way into a
// kernel function. The context is u64 args[], the arguments typed by BTF;
// fexit adds the return value in the word after the last argument.
//
// The link is a tracing link (BPF_LINK_CREATE, Linux 5.8) or, before
// that, BPF_RAW_TRACEPOINT_OPEN; cilium/ebpf's AttachTracing tries both.
type fentry struct{ exit bool }

func init() {
	register(attach.Fentry, fentry{})
	register(attach.Fexit, fentry{exit: true})
}

func (f fentry) attachType() ebpf.AttachType {
	if f.exit {
		return ebpf.AttachTraceFExit
	}
	return ebpf.AttachTraceFEntry
}

func (f fentry) prepare(p *attach.Point, attr *progLoadAttr) error {
	if p.BTFID == 0 {
		return fmt.Errorf("a %s program needs the BTF id of its function %s", p.Kind, p.Event)
	}
	attr.progType = unix.BPF_PROG_TYPE_TRACING
	attr.expectedAttachType = uint32(f.attachType())
	attr.attachBTFID = uint32(p.BTFID)
	if p.Module != "" {
		h, err := moduleBTF(p.Module)
		if err != nil {
			return err
		}
		attr.attachBTFObjFd = uint32(h.FD())
	}
	return nil
}

func (f fentry) attach(prog *ebpf.Program, _ *attach.Point) (io.Closer, error) {
	return link.AttachTracing(link.TracingOptions{Program: prog, AttachType: f.attachType()})
}

// moduleBTFs holds the BTF objects of the modules whose functions
// programs were loaded for, open for the process's life: a handful of
// file descriptors, and the kernel keeps a module's BTF while a program
// attached to one of its functions lives anyway.
var moduleBTFs struct {
	sync.Mutex
	m map[string]*btf.Handle
}

// moduleBTF returns the kernel's BTF object of module.
func moduleBTF(module string) (*btf.Handle, error) {
	c := &moduleBTFs
	c.Lock()
	defer c.Unlock()
	if h, ok := c.m[module]; ok {
		return h, nil
	}
	h, err := btf.FindHandle(func(info *btf.HandleInfo) bool { return info.IsModule() && info.Name == module })
	if err != nil {
		return nil, fmt.Errorf("the kernel has no BTF for module %s (not loaded, or built without CONFIG_DEBUG_INFO_BTF_MODULES): %w", module, err)
	}
	if c.m == nil {
		c.m = map[string]*btf.Handle{}
	}
	c.m[module] = h
	return h, nil
}

// fentryVerdict keeps check's verdict on the kernel, by module.
var fentryVerdict verdicts

// check loads an empty program for p and attaches it, once per module
// (vmlinux's functions are one): a kernel that refuses BPF trampolines
// fails it with EPERM though other BPF programs load (this machine's),
// one whose architecture has none with ENOTSUPP. A failure particular to
// p's function (a function the kernel will not trace) is not kept.
func (f fentry) check(p *attach.Point) error {
	return fentryVerdict.get(p.Module, func() (bool, error) {
		step, err := f.try(p)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EPERM), errors.Is(err, ErrPermission):
			return true, fmt.Errorf("this kernel refuses BPF trampolines (fentry/fexit): %s a %s program on %s gives EPERM, though other BPF programs load (a lockdown or security policy?)", step, p.Kind, p.Event)
		case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, enotsupp), errors.Is(err, unix.EOPNOTSUPP):
			return true, fmt.Errorf("this kernel has no BPF trampolines (fentry/fexit, Linux 5.5, CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS): %s a %s program: %w", step, p.Kind, err)
		}
		return false, fmt.Errorf("the kernel refuses a %s program on %s: %w", p.Kind, p.Event, err)
	})
}

// try loads an empty program for p; step says what failed. It does not
// attach it: a trampoline's link, once closed, waits for the kernel to
// rebuild the trampoline (an RCU tasks grace period), which costs start-up
// more than the load, and a kernel that refuses trampolines refuses the
// load already (EPERM on the test host); a function that cannot take one
// fails at attach time with the kernel's reason.
func (f fentry) try(p *attach.Point) (step string, err error) {
	prog, err := Load(&ProgramSpec{Name: "probe_" + p.Kind.String(), Attach: p,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err != nil {
		return "loading", err
	}
	return "", prog.Close()
}
