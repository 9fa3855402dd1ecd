package bpfgen

import (
	"sync"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
)

// The target kernel. Everything the generated code depends on is read
// from Config.Kernel, never from the machine: which features the kernel
// offers (has), its architecture's registers (regs), and what its BTF
// says of the structures and kfuncs the code reads and calls, looked up
// once per module (kernelFacts).

// has tells whether the target kernel offers f.
func (m *Module) has(f *target.Feature) bool { return m.cfg.Kernel.Has(f) }

// allocatesAtRunTime tells whether the hash maps of arrays allocate an
// element when it is added (BPF_F_NO_PREALLOC) rather than all of them
// when created: a preallocated map of 2,048 per-CPU elements costs 1-3 ms
// of start-up (16 ms seen on a busy host), a map allocating at run time
// about 30 µs, and the kernel then adds an element from a per-CPU cache
// of its BPF memory allocator (Linux 6.1, target.RuntimeAllocMaps), which
// an irq_work refills. Only where every kernel probe runs in a task's own
// context with interrupts on (inTaskContext), where that refill comes at
// once: elsewhere a burst of new keys finds the cache empty (in the
// scheduler, with interrupts off, or in a perf event's interrupt), and a
// probe on the allocator's own path (kmem:kmalloc) is skipped as a
// recursion while the cache refills, where a preallocated map has every
// element ready (measured: Array overflow errors and skipped probes in
// Debian's sig_by_pid.stp and in backtraces keyed at kmem:kmalloc and
// scheduler.cpu_on).
func (m *Module) allocatesAtRunTime() bool {
	if !m.has(target.RuntimeAllocMaps) {
		return false
	}
	for _, p := range m.prog.Probes {
		if p.Kernel && !inTaskContext(p.Attach) {
			return false
		}
	}
	return true
}

// inTaskContext tells whether a program at a runs in the context of the
// task that hit it, with interrupts on: a system call's tracepoint or a
// uprobe.
func inTaskContext(a *attach.Point) bool {
	if a == nil {
		return false
	}
	switch a.Kind {
	case attach.Uprobe, attach.Uretprobe, attach.UprobeMulti, attach.UretprobeMulti:
		return true
	case attach.TPBTF, attach.RawTracepoint, attach.Tracepoint:
		return a.System == "raw_syscalls" || a.System == "syscalls"
	}
	return false
}

// regs is the target architecture's struct pt_regs (nil where bpftap has
// no table).
func (m *Module) regs() *arch.Regs { return m.cfg.Kernel.Arch }

// kernelFacts are what the code reads from the target kernel's BTF.
type kernelFacts struct {
	// taskComm is the offset of comm in task_struct.
	taskComm func() (int, bool)
	// compatStatus is the offset in task_struct of the thread_info word
	// with the compat bits (arch.Compat); false where the architecture
	// has no compat calls.
	compatStatus func() (int, bool)
	// taskKfuncs are the BTF IDs of bpf_task_from_pid and
	// bpf_task_release (pid2task).
	taskKfuncs func() ([]int32, error)
	// iterNum are the BTF IDs of the numeric iterator's kfuncs (=~).
	iterNum func() (iterNumIDs, error)
	// taskPaths are the member chains from task_struct that context
	// functions read, by name (task.go, contexttask.go).
	taskPaths map[string]func() (*kernel.Path, error)
	// userRegs are the offset of the kernel stack's address in
	// task_struct and the size of struct pt_regs, whose copy at the
	// stack's top holds a thread's user registers (where the kernel has
	// no bpf_task_pt_regs).
	userRegs func() (stack, size int, ok bool)
}

// iterNumIDs are the BTF IDs of the kernel's numeric iterator kfuncs.
type iterNumIDs struct{ new, next, destroy int32 }

// taskPathMembers are the chains of taskPaths.
var taskPathMembers = map[string][]string{
	"ppid": {"real_parent", "tgid"},
	"euid": {"cred", "euid", "val"},
	"egid": {"cred", "egid", "val"},
	// the bounds of the arguments in the process's memory (cmdlineStr)
	"mm":        {"mm"},
	"arg_start": {"mm", "arg_start"},
	"arg_end":   {"mm", "arg_end"},
	// a context task's (contexttask.go) and a found task's (pid2task)
	"tgid": {"tgid"}, "pid": {"pid"}, "comm": {"comm"},
	"uid": {"cred", "uid", "val"}, "gid": {"cred", "gid", "val"},
}

func newKernelFacts(k *target.Kernel) *kernelFacts {
	f := &kernelFacts{taskPaths: map[string]func() (*kernel.Path, error){}}
	f.taskComm = sync.OnceValues(func() (int, bool) {
		b, err := k.BTF()
		if err != nil {
			return 0, false
		}
		off, ok := memberOffset(b, "task_struct", "comm")
		return off, ok && off%8 == 0
	})
	f.compatStatus = sync.OnceValues(func() (int, bool) {
		b, err := k.BTF()
		if k.Arch == nil || k.Arch.Compat == nil || err != nil {
			return 0, false
		}
		info, ok := memberOffset(b, "task_struct", "thread_info")
		status, ok2 := memberOffset(b, "thread_info", k.Arch.Compat.StatusMember)
		return info + status, ok && ok2
	})
	f.taskKfuncs = sync.OnceValues(func() ([]int32, error) {
		b, err := k.BTF()
		if err != nil {
			return nil, err
		}
		return b.KfuncIDs("bpf_task_from_pid", "bpf_task_release")
	})
	f.iterNum = sync.OnceValues(func() (iterNumIDs, error) {
		b, err := k.BTF()
		if err != nil {
			return iterNumIDs{}, err
		}
		ids, err := b.KfuncIDs("bpf_iter_num_new", "bpf_iter_num_next", "bpf_iter_num_destroy")
		if err != nil {
			return iterNumIDs{}, err
		}
		return iterNumIDs{ids[0], ids[1], ids[2]}, nil
	})
	f.userRegs = func() (int, int, bool) {
		b, err := k.BTF()
		if err != nil {
			return 0, 0, false
		}
		stack, ok := memberOffset(b, "task_struct", "stack")
		regs, err := b.TypeByName("pt_regs", kernel.KindStruct)
		return stack, int(regs.Size), ok && err == nil
	}
	for name, members := range taskPathMembers {
		f.taskPaths[name] = sync.OnceValues(func() (*kernel.Path, error) {
			b, err := k.BTF()
			if err != nil {
				return nil, err
			}
			steps := make([]kernel.Step, len(members))
			for i, m := range members {
				steps[i] = kernel.Step{Member: m}
			}
			return b.ResolveIn("task_struct", steps)
		})
	}
	return f
}

// memberOffset is the byte offset of member of struct name in b.
func memberOffset(b *kernel.BTF, name, member string) (int, bool) {
	t, err := b.TypeByName(name, kernel.KindStruct)
	if err != nil {
		return 0, false
	}
	for _, m := range t.Members {
		if m.Name == member && m.BitSize == 0 && m.BitOffset%8 == 0 {
			return int(m.BitOffset / 8), true
		}
	}
	return 0, false
}
