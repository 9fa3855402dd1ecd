package probes

import (
	"fmt"
	"sort"
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// syscall.NAME and syscall.NAME.return, for every system call of the running
// kernel: the names are those of tracefs's syscalls:sys_enter_NAME events,
// read when a script first names a syscall point, and each point is that
// event (or sys_exit_NAME), a classic tracepoint whose arguments are the
// call's ($fd, $buf, $count; $ret on return).
//
// This family is the generic layer: the tapset (tapset/syscalls.stp)
// defines syscall.NAME itself as a probe alias, with SystemTap's named
// locals and argstr, for the calls scripts use most, and such an alias
// shadows the name here (see Family.Names). Every other call gets the
// locals every syscall probe has, from a prologue built here:
//
//	name    the call's name (from its number, so that the prologues of
//	        all calls are alike and a program serving many can share code)
//	argstr  its arguments, pointers as %p and integers as %d
//	retval, retstr  on return: $ret, and $ret as return_str(1, ...) gives it

// syscallPrefix is the event name prefix of a call's entry and return.
const (
	syscallEnter = "sys_enter_"
	syscallExit  = "sys_exit_"
)

func syscallFamily(k KernelInfo) *Family {
	return &Family{Name: "syscall", Paths: []string{"syscall.*", "syscall.*.return"}, Kernel: true,
		Names:  func() ([]string, error) { return SyscallNames(k) },
		Expand: func(p *Point) ([]*Point, error) { return expandSyscall(k, p) }}
}

// SyscallNames lists the system calls of the kernel k describes, sorted.
func SyscallNames(k KernelInfo) ([]string, error) {
	tps, err := k.Tracepoints()
	if err != nil {
		return nil, kernelError(err)
	}
	var names []string
	for _, tp := range tps {
		if name, ok := strings.CutPrefix(tp.Event, syscallEnter); ok && tp.System == "syscalls" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		why := "the kernel has no syscalls:sys_enter_* trace events (CONFIG_FTRACE_SYSCALLS)"
		if len(tps) > 0 && tps[0].SystemUnknown {
			why = kernel.TracefsError().Error()
		}
		return nil, fmt.Errorf("cannot list the kernel's system calls: %s", why)
	}
	sort.Strings(names)
	return names, nil
}

// expandSyscall turns syscall.NAME[.return] into its trace event, named as
// pp() names it, with the generic prologue.
func expandSyscall(k KernelInfo, p *Point) ([]*Point, error) {
	name := p.Components[1].Name
	event, ret := syscallEnter+name, len(p.Components) > 2
	if ret {
		event = syscallExit + name
	}
	a := &attach.Point{Kind: attach.Tracepoint, System: "syscalls", Event: event}
	q := *p
	q.Components = traceComponents(p.Components[0], a.Target())
	q.Context = &Context{kernel: k, Attach: a}
	prologue, err := syscallPrologue(q.Context, name, ret)
	if err != nil {
		return nil, err
	}
	q.Prologue = prologue
	return []*Point{&q}, nil
}

// traceComponents are the components of kernel.trace("TARGET"), positioned
// at first.
func traceComponents(first *syntax.Component, target string) []*syntax.Component {
	at := first.Pos
	return []*syntax.Component{{Pos: at, Name: "kernel"},
		{Pos: at, Name: "trace", Arg: &syntax.StringLit{Typed: syntax.Typed{Pos: at}, Value: target, Raw: target}}}
}

// syscallPrologue builds the locals of a call the tapset does not define.
func syscallPrologue(c *Context, name string, ret bool) (*syntax.Block, error) {
	text := "name = syscall_name($__syscall_nr)\n"
	if ret {
		text += "retval = $ret\nretstr = return_str(1, retval)\n"
	} else {
		if err := c.loadFields(); err != nil {
			return nil, &Error{Msg: err.Msg}
		}
		text += "argstr = " + argstrOf(c.Attach.Args) + "\n"
	}
	src := syntax.NewSource("tapset/syscall."+name, "probe begin {\n"+text+"}\n")
	f, err := syntax.Parse(src, &syntax.Config{Tapset: true})
	if err != nil {
		return nil, fmt.Errorf("the prologue of syscall.%s: %v", name, err)
	}
	return f.Decls[0].(*syntax.ProbeDecl).Body, nil
}

// argstrOf is the sprintf that formats a call's arguments (all but the
// record's __syscall_nr): pointers with %p, integers with %d.
func argstrOf(args []attach.Arg) string {
	var convs, vals []string
	for _, a := range args {
		if a.Name == "__syscall_nr" {
			continue
		}
		conv := "%d"
		if a.Pointer {
			conv = "%p"
		}
		convs, vals = append(convs, conv), append(vals, ", $"+a.Name)
	}
	if len(convs) == 0 {
		return `""`
	}
	return fmt.Sprintf("sprintf(%q%s)", strings.Join(convs, ", "), strings.Join(vals, ""))
}
