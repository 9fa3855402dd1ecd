package probes

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/ksym"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Hardware watchpoints: kernel.data(ADDR) and kernel.data("SYMBOL"), with
// .write (the probe fires after the CPU wrote there) or .rw (read or
// written: x86 watches no reads alone), and .length(N), the bytes watched
// from the address (1 unless given; the CPU watches 1, 2, 4 or 8 aligned
// bytes, and stap rounds 3 up to 4 and 5 to 7 up to 8). Each is a perf
// event of type PERF_TYPE_BREAKPOINT opened on every CPU for all tasks,
// period 1, with the probe's program set on it: the kernel runs the
// program from the debug exception with the registers of the access
// (bpf_perf_event_data), so print_backtrace() shows who wrote. A symbol
// is a name of /proc/kallsyms, which lists data symbols only where the
// kernel was built with CONFIG_KALLSYMS_ALL. Pass 2 opens the event once
// (on CPU 0, without a program), so an address the CPU cannot watch is
// refused there with the kernel's reason. Every CPU has as many
// watchpoints as debug registers (x86-64: 4): stap warns of more in pass
// 2 (sema), and the kernel refuses them when they attach.

// HWBreakpoints is how many watchpoints an x86-64 CPU holds (its debug
// registers DR0-DR3).
const HWBreakpoints = 4

// hwBreakpointType is PERF_TYPE_BREAKPOINT; the access types are
// HW_BREAKPOINT_W and HW_BREAKPOINT_R|HW_BREAKPOINT_W.
const (
	hwBreakpointType = 5
	hwBreakpointW    = 2
	hwBreakpointRW   = 3
)

func hwBreakpointFamily(k KernelInfo) *Family {
	var paths []string
	for _, at := range []string{"kernel.data(number)", "kernel.data(string)"} {
		for _, length := range []string{"", ".length(number)"} {
			paths = append(paths, at+length+".write", at+length+".rw")
		}
	}
	return &Family{Name: "kernel.data", Paths: paths, Kernel: true,
		Expand: func(p *Point) ([]*Point, error) {
			bp, err := hwBreakpoint(p)
			if err != nil {
				return nil, err
			}
			pts, err := perfPoint(k, p, bp)
			if err == nil { // pp() names the length, as stap's does; -l the point as written
				pts[0].Components, pts[0].Script = canonicalWatchpoint(p, bp), p.Name()
			}
			return pts, err
		}}
}

// hwBreakpoint is the perf event a kernel.data point names.
func hwBreakpoint(p *Point) (*attach.Perf, error) {
	bp := &attach.Perf{Type: hwBreakpointType, Period: 1, BreakType: hwBreakpointW}
	if p.Components[len(p.Components)-1].Name == "rw" {
		bp.BreakType = hwBreakpointRW
	}
	switch at := p.Arg("data").(type) {
	case *syntax.NumberLit:
		bp.BreakAddr = uint64(at.Value)
	case *syntax.StringLit:
		addr, err := dataSymbol(at.Value)
		if err != nil {
			return nil, err
		}
		bp.BreakAddr = addr
	}
	length, ok := p.Number("length")
	if !ok {
		length = 1
	}
	switch {
	case length < 1 || length > 8:
		return nil, errorf("invalid hardware breakpoint length %d: the CPU watches 1, 2, 4 or 8 bytes", length)
	case length == 3:
		length = 4
	case length > 4:
		length = 8
	}
	bp.BreakLen = uint64(length)
	return bp, nil
}

// canonicalWatchpoint is stap's name of the watchpoint p asks for:
// kernel.data(ADDR).length(N).write, the length always given.
func canonicalWatchpoint(p *Point, bp *attach.Perf) []*syntax.Component {
	at := p.Components[0].Pos
	data := p.Components[1]
	access := p.Components[len(p.Components)-1]
	length := &syntax.Component{Pos: at, Name: "length", Arg: &syntax.NumberLit{Typed: syntax.Typed{Pos: at}, Value: int64(bp.BreakLen)}}
	return []*syntax.Component{p.Components[0], data, length, access}
}

// dataSymbol is the address of the kernel symbol name.
func dataSymbol(name string) (uint64, error) {
	if addr, ok := ksym.Address(name); ok {
		return addr, nil
	}
	msg := fmt.Sprintf("no kernel symbol %s in /proc/kallsyms", name)
	if all, ok := kernel.Config("CONFIG_KALLSYMS_ALL"); ok && all != "y" {
		msg += " (this kernel lists its functions there, not its data: CONFIG_KALLSYMS_ALL is off); watch the address instead: kernel.data(ADDR)"
	}
	return 0, errorf("%s", msg)
}
