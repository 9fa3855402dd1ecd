// Package target describes the kernel bpftap compiles for: its release, its
// architecture, its BTF and its tick rate, and which of the BPF features
// bpftap relies on it offers (features.go lists them all, each with the
// upstream Linux version that brought it, how it is detected and what
// bpftap does without it).
//
// A Kernel is a value injected into the code generator and the loader, as
// go/types' Config is into the type checker: nothing below the driver asks
// the running kernel a question itself. Running returns the machine's
// kernel, whose features are detected on first use (a trial load of a few
// instructions, a cilium/ebpf feature test, a kfunc looked up in its BTF),
// once per process. A Kernel may be told to lack features it has (AsOf,
// Without), so that every fallback of the generator runs on a new kernel
// too: the environment variables BPFTAP_KERNEL_AS_OF=5.10 and
// BPFTAP_KERNEL_WITHOUT=atomic_fetch,task_btf do that for a whole run, and
// tests build such kernels directly.
//
// A construct the kernel cannot serve fails with a *MissingError, which
// wraps ErrMissing and names the feature and the Linux version that has it.
package target

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/ksym"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Version is an upstream Linux version, major and minor.
type Version struct{ Major, Minor int }

// ParseVersion reads the version at the start of s: "5.10",
// "5.10.0-32-amd64" (a kernel release) or "6.1".
func ParseVersion(s string) (Version, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if len(fields) < 2 || !strings.HasPrefix(s, fields[0]+".") {
		return Version{}, fmt.Errorf("%q is no kernel version (MAJOR.MINOR)", s)
	}
	major, err1 := strconv.Atoi(fields[0])
	minor, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil {
		return Version{}, fmt.Errorf("%q is no kernel version (MAJOR.MINOR)", s)
	}
	return Version{major, minor}, nil
}

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Before tells whether v is older than w.
func (v Version) Before(w Version) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

// Kernel is the kernel bpftap compiles for.
type Kernel struct {
	// Release is the kernel's version (uname's release); features are
	// detected, not inferred from it (distributions backport), but tests
	// read it to tell a missing feature from a broken one.
	Release Version
	// Arch is the architecture's register table (nil where bpftap has
	// none).
	Arch *arch.Regs
	// machine detects the features not masked: the running kernel's
	// detector, shared by every Kernel derived from it (nil: every
	// feature is there).
	machine *detector
	// masked are the features this Kernel is told it lacks, masked
	// describes why ("BPFTAP_KERNEL_AS_OF=5.10").
	masked map[*Feature]string
	btf    func() (*kernel.BTF, error)
	hz     func() int
	// symbol is the address of a kernel function by name and module.
	symbol func(name, module string) (uint64, bool)
	// config is the value of a kernel configuration option.
	config func(option string) (string, bool)
}

// ThreadSize is the size of a task's kernel stack (arch.Regs.ThreadSize,
// doubled by KASAN), 0 where unknown.
func (k *Kernel) ThreadSize() int {
	if k.Arch == nil {
		return 0
	}
	if v, _ := k.configOption("CONFIG_KASAN"); v == "y" {
		return 2 * k.Arch.ThreadSize
	}
	return k.Arch.ThreadSize
}

// configOption is the value of a kernel configuration option, false when
// the configuration cannot be read.
func (k *Kernel) configOption(option string) (string, bool) {
	if k.config == nil {
		return "", false
	}
	return k.config(option)
}

// FunctionAddress is the address of the kernel function name of module
// ("" for the kernel's own), false when it is unknown.
func (k *Kernel) FunctionAddress(name, module string) (uint64, bool) {
	if k.symbol == nil {
		return 0, false
	}
	return k.symbol(name, module)
}

// Has tells whether the kernel offers f.
func (k *Kernel) Has(f *Feature) bool { return k.Check(f) == nil }

// Check returns nil when the kernel offers f, else a *MissingError. A
// release of f's version or later has it (with f's option set, where the
// configuration can be read): only older ones, which may have it by a
// backport (RHEL), and those of an unknown configuration are probed.
// Probes cost: cilium/ebpf's for tracing programs decodes the kernel's
// whole BTF (40 ms).
func (k *Kernel) Check(f *Feature) error {
	if why, ok := k.masked[f]; ok {
		return &MissingError{Feature: f, Since: k.Since(f), Masked: why}
	}
	if k.machine == nil || k.upstreamHas(f) {
		return nil
	}
	return k.Detect(f)
}

