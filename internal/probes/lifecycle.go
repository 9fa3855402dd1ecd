package probes

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// The process lifecycle: process.begin, process.end, process.thread.begin,
// process.thread.end, process.syscall and process.syscall.return, each also
// as process("PATH").EVENT and process(PID).EVENT. SystemTap serves them
// with its task finder (utrace); here each is a scheduler or syscall
// tracepoint and a prologue that keeps the events the point means, in the
// context stap runs them in:
//
//	begin         raw_syscalls:sys_exit of a fork/clone returning 0 in a new
//	              process (tid == pid), or of an execve returning 0: the new
//	              process's first return to user space, in its own context
//	thread.begin  the same for a clone returning 0 in a new thread
//	end           sched:sched_process_exit of the process's last thread
//	              (its thread group dead: $group_dead, or signal->live
//	              counted down to 0 where the tracepoint lacks it), and
//	              sched:sched_prepare_exec (the old program, before an exec
//	              replaces it), as stap ends a process that execs
//	thread.end    sched:sched_process_exit of any other thread: a thread
//	              that exits while others live, the main one too (which
//	              an exec from another thread ends), as stap's task
//	              finder tells a thread's death from its process's
//	syscall       raw_syscalls:sys_enter: $syscall, $arg1 ... $arg6
//	syscall.return raw_syscalls:sys_exit: $syscall, $return
//
// The process a point names is matched in the kernel, first thing in the
// prologue: process("PATH") by the identity (device and inode) of the
// executable file PATH names when the script starts, resolved as stap
// resolves it (a name without `/` through $PATH, symbolic links followed),
// against the current process's mm->exe_file; process(PID) by pid. A point
// without either, under -c CMD, means CMD's executable (stap fills the path
// in the same way) and under -c or -x only the target and its descendants.
// Processes that existed before the script started get no begin event
// (stap calls begin once for each of them): no BPF program can run in
// their context.

// lifecycleEvents are the events after process / process(ARG).
var lifecycleEvents = []string{"begin", "end", "thread.begin", "thread.end", "syscall", "syscall.return"}

func lifecycleFamily(k KernelInfo, cfg Config) *Family {
	var paths []string
	for _, ev := range lifecycleEvents {
		paths = append(paths, "process."+ev, "process(string)."+ev, "process(number)."+ev)
	}
	return &Family{Name: "process", Paths: paths, Kernel: true,
		Expand: func(p *Point) ([]*Point, error) { return expandLifecycle(k, cfg, p) }}
}

// lifecycleTrace is one tracepoint serving an event, with the condition
// that keeps the event's occurrences.
type lifecycleTrace struct {
	event string // SYSTEM:EVENT
	cond  string
	// optional: a kernel without the tracepoint serves the event without it
	optional bool
}

// lifecycleTraces gives, by event, the tracepoints that serve it.
func lifecycleTraces(event string) []lifecycleTrace {
	switch event {
	case "begin":
		return []lifecycleTrace{{event: "raw_syscalls:sys_exit",
			cond: "$ret == 0 && (pid() == tid() && __process_fork_nr(__process_nr) || __process_exec_nr(__process_nr))"}}
	case "thread.begin":
		return []lifecycleTrace{{event: "raw_syscalls:sys_exit",
			cond: "$ret == 0 && pid() != tid() && __process_fork_nr(__process_nr)"}}
	case "end":
		return []lifecycleTrace{{event: "sched:sched_process_exit", cond: groupDead},
			{event: "sched:sched_prepare_exec", optional: true}}
	case "thread.end":
		return []lifecycleTrace{{event: "sched:sched_process_exit", cond: "!" + groupDead}}
	case "syscall":
		return []lifecycleTrace{{event: "raw_syscalls:sys_enter"}}
	}
	return []lifecycleTrace{{event: "raw_syscalls:sys_exit"}} // syscall.return
}

// groupDead tells, at sched:sched_process_exit, whether the exiting
// thread is its process's last: the kernel counts the live threads down
// before the tracepoint, which passes the result since Linux 6.16.
const groupDead = "(@defined($group_dead) ? $group_dead : $p->signal->live->counter == 0)"

// expandLifecycle resolves a process lifecycle point to its tracepoints.
func expandLifecycle(k KernelInfo, cfg Config, p *Point) ([]*Point, error) {
	var names []string
	for _, c := range p.Components[1:] {
		names = append(names, c.Name)
	}
	event := strings.Join(names, ".")
	filter, q, err := processFilter(cfg, p)
	if err != nil {
		return nil, err
	}
	var out []*Point
	for _, lt := range lifecycleTraces(event) {
		a, err := tracepointAttach(k, lt.event)
		if err != nil || a == nil {
			if lt.optional && err == nil {
				continue
			}
			return nil, cmpOr(err, errorf("the kernel has no tracepoint %s, which %s needs", lt.event, p.Name()))
		}
		if err := lifecycleArgs(a, event); err != nil {
			return nil, err
		}
		r := *q
		r.Context = &Context{kernel: k, Attach: a}
		r.Prologue, err = lifecyclePrologue(p.Name(), lt, filter)
		if err != nil {
			return nil, err
		}
		out = append(out, &r)
	}
	return out, nil
}

