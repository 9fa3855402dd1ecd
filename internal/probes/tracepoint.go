package probes

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// kernel.trace("SYSTEM:EVENT") and kernel.trace("EVENT"), wildcards allowed
// in both parts: the family expands a pattern into one point per matching
// tracepoint, named as stap's pp() names it, kernel.trace("sched:sched_switch").
// The tracepoint list is read from the kernel when the first kernel.trace
// point is expanded, never before.
//
// Every tracepoint is reachable three ways, from cheapest (measured on
// getppid: +27 ns, +33 ns, +48 ns per call with an empty program): a
// BTF-typed raw tracepoint (tp_btf), a raw tracepoint, and a classic
// tracepoint through a perf event. The family picks the cheapest the kernel
// offers (attachTracepoint) and describes the arguments for it.

func traceFamily(k KernelInfo, classic bool) *Family {
	return &Family{Name: "kernel.trace", Paths: []string{"kernel.trace(string)"}, Kernel: true,
		Expand: func(p *Point) ([]*Point, error) { return expandTrace(k, p, classic) }}
}

// expandTrace expands a kernel.trace point; classic asks for classic
// tracepoints wherever tracefs has the event (Config.ClassicTracepoints).
func expandTrace(k KernelInfo, p *Point, classic bool) ([]*Point, error) {
	spec, _ := p.Arg("trace").(*syntax.StringLit)
	if spec == nil {
		return nil, errorf("kernel.trace needs a string")
	}
	matched, err := k.MatchTracepoints(spec.Value)
	var pattern *kernel.PatternError
	switch {
	case errors.As(err, &pattern):
		return nil, &Error{Msg: err.Error()}
	case err != nil:
		return nil, kernelError(err)
	}
	if len(matched) == 0 {
		_, event, found := strings.Cut(spec.Value, ":")
		if !found {
			event = spec.Value
		}
		// the suggestions cost milliseconds (distances to every
		// tracepoint's name): computed only if the message is shown, not
		// when an optional point (an alias on an event this kernel lacks)
		// fails and discards it
		return nil, &Error{Msg: "no match", Cause: tracefsNote(k), Absence: "this kernel has no tracepoint " + spec.Value,
			detail: func() string {
				tps, _ := k.Tracepoints()
				return similarNames("tracepoints", event, eventNames(tps))
			}}
	}
	var out []*Point
	for _, tp := range matched {
		a, err := attachTracepoint(k, tp, classic)
		if err != nil {
			return nil, err
		}
		q := concretePoint(p, "trace", tracepointName(tp, spec.Value))
		q.Context = &Context{kernel: k, Attach: a, argsOfCall: returnEvents[tp.String()]}
		out = append(out, q)
	}
	return out, nil
}

// returnEvents are the tracepoints that fire as a call returns, with the
// arguments the call was entered with: the return aliases they serve
// (tcp.recvmsg.return on sock:sock_recv_length) keep stap's @entry($sk),
// whose value is the event's $sk.
var returnEvents = map[string]bool{"sock:sock_send_length": true, "sock:sock_recv_length": true}

// tracepointName is the name of a matched tracepoint in its concrete probe
// point: SYSTEM:EVENT, with the system as the script wrote it when tracefs
// could not tell it.
func tracepointName(tp *kernel.Tracepoint, spec string) string {
	system, _, found := strings.Cut(spec, ":")
	if tp.SystemUnknown && found && !strings.ContainsAny(system, "*?[") {
		return system + ":" + tp.Event
	}
	return tp.String()
}

// tracefsNote says, after "no match", that the kernel's BTF alone was
// searched because tracefs could not be read, and why ("" when tracefs
// was read).
func tracefsNote(k KernelInfo) string {
	err := k.TracefsError()
	if err == nil {
		return ""
	}
	return fmt.Sprintf("only the tracepoints the kernel's BTF describes were searched: %v", err)
}

// attachTracepoint returns the cheapest attach point the kernel offers for
// tp: tp_btf when the kernel has the tracepoint's BTF prototype and loads
// BTF-typed programs, a raw tracepoint otherwise (both read the arguments
// as args[] words), a classic tracepoint for a trace event the kernel has
// no prototype for (syscalls:sys_enter_openat and the like), whose
// arguments are the fields of its record: Context reads them from
// tracefs's format file when the probe first uses one, so that
// kernel.trace("*") does not read two thousand format files.
func attachTracepoint(k KernelInfo, tp *kernel.Tracepoint, classic bool) (*attach.Point, error) {
	a := &attach.Point{Event: tp.Event, System: tp.System, Syscall: syscallSystem(tp.System)}
	switch {
	case tp.Proto != 0 && !(classic && tp.System != "" && !tp.SystemUnknown):
		a.Kind, a.BTFID, a.Args = attach.TPBTF, tp.Proto, attach.Words(tp.Params, tracepointLocal)
		b, _ := k.BTF()
		typeWords(b, a.Args)
		if k.Attachable(a) != nil {
			a.Kind, a.BTFID = attach.RawTracepoint, 0
		}
	case tp.System != "":
		a.Kind = attach.Tracepoint
	default:
		return nil, errorf("tracepoint %s cannot be attached: the kernel describes it neither in BTF nor in tracefs", tp)
	}
	return a, nil
}

// syscallSystem tells whether the events of system run at a system call's
// entry or exit, in the calling thread.
func syscallSystem(system string) bool { return system == "syscalls" || system == "raw_syscalls" }

// tracepointLocal prefixes the -p2 names of a tracepoint's arguments.
const tracepointLocal = "__tracepoint_arg_"

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

// typeWords completes the args[] words of a BTF-typed or raw tracepoint
// from their BTF types. A pointer is marked Pointer: the code generator
// makes its value a plain number in BTF-typed programs (bpfgen's untrust),
// where the verifier would take it as never NULL. A signed integer (or
// enum) narrower than the word is read at its size and sign-extended: the
// kernel stores it zero-extended (an int of -11 arrives as 0xfffffff5).
func typeWords(b *kernel.BTF, args []attach.Arg) {
	if b == nil {
		return
	}
	for i := range args {
		u, err := b.Underlying(args[i].Type)
		if err != nil {
			continue
		}
		switch {
		case u.Kind == kernel.KindPtr:
			args[i].Pointer = true
		case (u.Kind == kernel.KindInt || u.Kind == kernel.KindEnum) && u.Signed && u.Size < 8:
			args[i].Loc.Size, args[i].Loc.Signed = int(u.Size), true
		}
	}
}
