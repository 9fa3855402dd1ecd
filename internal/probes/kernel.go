package probes

import (
	"fmt"
	"strings"

	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/ksym"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
)

// Kernel and user-space instrumentation families that run as BPF programs:
// kernel.trace (tracepoint.go), syscall.* (syscall.go), the process
// lifecycle (lifecycle.go), kernel.function and kprobe.function
// (kfunc.go, with the DWARF-only forms refused), process.function
// (uprobe.go; its parameters by name from the program's DWARF:
// userdebug.go), process.statement, .label and .inline (ustatement.go),
// process.mark (usdt.go), the perf events (perf.go) and the
// security hooks, lsm.HOOK and kernel.lsm("HOOK") (lsm.go), the netfilter
// hooks, netfilter.hook("HOOK").pf("FAMILY") (netfilter.go). A
// family declared with Unsupported resolves (so that typos get "similar"
// suggestions) and the elaborator refuses it. syscall_any and
// syscall_any.return are probe aliases of the tapset (syscall_any.stp) on
// kernel.trace("raw_syscalls:sys_enter") and sys_exit, as in stap.

func kernelFamilies(k KernelInfo, cfg Config) []*Family {
	files := newObjectCache()
	return []*Family{
		traceFamily(k, cfg.ClassicTracepoints),
		syscallFamily(k, cfg.Listing),
		compatSyscallFamily(k),
		kernelFunctionFamily(k),
		kernelStatementFamily(k, cfg),
		kernelInlineFamily(k),
		kernelCalleeFamily(k),
		processFunctionFamily(k, cfg, files),
		processCalleeFamily(k, cfg, files),
		processStatementFamily(k, cfg, files),
		processMarkFamily(k, cfg, files),
		lifecycleFamily(k, cfg),
		perfFamily(k, cfg),
		perfCounterFamily(),
		hwBreakpointFamily(k),
		lsmFamily(k, cfg.Listing),
		netfilterFamily(k, cfg),
	}
}

// KernelInfo is what the kernel families learn about the kernel: its
// tracepoints, its types and which kinds of program it attaches. Each is
// read on first use only, so a script without kernel probes pays nothing.
// Tests substitute a fake.
type KernelInfo interface {
	Tracepoints() ([]*kernel.Tracepoint, error)
	// MatchTracepoints returns the tracepoints kernel.trace(spec) names:
	// kernel.MatchTracepoints over Tracepoints(), which the running kernel
	// does without listing them all when spec names one event
	// (kernel.FindTracepoints).
	MatchTracepoints(spec string) ([]*kernel.Tracepoint, error)
	// TracefsError says why tracefs could not be read, the tracepoints'
	// systems then unknown (kernel.TracefsError), or is nil.
	TracefsError() error
	// Functions lists the kernel functions probes may attach to
	// (kernel.Functions).
	Functions() ([]*kernel.Function, error)
	// Exported names the functions exported to modules (kernel.Exported).
	Exported() (map[string]bool, error)
	// EventFields describes the record of a trace event (kernel.EventFields).
	EventFields(system, event string) ([]kernel.Field, error)
	BTF() (*kernel.BTF, error)
	// ModuleBTF is the BTF of a loaded module (kernel.Module).
	ModuleBTF(module string) (*kernel.BTF, error)
	// Attachable tells whether the kernel can load and attach a program
	// for a (nil), or says plainly why not.
	Attachable(a *attach.Point) error
	// FindsTasks tells whether a program at a may find a task by its pid
	// (pid2task: the bpf_task_from_pid kfunc, which the kernel lets only
	// some program types call), or says plainly why not.
	FindsTasks(a *attach.Point) error
	// Has tells whether the kernel offers feature f (target.Kernel.Has).
	Has(f *target.Feature) bool
	// Debuginfo is the DWARF of the kernel (module "") or of its loaded
	// module, where the kernel's debug package is installed
	// (kernel.Debuginfo, kernel.ModuleDebuginfo).
	Debuginfo(module string) (*debuginfo.File, error)
	// KprobeAt is where a kprobe reaches the running kernel's address
	// addr (/proc/kallsyms's): from _stext in the kernel's own text (a
	// function's name may be several functions'), from the symbol that
	// holds it in a module's, event and offset; fn names the function
	// that holds it. Or why no kprobe reaches it by name.
	KprobeAt(addr uint64) (event string, offset uint64, fn string, err error)
}