// tracepointAttach is the attach point of tracepoint SYSTEM:EVENT, nil if
// the kernel does not have it (with the error when its tracepoints could
// not be read).
func tracepointAttach(k KernelInfo, spec string) (*attach.Point, error) {
	matched, err := k.MatchTracepoints(spec)
	if err != nil {
		return nil, kernelError(err)
	}
	if len(matched) != 1 {
		return nil, nil
	}
	return attachTracepoint(k, matched[0], false)
}

// lifecycleArgs gives the syscall events their context variables: the
// call's number as $syscall, its arguments as $arg1 ... $arg6 (entry) and
// its value as $return, read from the registers the tracepoint passes
// (tp_btf, where they can be dereferenced).
func lifecycleArgs(a *attach.Point, event string) error {
	if !strings.HasPrefix(event, "syscall") {
		return nil
	}
	regs := arch.Host()
	if a.Kind != attach.TPBTF || regs == nil {
		return errorf("process.%s needs BTF-typed raw tracepoints (tp_btf) on %s", event, syntax.HostArch())
	}
	word := func(name string, i int) attach.Arg {
		return attach.Arg{Name: name, Local: "__process_" + name, Loc: attach.Loc{Offset: 8 * i, Size: 8}}
	}
	if event == "syscall" { // sys_enter(regs, id)
		a.Args = []attach.Arg{word("syscall", 1)}
		for i, off := range regs.SyscallArgs {
			name := fmt.Sprintf("arg%d", i+1)
			a.Args = append(a.Args, attach.Arg{Name: name, Local: "__process_" + name,
				Loc: attach.Loc{Deref: true, Offset: off, Size: 8}})
		}
		return nil
	}
	// sys_exit(regs, ret)
	a.Args = []attach.Arg{{Name: "syscall", Local: "__process_syscall",
		Loc: attach.Loc{Deref: true, Offset: regs.SyscallNr, Size: 8}}, word("return", 1)}
	return nil
}

// lifecyclePrologue is the prologue of one tracepoint serving point name:
// next unless the event's condition and the process filter hold.
func lifecyclePrologue(name string, lt lifecycleTrace, filter string) (*syntax.Block, error) {
	var text string
	if strings.Contains(lt.cond, "__process_nr") {
		text = fmt.Sprintf("__process_nr = $regs->%s\n", syscallNrRegister())
	}
	var conds []string
	for _, c := range []string{lt.cond, filter} {
		if c != "" {
			conds = append(conds, "("+c+")")
		}
	}
	if len(conds) == 0 {
		return nil, nil
	}
	text += fmt.Sprintf("if (!(%s)) next\n", strings.Join(conds, " && "))
	return parsePrologue(name, text)
}

// processFilter returns the condition that keeps the processes point p
// names, and p as pp() names it (a path resolved).
func processFilter(cfg Config, p *Point) (string, *Point, error) {
	switch arg := p.Arg("process").(type) {
	case *syntax.StringLit:
		path := ResolveExecutable(arg.Value)
		return exeFilter(path), concretePoint(p, "process", path), nil
	case *syntax.NumberLit:
		if err := unix.Kill(int(arg.Value), 0); err == unix.ESRCH || arg.Value <= 0 {
			return "", nil, errorf("cannot probe pid %d: No such process", arg.Value)
		}
		return fmt.Sprintf("pid() == %d", arg.Value), p, nil
	}
	var conds []string
	if cfg.TargetExecutable != "" {
		conds = append(conds, exeFilter(cfg.TargetExecutable))
	}
	if cfg.Target {
		conds = append(conds, "__process_in_target()")
	}
	return strings.Join(conds, " && "), p, nil
}

// exeFilter is the condition that the current process runs the file at
// path, by its device and inode; "0" (nothing matches) when there is no
// such file.
func exeFilter(path string) string {
	dev, ino, ok := ExeIdentity(path)
	if !ok {
		return "0"
	}
	return fmt.Sprintf("__process_exe_is(%d, %d)", dev, ino)
}

// ExeIdentity is the device (the kernel's encoding, major << 20 | minor)
// and inode of the file at path, which the tapset's __process_exe_is
// compares with the current process's executable; ok is false when there
// is no such file.
func ExeIdentity(path string) (dev, ino uint64, ok bool) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return 0, 0, false
	}
	return uint64(unix.Major(st.Dev))<<20 | uint64(unix.Minor(st.Dev)), st.Ino, true
}

// ResolveExecutable resolves the path of process("PATH") as stap does: a
// name with a `/` from the working directory, one without through $PATH,
// then symbolic links; a path that does not resolve is kept as written.
func ResolveExecutable(name string) string {
	path := name
	if !strings.Contains(name, "/") {
		found, err := exec.LookPath(name)
		if err != nil {
			return name
		}
		path = found
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return name
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}
