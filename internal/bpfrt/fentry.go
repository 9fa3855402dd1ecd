package bpfrt

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
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
	target.TracingScalarPointers.SetProbe(readsScalarPointer)
}

// readsScalarPointer loads an fentry program on vfs_read that reads its
// fourth argument, a loff_t *: verifiers before Linux 5.17 let a tracing
// program read an argument that points to a struct, never one that points
// to a scalar ("invalid bpf_context access"). Only the verifier's refusal
// says no.
func readsScalarPointer() error {
	b, err := kernel.Kernel()
	if err != nil {
		return nil
	}
	proto, err := b.Prototype("vfs_read")
	if err != nil || len(proto.Params) != 4 {
		return nil
	}
	prog, err := Load(&ProgramSpec{Name: "probe_fentry_ptr",
		Attach:       &attach.Point{Kind: attach.Fentry, Event: "vfs_read", BTFID: proto.Func},
		Instructions: asm.Instructions{asm.LoadMem(asm.R0, asm.R1, 24, asm.DWord), asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	var rejected *VerifierError
	if errors.As(err, &rejected) {
		return rejected
	}
	if err == nil {
		prog.Close()
	}
	return nil
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
// fails the load with EPERM though other BPF programs load (this
// machine's); one built without them (arm64 without ftrace direct calls:
// Debian's 5.10 and 6.1) loads the program and fails the attach with
// ENOTSUPP. A failure particular to p's function (a function the kernel
// will not trace) is not kept.
func (f fentry) check(p *attach.Point) error {
	return fentryVerdict.get(p.Module, func() (bool, error) {
		step, err := f.try(p)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EPERM), errors.Is(err, ErrPermission):
			return true, fmt.Errorf("this kernel refuses BPF trampolines (fentry/fexit): %s a %s program on %s gives EPERM, though other BPF programs load (a lockdown or security policy?)", step, p.Kind, p.Event)
		case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, enotsupp), errors.Is(err, unix.EOPNOTSUPP):
			return true, target.Missing(target.Fentry, fmt.Sprintf("built without CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS? %s a %s program: %v", step, p.Kind, err))
		}
		return false, fmt.Errorf("the kernel refuses a %s program on %s: %w", p.Kind, p.Event, err)
	})
}

// try loads an empty program for p and attaches it; step says what
// failed. The link and the program are closed in the background: closing
// a trampoline's link waits for the kernel to rebuild the trampoline (an
// RCU tasks grace period), which start-up need not wait for.
func (f fentry) try(p *attach.Point) (step string, err error) {
	prog, err := Load(&ProgramSpec{Name: "probe_" + p.Kind.String(), Attach: p,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err != nil {
		return "loading", err
	}
	l, err := f.attach(prog.Program, p)
	if err != nil {
		prog.Close()
		return "attaching", err
	}
	go func() {
		l.Close()
		prog.Close()
	}()
	return "", nil
}