// RunningKernel is the KernelInfo of the machine bpftap runs on. Telling
// what the kernel attaches takes loading a program, which is the
// runtime's business: CanAttach is bpfrt.CanAttach. Without it (a nil
// CanAttach) no kind that needs checking is offered. CanFindTasks is
// kernelside.CanFindTasks; without it every program may try, and the
// verifier decides when the program loads.
type RunningKernel struct {
	CanAttach    func(a *attach.Point) error
	CanFindTasks func(a *attach.Point) error
	// Kernel is the target kernel the features are asked of; nil: every
	// feature is there.
	Kernel *target.Kernel
	// Events serves the trace events' fields and the syscalls system's
	// tracepoints, from its cache where it holds them; nil: tracefs
	// serves them all.
	Events *kernel.EventCache
}

func (k RunningKernel) Has(f *target.Feature) bool { return k.Kernel == nil || k.Kernel.Has(f) }

func (RunningKernel) Tracepoints() ([]*kernel.Tracepoint, error) { return kernel.Tracepoints() }
func (k RunningKernel) MatchTracepoints(spec string) ([]*kernel.Tracepoint, error) {
	return k.Events.Tracepoints(spec)
}
func (RunningKernel) TracefsError() error                        { return kernel.TracefsError() }
func (RunningKernel) BTF() (*kernel.BTF, error)                  { return kernel.Kernel() }
func (RunningKernel) Functions() ([]*kernel.Function, error)     { return kernel.Functions() }
func (RunningKernel) Exported() (map[string]bool, error)         { return kernel.Exported() }
func (RunningKernel) ModuleBTF(name string) (*kernel.BTF, error) { return kernel.Module(name) }

func (RunningKernel) Debuginfo(module string) (*debuginfo.File, error) {
	if module == "" {
		return kernel.Debuginfo()
	}
	return kernel.ModuleDebuginfo(module)
}

func (RunningKernel) KprobeAt(addr uint64) (string, uint64, string, error) {
	t := ksym.Kernel()
	sym, offset, ok := t.Lookup(addr)
	if !ok {
		return "", 0, "", fmt.Errorf("no kernel symbol in /proc/kallsyms holds %#x", addr)
	}
	if sym.Module == "kernel" {
		if stext, ok := ksym.Address("_stext"); ok && addr >= stext {
			return "_stext", addr - stext, sym.Name, nil
		}
	}
	n := 0
	for _, s := range t.Symbols() {
		if s.Name == sym.Name {
			n++
		}
	}
	if n > 1 {
		return "", 0, "", fmt.Errorf("%#x is in %s [%s], a name %d functions share, and a kprobe attaches by name", addr, sym.Name, sym.Module, n)
	}
	return sym.Name, offset, sym.Name, nil
}

func (k RunningKernel) EventFields(system, event string) ([]kernel.Field, error) {
	return k.Events.Fields(system, event)
}

func (k RunningKernel) Attachable(a *attach.Point) error {
	if k.CanAttach == nil {
		return fmt.Errorf("bpftap did not check whether the kernel attaches %s programs", a.Kind)
	}
	return k.CanAttach(a)
}

func (k RunningKernel) FindsTasks(a *attach.Point) error {
	if k.CanFindTasks == nil {
		return nil
	}
	return k.CanFindTasks(a)
}

// concretePoint returns a copy of p whose component named name carries the
// string argument arg (given one where it had none).
func concretePoint(p *Point, name, arg string) *Point {
	q := *p
	q.Components = make([]*syntax.Component, len(p.Components))
	for i, c := range p.Components {
		cc := *c
		if c.Name == name {
			at := c.Pos // process.function gets the argument it omitted
			if c.Arg != nil {
				at = c.Arg.Position()
			}
			cc.Arg = &syntax.StringLit{Typed: syntax.Typed{Pos: at}, Value: arg, Raw: arg}
		}
		q.Components[i] = &cc
	}
	return &q
}

// similarNames is stap's " (similar WHAT: ...)" note: up to five of
// names closest to name, without a distance limit; "" when none is near.
func similarNames(what, name string, names []string) string {
	near := closest(name, names, 5, -1)
	if len(near) == 0 {
		return ""
	}
	return fmt.Sprintf(" (similar %s: %s)", what, strings.Join(near, ", "))
}

// kernelError wraps a failure to describe the kernel for the user.
func kernelError(err error) error {
	return &Error{Msg: fmt.Sprintf("cannot read the kernel's tracepoints: %v", err)}
}
