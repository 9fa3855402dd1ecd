package probes

import (
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/syntax"
)

// kernel.trace("SYSTEM:EVENT") and kernel.trace("EVENT"), wildcards allowed
// in both parts: the family expands a pattern into one point per matching
// tracepoint, named as stap's pp() names it, kernel.trace("sched:sched_switch").
// The tracepoint list is read from the kernel when the first kernel.trace
// point is expanded, never before.

func traceFamily(k KernelInfo) *Family {
	return &Family{Name: "kernel.trace", Paths: []string{"kernel.trace(string)"}, Kernel: true,
		Expand: func(p *Point) ([]*Point, error) { return expandTrace(k, p) }}
}

func expandTrace(k KernelInfo, p *Point) ([]*Point, error) {
	spec, _ := p.Arg("trace").(*syntax.StringLit)
	if spec == nil {
		return nil, errorf("kernel.trace needs a string")
	}
	tps, err := k.Tracepoints()
	if err != nil {
		return nil, kernelError(err)
	}
	matched, err := kernel.MatchTracepoints(tps, spec.Value)
	if err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	if len(matched) == 0 {
		_, event, found := strings.Cut(spec.Value, ":")
		if !found {
			event = spec.Value
		}
		return nil, errorf("no match (similar tracepoints: %s)", similarNames(event, eventNames(tps)))
	}
	var out []*Point
	for _, tp := range matched {
		q := concretePoint(p, "trace", tp.String())
		q.Context = &Context{kernel: k, Tracepoint: tp}
		out = append(out, q)
	}
	return out, nil
}

func eventNames(tps []*kernel.Tracepoint) []string {
	seen := map[string]bool{}
	var names []string
	for _, tp := range tps {
		if !seen[tp.Event] {
			seen[tp.Event] = true
			names = append(names, tp.Event)
		}
	}
	return names
}
