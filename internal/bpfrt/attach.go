package bpfrt

import (
	"fmt"
	"io"
	"sync"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
)

// Attaching. Each kind of attach point has a file of its own, as in
// cilium/ebpf's link package (tracepoint_btf.go, tracepoint_raw.go,
// tracepoint.go, uprobe.go, uprobe_multi.go, perf.go, kprobe.go,
// kprobe_multi.go, fentry.go):
// it sets the program type and attach fields a load needs, attaches a loaded
// program, and says plainly when the running kernel lacks the kind.

// kind is what bpfrt knows of one kind of attach point.
type kind interface {
	// prepare sets the program type and attach fields of a load for p.
	prepare(p *attach.Point, attr *progLoadAttr) error
	// attach attaches a loaded program to p; closing the result detaches it.
	attach(prog *ebpf.Program, p *attach.Point) (io.Closer, error)
	// check tells whether the running kernel offers the kind (nil), or why
	// not; p is a sample point to try it on.
	check(p *attach.Point) error
}

// kinds maps every kind bpfrt implements to its implementation; the file
// of each kind registers it.
var kinds = map[attach.Kind]kind{}

func register(k attach.Kind, impl kind) { kinds[k] = impl }

// kindOf returns what bpfrt knows of p's kind.
func kindOf(p *attach.Point) (kind, error) {
	if p == nil {
		return nil, fmt.Errorf("no attach point")
	}
	k, ok := kinds[p.Kind]
	if !ok {
		return nil, fmt.Errorf("bpftap cannot attach %s programs yet", p.Kind)
	}
	return k, nil
}

// CanAttach tells whether the running kernel can load and attach a program
// for p (nil), or says plainly why not. The kernel families of package
// probes ask it to choose the cheapest kind the kernel offers.
func CanAttach(p *attach.Point) error {
	k, err := kindOf(p)
	if err != nil {
		return err
	}
	return k.check(p)
}

// CanAttachOn is CanAttach for kernel k, which may have been told to lack
// the feature p's kind is (target.Kernel.Without): then it says so, and the
// kernel families choose another kind as they would where the kernel
// really lacks it.
func CanAttachOn(k *target.Kernel, p *attach.Point) error {
	if f := kindFeatures[p.Kind]; f != nil {
		if err := k.Check(f); err != nil {
			return err
		}
	}
	return CanAttach(p)
}

// kindFeatures are the kernel features the kinds of attach point are.
var kindFeatures = map[attach.Kind]*target.Feature{
	attach.TPBTF: target.TracingPrograms, attach.Kprobe: target.Kprobes, attach.Kretprobe: target.Kprobes,
	attach.KprobeMulti: target.KprobeMulti, attach.KretprobeMulti: target.KprobeMulti,
	attach.KprobeSession: target.KprobeSession, attach.Fentry: target.Fentry, attach.Fexit: target.Fentry,
	attach.UprobeMulti: target.UprobeMulti, attach.UretprobeMulti: target.UprobeMulti, attach.LSM: target.LSM,
}

// verdicts keeps what trial loads found out about the running kernel, by
// a key (a module's name, or ""), for the process's life; a trial that
// failed for a reason of its sample (a function that does not exist), not
// of the kernel, is not kept.
type verdicts struct {
	mu sync.Mutex
	m  map[string]error
}

// get returns the verdict kept under key, or runs try for one, keeping it
// when try says so.
func (v *verdicts) get(key string, try func() (keep bool, err error)) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err, ok := v.m[key]; ok {
		return err
	}
	keep, err := try()
	if keep {
		if v.m == nil {
			v.m = map[string]error{}
		}
		v.m[key] = err
	}
	return err
}
