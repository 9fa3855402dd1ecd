package bpfrt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// uprobe_multi (Linux 6.6): one kprobe-type program, loaded for
// BPF_TRACE_UPROBE_MULTI, attached to many functions of one file with one
// link. The kernel registers every offset in one call and unregisters
// them together, where a uprobe per function costs a perf event each, and
// a wait for an RCU grace period each when it is closed (80 s for 1,000
// functions, measured). The link gives the program of each offset the
// cookie at the same index, which bpf_get_attach_cookie returns: here
// the index itself, the point's place in the program's table of points
// (package bpfgen).
type uprobeMulti struct{ ret bool }

func init() {
	register(attach.UprobeMulti, uprobeMulti{})
	register(attach.UretprobeMulti, uprobeMulti{ret: true})
}

func (uprobeMulti) prepare(_ *attach.Point, attr *progLoadAttr) error {
	attr.progType = unix.BPF_PROG_TYPE_KPROBE
	attr.expectedAttachType = uint32(ebpf.AttachTraceUprobeMulti)
	return nil
}

func (u uprobeMulti) attach(prog *ebpf.Program, p *attach.Point) (io.Closer, error) {
	if len(p.Offsets) == 0 {
		return nil, fmt.Errorf("a uprobe_multi link needs the offsets of its points")
	}
	ex, err := link.OpenExecutable(p.Path)
	if err != nil {
		return nil, err
	}
	try, locked := screenLocked(p.Path, p.Offsets)
	links, refused := u.attachAll(ex, prog, p.Offsets, try)
	refused.Points = append(refused.Points, locked...)
	refused.Errs = append(refused.Errs, repeat(enotsupp, len(locked))...)
	if len(links) == 0 {
		return nil, refused.Errs[0]
	}
	if len(refused.Points) > 0 {
		return links, refused
	}
	return links, nil
}

// enotsupp is the kernel's own ENOTSUPP, which uprobes return for an
// instruction they cannot probe.
const enotsupp = unix.Errno(524)

// screenLocked splits the points (indexes in offsets) into those to try
// and those whose first instruction the kernel is known to refuse on
// x86-64: one with a lock prefix (libc's pthread_spin_lock). Each refused
// point would otherwise cost a failed link of many points and a
// bisection (attachAll), about a second for libc.
func screenLocked(path string, offsets []uint64) (try, locked []int) {
	f, err := os.Open(path)
	if err == nil {
		defer f.Close()
	}
	for i, off := range offsets {
		if err == nil && runtime.GOARCH == "amd64" && lockPrefixed(f, off) {
			locked = append(locked, i)
		} else {
			try = append(try, i)
		}
	}
	return try, locked
}

// lockPrefixed tells whether the instruction at off of f carries the lock
// prefix (0xf0) among its legacy prefixes.
func lockPrefixed(f *os.File, off uint64) bool {
	var b [15]byte
	n, _ := f.ReadAt(b[:], int64(off))
	for _, c := range b[:n] {
		switch c {
		case 0xf0:
			return true
		case 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x66, 0x67, 0xf2, 0xf3:
			continue
		}
		return false
	}
	return false
}

// attachAll attaches prog at the offsets of points (indexes in offsets,
// each its own cookie) with one link. The kernel refuses a whole link when
// it cannot probe one of its instructions (a function that starts with a
// lock prefix: libc's pthread_spin_lock); the points are then split in
// halves, each attached alone, until the refused points stand alone and
// are reported, the others attached (a few links more per refused point).
func (u uprobeMulti) attachAll(ex *link.Executable, prog *ebpf.Program, offsets []uint64, points []int) (closers, *RefusedError) {
	if len(points) == 0 {
		return nil, &RefusedError{}
	}
	opts := &link.UprobeMultiOptions{}
	for _, i := range points {
		opts.Addresses = append(opts.Addresses, offsets[i])
		opts.Cookies = append(opts.Cookies, uint64(i))
	}
	open := ex.UprobeMulti
	if u.ret {
		open = ex.UretprobeMulti
	}
	l, err := open(nil, prog, opts)
	switch {
	case err == nil:
		return closers{l}, &RefusedError{}
	case len(points) == 1 || !refusedInstruction(err):
		return nil, &RefusedError{Points: points, Errs: repeat(err, len(points))}
	}
	half := len(points) / 2
	first, r1 := u.attachAll(ex, prog, offsets, points[:half])
	second, r2 := u.attachAll(ex, prog, offsets, points[half:])
	return append(first, second...), &RefusedError{Points: append(r1.Points, r2.Points...), Errs: append(r1.Errs, r2.Errs...)}
}

// refusedInstruction tells whether err is the kernel's refusal to probe
// an instruction: ENOTSUPP (524, the kernel's own code, which uprobes
// return for it), or EOPNOTSUPP or EINVAL.
func refusedInstruction(err error) bool {
	return errors.Is(err, enotsupp) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)
}

func repeat(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// RefusedError lists the points of a set the kernel refused to probe,
// by their index in attach.Point.Offsets, each with the kernel's error;
// the set's other points are attached.
type RefusedError struct {
	Points []int
	Errs   []error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the kernel refused %d of the points: %v", len(e.Points), errors.Join(e.Errs...))
}

// closers closes several links as one.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// check asks the kernel whether it creates uprobe_multi links (cilium/ebpf's
// feature test, run once per process).
func (uprobeMulti) check(*attach.Point) error {
	if err := features.HaveBPFLinkUprobeMulti(); err != nil {
		return target.Missing(target.UprobeMulti, err.Error())
	}
	return nil
}
