package bpfgen

import (
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// Arrays by thread.
//
// A global array sema marks Var.ByThread (one long key, tid() at every
// use, kernel probes only: sema's bythread.go) lives in task-local
// storage: TASK_STORAGE, max_entries 0, BPF_F_NO_PREALLOC, BTF key int and
// BTF value (the kernel insists on both). v[tid()] is the current task's
// element, found with bpf_task_storage_get(map, bpf_get_current_task_btf(),
// NULL, flags): no key is built and nothing is hashed, and the kernel frees
// a thread's elements when the thread exits, where a hash keeps the
// entries of calls that never return (exit_group, a thread killed in a
// read) until it overflows.
//
// An element is {u64 present; value}, and a thread keeps it from its first
// update to its exit: delete clears it (present and the value's first
// word: 0, or "") rather than calling bpf_task_storage_delete. Deleting
// and recreating an element on every call, as `delete start[tid()]` in a
// return probe would, costs more than a hash: each create allocates the
// element (and the task's storage, when it was the task's last element)
// and each delete frees them after an RCU grace period. Measured here
// (bpftap -t: the programs' own run time, as in bench/bythread.sh), a
// getppid entry that saves and a return that deletes ran ~2000 ns per
// call that way, ~555 in a hash, ~150 with the element kept (~115 for
// the two programs doing nothing). So:
//
//	read    get without create; NULL (or a cleared element) reads as 0, ""
//	update  get with BPF_LOCAL_STORAGE_GET_F_CREATE (zeros when new), then
//	        present = 1 and the value updated in place
//	in      get without create, and its present word
//	delete  get without create; if found, present and the value cleared
//
// Outside LSM and fentry programs the kernel gives the recursion-checked
// helpers: while another program on this CPU is inside a task-storage
// helper (nesting.go), a get still finds an existing element but cannot
// create one (NULL even with create). A create can also fail for want of
// memory (nothing is preallocated). Either is not a full map, and not
// stap's overflow error: the rest of the probe's run is skipped and
// counted in SkipMap, which is reported with the kernel's own recursion
// misses as skipped probes, as stap counts a probe it cannot run for
// reentrancy. Only a thread's first update creates, so such skips are rare.
//
// Before Linux 5.11 (no task storage in tracing programs, no
// bpf_get_current_task_btf) such an array is an ordinary hash keyed by
// tid() (Global.ByThread is false), and one more program, on the
// sched_process_exit raw tracepoint (ThreadExits), deletes an exiting
// thread's elements of each, as the kernel frees a thread's storage.

// threadValue is the offset of the value in an element by thread, after
// its present word.
const threadValue = 8

// taskStorageSpec describes the task storage of a global by thread whose
// value is the field value.
func taskStorageSpec(name string, value ArgField) *ebpf.MapSpec {
	size := uint32(threadValue + fieldSize(value))
	return &ebpf.MapSpec{Name: name, Type: ebpf.TaskStorage, KeySize: 4, ValueSize: size,
		Flags: unix.BPF_F_NO_PREALLOC, Key: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed},
		Value: &btf.Array{Index: &btf.Int{Name: "u32", Size: 4}, Type: &btf.Int{Name: "char", Size: 1, Encoding: btf.Char}, Nelems: size}}
}

// taskStorageGet emits R0 = bpf_task_storage_get(gl's map, the current
// task, NULL, flags).
func (g *gen) taskStorageGet(gl *Global, flags int32) {
	g.emit(
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.LoadMapPtr(asm.R1, 0).WithReference(gl.Ref),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, flags),
		asm.FnTaskStorageGet.Call(),
	)
}

const bpfLocalStorageGetFCreate = 1 // BPF_LOCAL_STORAGE_GET_F_CREATE

// threadLookup leaves in R0 the address of the current thread's value of
// gl, or 0 when it has no element (a cleared one reads as 0 or "").
func (g *gen) threadLookup(gl *Global) {
	g.taskStorageGet(gl, 0)
	done := g.newLabel("absent")
	g.emit(asm.JEq.Imm(asm.R0, 0, done), asm.Add.Imm(asm.R0, threadValue))
	g.mark(done)
}

// threadElement leaves in regRec the address of the current thread's
// value of gl, its element created (zeros) when absent and marked
// present; when it cannot be created the rest of the run is skipped and
// counted in SkipMap.
func (g *gen) threadElement(gl *Global) {
	g.taskStorageGet(gl, bpfLocalStorageGetFCreate)
	have := g.newLabel("have")
	g.emit(asm.JNE.Imm(asm.R0, 0, have))
	g.countSkip()
	g.emit(asm.Ja.Label(g.exitLabel))
	g.mark(have)
	g.emit(
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Reg(regRec, asm.R0),
		asm.Add.Imm(regRec, threadValue),
	)
}

// threadIn leaves in R0 whether the current thread has a (present)
// element of gl.
func (g *gen) threadIn(gl *Global) {
	g.taskStorageGet(gl, 0)
	done := g.newLabel("in")
	g.emit(asm.JEq.Imm(asm.R0, 0, done), asm.LoadMem(asm.R0, asm.R0, 0, asm.DWord))
	g.mark(done)
}

// threadDelete clears the current thread's element of gl, if any: its
// present word, and the first word of the value (0, or "").
func (g *gen) threadDelete(gl *Global) {
	g.taskStorageGet(gl, 0)
	done := g.newLabel("deleted")
	g.emit(
		asm.JEq.Imm(asm.R0, 0, done),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.StoreMem(asm.R0, threadValue, asm.R1, asm.DWord),
	)
	g.mark(done)
}

// ThreadExits returns the programs that delete an exiting thread's
// elements of the arrays by thread the module keeps in hashes (where the
// kernel has no task storage), none when there are none: one for each
// maxProgramMaps of them (a wildcard's @entry keeps an array for each
// function). Their key is the thread's id as a long, as tid() keys those
// hashes.
func (m *Module) ThreadExits() []*Program {
	var hashes []*Global
	for _, gl := range m.order {
		if gl.Var.ByThread && !gl.ByThread {
			hashes = append(hashes, gl)
		}
	}
	var progs []*Program
	for len(hashes) > 0 {
		n := min(len(hashes), maxProgramMaps)
		progs = append(progs, threadExits(hashes[:n]))
		hashes = hashes[n:]
	}
	return progs
}

// maxProgramMaps is the most maps a program may use (the kernel's
// MAX_USED_MAPS, 64), less a margin.
const maxProgramMaps = 60

// threadExits is the program that deletes the exiting thread's element of
// each of hashes.
func threadExits(hashes []*Global) *Program {
	a := &attach.Point{Kind: attach.RawTracepoint, Event: "sched_process_exit"}
	probe := &sema.Probe{Name: "the exits of threads (arrays by thread)", Kernel: true, Attach: a}
	insns := asm.Instructions{
		btf.WithFuncMetadata(asm.FnGetCurrentPidTgid.Call(), mainType), // as every program's first
		asm.LSh.Imm(asm.R0, 32), asm.RSh.Imm(asm.R0, 32), // the thread's id
		asm.StoreMem(asm.R10, -8, asm.R0, asm.DWord),
	}
	for _, gl := range hashes {
		insns = append(insns, asm.LoadMapPtr(asm.R1, 0).WithReference(gl.Ref),
			asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -8), asm.FnMapDeleteElem.Call())
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 0), asm.Return())
	return &Program{Probe: probe, Attach: a, Instructions: insns}
}
