package bpfrt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// lsm (Linux 5.7): a BPF LSM program, BPF_PROG_TYPE_LSM with the expected
// attach type BPF_LSM_MAC, checked against the BTF prototype of the
// kernel's bpf_lsm_HOOK (BTFID), a no-op function the BPF LSM registers
// for every security hook and calls a BPF trampoline from. The context
// is u64 args[], the hook's arguments typed by BTF, as fentry's; the
// program's return value is the hook's verdict (0 allows, -errno
// denies). The link is a tracing link (BPF_LINK_CREATE with BPF_LSM_MAC,
// or BPF_RAW_TRACEPOINT_OPEN before 5.8; cilium/ebpf's AttachLSM).
//
// A kernel may lack it three ways, which check tells apart: built without
// CONFIG_BPF_LSM (its BTF has no bpf_lsm_ functions), built with it but
// booted without the BPF LSM among the active ones (securityfs's lsm list,
// the kernel command line's lsm=: programs load and attach there, and are
// never called), or refusing the load or the attach (EPERM, as this
// project's development host does).
type lsm struct{}

func init() { register(attach.LSM, lsm{}) }

func (lsm) prepare(p *attach.Point, attr *progLoadAttr) error {
	if p.BTFID == 0 {
		return fmt.Errorf("an lsm program needs the BTF id of bpf_lsm_%s", p.Event)
	}
	attr.progType = unix.BPF_PROG_TYPE_LSM
	attr.expectedAttachType = uint32(ebpf.AttachLSMMac)
	attr.attachBTFID = uint32(p.BTFID)
	return nil
}

func (lsm) attach(prog *ebpf.Program, _ *attach.Point) (io.Closer, error) {
	return link.AttachLSM(link.LSMOptions{Program: prog})
}

// lsmVerdict keeps check's verdict on the kernel.
var lsmVerdict verdicts

// check tells whether the kernel runs BPF LSM programs: compiled in,
// active, and a program on p's hook loads and attaches. The verdict is
// the kernel's, kept for every hook, unless the failure is p's own (a
// hook the kernel will not let a program attach to).
func (l lsm) check(p *attach.Point) error {
	return lsmVerdict.get("", func() (bool, error) {
		if err := lsmBuiltIn(p); err != nil {
			return true, err
		}
		if err := lsmActive(); err != nil {
			return true, err
		}
		step, err := l.try(p)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EPERM), errors.Is(err, ErrPermission):
			return true, fmt.Errorf("this kernel refuses BPF LSM programs: %s an lsm program on %s gives EPERM, though the BPF LSM is active and other BPF programs load (a lockdown or security policy?)", step, p.Event)
		case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, enotsupp), errors.Is(err, unix.EOPNOTSUPP):
			return true, target.Missing(target.LSM, fmt.Sprintf("no BPF trampolines for its programs: %s an lsm program: %v", step, err))
		}
		return false, fmt.Errorf("the kernel refuses an lsm program on security hook %s: %w", p.Event, err)
	})
}

// try loads an empty program for p and attaches it; step says which of
// the two failed.
func (lsm) try(p *attach.Point) (step string, err error) {
	prog, err := Load(&ProgramSpec{Name: "probe_lsm", Attach: p,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err != nil {
		return "loading", err
	}
	defer prog.Close()
	l, err := lsm{}.attach(prog.Program, p)
	if err != nil {
		return "attaching", err
	}
	return "", l.Close()
}

// lsmBuiltIn says plainly when the kernel was built without the BPF LSM:
// the point has no bpf_lsm_ function, or the configuration says so.
func lsmBuiltIn(p *attach.Point) error {
	v, ok := kernel.Config("CONFIG_BPF_LSM")
	if ok && v != "y" || p.BTFID == 0 {
		return target.Missing(target.LSM, "it was built without CONFIG_BPF_LSM, so it has no bpf_lsm_ hooks for programs to attach to")
	}
	return nil
}

// lsmActive says plainly when the BPF LSM is built in but not among the
// LSMs the kernel booted with: its programs would load, attach, and
// never run.
func lsmActive() error {
	active, where, err := ActiveLSMs()
	if err != nil {
		return nil // nothing can be said: let the trial load decide
	}
	if !slices.Contains(active, "bpf") {
		return fmt.Errorf("the BPF LSM is built into this kernel but not active: %s lists %q without bpf, so lsm programs would never run (boot with lsm=%s,bpf on the kernel command line, or add bpf to CONFIG_LSM)",
			where, strings.Join(active, ","), strings.Join(active, ","))
	}
	return nil
}

// securityLSM is securityfs's list of the active LSMs.
const securityLSM = "/sys/kernel/security/lsm"

// ActiveLSMs returns the LSMs the running kernel booted with, in order,
// and where that was read: securityfs's lsm file (from a private mount
// of securityfs when none is mounted), else the kernel command line's
// lsm=, else the configuration's CONFIG_LSM. It is read once.
func ActiveLSMs() (active []string, where string, err error) {
	activeOnce.Do(func() { activeLSMs.active, activeLSMs.where, activeLSMs.err = readActiveLSMs() })
	return activeLSMs.active, activeLSMs.where, activeLSMs.err
}

var (
	activeOnce sync.Once
	activeLSMs struct {
		active []string
		where  string
		err    error
	}
)

func readActiveLSMs() ([]string, string, error) {
	data, err := os.ReadFile(securityLSM)
	if err != nil {
		data, err = readSecurityfsPrivately()
	}
	if err == nil {
		return strings.Split(strings.TrimSpace(string(data)), ","), securityLSM, nil
	}
	if cmdline, cerr := os.ReadFile("/proc/cmdline"); cerr == nil {
		for _, f := range strings.Fields(string(cmdline)) {
			if v, ok := strings.CutPrefix(f, "lsm="); ok {
				return strings.Split(v, ","), "the kernel command line's lsm=", nil
			}
		}
	}
	if v, ok := kernel.Config("CONFIG_LSM"); ok && v != "" {
		return strings.Split(strings.Trim(v, `"`), ","), "the kernel's CONFIG_LSM", nil
	}
	return nil, "", err
}

// readSecurityfsPrivately reads securityfs's lsm file from a mount of
// securityfs in a mount namespace of a thread of its own, which ends
// with the read: nothing is mounted where anything else can see it.
func readSecurityfsPrivately() ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	var read func()
	read = func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() { // never the main thread's namespace
			go read()
			runtime.UnlockOSThread()
			return
		}
		// The thread stays locked: Go ends it with the goroutine, and its
		// namespace with it.
		err := unix.Unshare(unix.CLONE_NEWNS)
		if err == nil {
			err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		}
		if err == nil {
			err = unix.Mount("none", "/sys/kernel/security", "securityfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
		}
		if err != nil {
			done <- result{nil, fmt.Errorf("securityfs is not mounted, and mounting it failed: %w", err)}
			return
		}
		data, err := os.ReadFile(securityLSM)
		done <- result{data, err}
	}
	go read()
	r := <-done
	return r.data, r.err
}
