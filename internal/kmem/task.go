package kmem

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// Finding tasks. A user-side probe's pid2task(pid) needs the address of a
// task_struct, which only the kernel knows: the kfunc bpf_task_from_pid
// finds it (in the root pid namespace, as a thread id). The reader's raw
// tracepoint program may not call that kfunc (the kernel lets tracing,
// perf event and syscall programs call it), so the finder is a syscall
// program (BPF_PROG_TYPE_SYSCALL), which must be loaded sleepable and
// which BPF_PROG_TEST_RUN runs on demand with a context it may write and
// hands back: the context is {pid u32, pad, task u64}; the program looks
// the pid up, stores the task's address in the context and gives the
// reference back at once (bpf_task_release):
//
//	task = bpf_task_from_pid(ctx->pid); if task == NULL: return 1
//	ctx->task = task; bpf_task_release(task); return 0
//
// The address is a number from then on: like stap's pid2task, which
// holds no reference either, what it points to is read with the faulting
// reads of Reader, which cannot crash the kernel should the task exit.
// The current task of a user-side probe is bpftap's own (stap runs
// begin probes in its own process): the task of the process's pid, its
// main thread, whose pid field is the process's (pid() == tid()).

// FindTask returns the address of the task_struct of thread tid, 0 when
// there is none; the error says why tasks cannot be found.
func FindTask(tid int64) (uint64, error) {
	prog, err := taskFinder()
	if err != nil {
		return 0, err
	}
	if tid <= 0 || tid > 1<<31-1 { // a pid is a positive int
		return 0, nil
	}
	var in, out [16]byte
	binary.NativeEndian.PutUint32(in[:], uint32(tid))
	ret, err := prog.Run(&ebpf.RunOptions{Context: in[:], ContextOut: out[:]})
	if err != nil {
		return 0, fmt.Errorf("running its program: %w", err)
	}
	if ret != 0 {
		return 0, nil
	}
	return binary.NativeEndian.Uint64(out[8:]), nil
}

// taskFinder loads the finder on first use.
var taskFinder = sync.OnceValues(func() (*ebpf.Program, error) {
	if err := bpfrt.CheckPrivileges(); err != nil {
		return nil, err
	}
	ids, err := kernel.KfuncIDs("bpf_task_from_pid", "bpf_task_release")
	if err != nil {
		return nil, err
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "bpftap_ktask", Type: ebpf.Syscall,
		Flags: unix.BPF_F_SLEEPABLE, License: "GPL", Instructions: finder(ids[0], ids[1])})
	if err != nil {
		return nil, fmt.Errorf("loading its program: %w", err)
	}
	return prog, nil
})

// finder is the finder's code; fromPid and release are the kfuncs' BTF IDs.
func finder(fromPid, release int32) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R1, asm.R6, 0, asm.Word),
		kernel.KfuncCall(fromPid),
		asm.JEq.Imm(asm.R0, 0, "none"),
		asm.StoreMem(asm.R6, 8, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R0),
		kernel.KfuncCall(release),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("none"),
		asm.Return(),
	}
}