// upstreamHas tells whether f is in every kernel of k's release and
// configuration.
func (k *Kernel) upstreamHas(f *Feature) bool {
	if f.RefusedBy != "" || k.Release.Before(k.Since(f)) {
		return false
	}
	v, ok := k.FeatureConfig(f)
	return ok && v == "y"
}

// Since is the first upstream release that has f on k's architecture.
func (k *Kernel) Since(f *Feature) Version { return f.SinceOn(k.Arch) }

// FeatureConfig is the value k's configuration gives the option f needs
// ("y" when f needs none), and whether the configuration could be read.
func (k *Kernel) FeatureConfig(f *Feature) (value string, known bool) {
	if f.Config == "" {
		return "y", true
	}
	return k.configOption(f.Config)
}

// Detect runs f's probe on the machine (once per process), whatever k's
// release, and returns a *MissingError where it fails. Check is what
// decides; tests call Detect to check the probes themselves.
func (k *Kernel) Detect(f *Feature) error {
	if k.machine == nil {
		return nil
	}
	if err := k.machine.detect(f); err != nil {
		return &MissingError{Feature: f, Since: k.Since(f), Detail: err}
	}
	return nil
}

// BTF is the kernel's BTF (kernel.ErrNoBTF where it publishes none).
func (k *Kernel) BTF() (*kernel.BTF, error) {
	if k.btf == nil {
		return nil, kernel.ErrNoBTF
	}
	return k.btf()
}

// HZ is the kernel's tick rate, CONFIG_HZ.
func (k *Kernel) HZ() int {
	if k.hz == nil {
		return 250
	}
	return k.hz()
}

// Without returns a copy of k that lacks fs, why saying who decided so.
func (k *Kernel) Without(why string, fs ...*Feature) *Kernel {
	c := *k
	c.masked = make(map[*Feature]string, len(k.masked)+len(fs))
	for f, w := range k.masked {
		c.masked[f] = w
	}
	for _, f := range fs {
		c.masked[f] = why
	}
	return &c
}

// AsOf returns a copy of k that lacks every feature newer than v, as
// Linux v would: the fallbacks bpftap uses there run here too.
func (k *Kernel) AsOf(v Version) *Kernel {
	var newer []*Feature
	for _, f := range Features {
		if v.Before(k.Since(f)) {
			newer = append(newer, f)
		}
	}
	return k.Without("as of Linux "+v.String(), newer...)
}

// Masked lists the features k was told it lacks, by name.
func (k *Kernel) Masked() []string {
	var names []string
	for _, f := range Features {
		if _, ok := k.masked[f]; ok {
			names = append(names, f.Name)
		}
	}
	return names
}

// New returns a kernel of release v on the architecture regs whose BTF and
// tick rate are given, offering every feature (tests mask some with
// Without and AsOf).
func New(v Version, regs *arch.Regs, btf func() (*kernel.BTF, error), hz int) *Kernel {
	return &Kernel{Release: v, Arch: regs, btf: btf, hz: func() int { return hz }}
}

// Running returns the kernel bpftap runs on, its features detected on
// first use, masked as the environment says: BPFTAP_KERNEL_AS_OF=VERSION
// (AsOf) and BPFTAP_KERNEL_WITHOUT=NAME,... (Without). An environment that
// names no version or an unknown feature is an error.
func Running() (*Kernel, error) {
	k := runningKernel()
	if v := os.Getenv("BPFTAP_KERNEL_AS_OF"); v != "" {
		version, err := ParseVersion(v)
		if err != nil {
			return nil, fmt.Errorf("BPFTAP_KERNEL_AS_OF: %w", err)
		}
		k = k.AsOf(version)
	}
	if names := os.Getenv("BPFTAP_KERNEL_WITHOUT"); names != "" {
		var fs []*Feature
		for _, name := range strings.Split(names, ",") {
			f := ByName(strings.TrimSpace(name))
			if f == nil {
				return nil, fmt.Errorf("BPFTAP_KERNEL_WITHOUT: no kernel feature %q (bpftap's are: %s)", name, featureNames())
			}
			fs = append(fs, f)
		}
		k = k.Without("BPFTAP_KERNEL_WITHOUT", fs...)
	}
	return k, nil
}

// runningKernel is the machine's kernel, unmasked.
var runningKernel = sync.OnceValue(func() *Kernel {
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	v, _ := ParseVersion(strings.TrimSpace(string(release)))
	return &Kernel{Release: v, Arch: arch.Host(), machine: &detector{}, btf: kernel.Kernel, hz: kernel.HZ,
		symbol: ksym.AddressIn, config: kernel.Config}
})

