package bpfgen

import (
	"sync"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// Context functions that read the current task_struct: the address comes
// from bpf_get_current_task (a plain number in every program type), the
// member chain is resolved in the kernel's BTF once per process, and every
// hop is a bpf_probe_read_kernel (readPath), as for a $var chain.
//
//	ppid()  current->real_parent->tgid   (stap: the parent's tgid)
//	euid()  current->cred->euid.val      (stap: current_euid())

// taskPaths maps a function to its chain from task_struct.
var taskPaths = map[string]func() (*kernel.Path, error){
	"ppid": taskPath("real_parent", "tgid"),
	"euid": taskPath("cred", "euid", "val"),
}

// taskPath resolves the members from task_struct on first use.
func taskPath(members ...string) func() (*kernel.Path, error) {
	return sync.OnceValues(func() (*kernel.Path, error) {
		b, err := kernel.Kernel()
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

// taskField compiles ppid() or euid() into R0.
func (g *gen) taskField(c *syntax.Call) {
	path, err := taskPaths[c.Name]()
	if err != nil {
		g.fail(c, "%s() in a kernel probe needs task_struct from the kernel's BTF: %v", c.Name, err)
		return
	}
	g.emit(asm.FnGetCurrentTask.Call())
	g.readPath(path, false, c.Pos)
}