// ErrMissing is wrapped by every error that says the kernel lacks a
// feature bpftap needs for what the script asks.
var ErrMissing = errors.New("kernel feature missing")

// MissingError says that the kernel lacks Feature: detection said so
// (Detail), or the kernel was told so (Masked). Use, when set, is what
// needs the feature ("foreach in a kernel probe").
type MissingError struct {
	Feature *Feature
	// Since is the first release that has Feature on the kernel's
	// architecture (Feature.SinceOn).
	Since  Version
	Masked string
	Detail error
	Use    string
	// Note says more, after the sentence ("kprobe perf events:
	// CONFIG_KPROBE_EVENTS is off").
	Note string
}

// Missing is the error that says the running machine's kernel lacks f
// (bpfrt's trials find out), note saying more where it is not "".
func Missing(f *Feature, note string) error {
	return &MissingError{Feature: f, Since: f.SinceOn(arch.Host()), Note: note}
}

func (e *MissingError) Error() string {
	has := "Linux " + e.Since.String()
	if e.Feature.Config != "" {
		has += " with " + e.Feature.Config
	}
	// which says what the kernel does of the feature: lacks it, or (a
	// policy's feature) refuses or lacks it.
	which := fmt.Sprintf("this kernel lacks (%s has it)", has)
	if e.Feature.RefusedBy != "" {
		which = fmt.Sprintf("this kernel's %s refuses, or the kernel lacks (%s has it)", e.Feature.RefusedBy, has)
	}
	msg := fmt.Sprintf("this kernel lacks %s (%s has it)", e.Feature.What, has)
	switch {
	case e.Use != "":
		msg = fmt.Sprintf("%s needs %s, which %s", e.Use, e.Feature.What, which)
	case e.Feature.RefusedBy != "":
		msg = fmt.Sprintf("%s: %s it", e.Feature.What, which)
	}
	if e.Masked != "" {
		msg += " [" + e.Masked + "]"
	}
	if e.Note != "" {
		msg += ": " + e.Note
	}
	return msg
}

// For returns err, a *MissingError, as needed for use; any other error as
// it is.
func For(err error, use string) error {
	var m *MissingError
	if !errors.As(err, &m) {
		return err
	}
	c := *m
	c.Use = use
	return &c
}

func (e *MissingError) Unwrap() error { return ErrMissing }

// Lacks returns the feature err says the kernel lacks, or nil.
func Lacks(err error) *Feature {
	var m *MissingError
	if errors.As(err, &m) {
		return m.Feature
	}
	return nil
}

// RaiseMemlock lifts RLIMIT_MEMLOCK where the kernel charges BPF memory to
// it (before Linux 5.11: its default of 64 KiB holds no ring buffer), once
// per process; where BPF memory is charged to the memory cgroup it does
// nothing (chargesMemcg decides). Every maker of BPF objects calls it
// first: the loader, which reports its failure once the process is known
// to be privileged, and the trial loads of detection and of attach kinds,
// which go on without (an unprivileged process cannot raise the limit,
// and its loads fail for the want of privileges anyway). A process that
// makes none (bpftap --version, a script without kernel probes) never
// pays for the test, as it did when cilium/ebpf's rlimit package made it
// at every start.
var RaiseMemlock = sync.OnceValue(func() error {
	var limit unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, nil, &limit); err != nil {
		return fmt.Errorf("reading RLIMIT_MEMLOCK: %w", err)
	}
	if limit.Cur == unix.RLIM_INFINITY || chargesMemcg(limit) {
		return nil
	}
	unlimited := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &unlimited, nil); err != nil {
		return fmt.Errorf("raising RLIMIT_MEMLOCK, which this kernel charges BPF memory to: %w", err)
	}
	return nil
})

// chargesMemcg tells whether the kernel charges BPF memory to the memory
// cgroup (Linux 5.11, target.MemcgAccounting) rather than to
// RLIMIT_MEMLOCK: whether a map can be created under a limit of zero.
// The limit is lowered for the test and then put back as it was (limit);
// no other BPF object is made meanwhile, every maker waiting for
// RaiseMemlock.
func chargesMemcg(limit unix.Rlimit) bool {
	zero := unix.Rlimit{Cur: 0, Max: limit.Max}
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &zero, nil); err != nil {
		return false
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &limit, nil)
	if err != nil {
		return false
	}
	m.Close()
	return true
}
