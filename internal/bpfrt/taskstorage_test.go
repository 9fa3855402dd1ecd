package bpfrt

import (
	"slices"
	"testing"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/bpftap/bpftap/internal/target/targettest"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// taskStorageProgram counts the current thread's getppid calls in its
// task-local storage (bpf_get_current_task_btf, bpf_task_storage_get with
// BPF_LOCAL_STORAGE_GET_F_CREATE) and stores each count in slot 0 of
// "out"; the call that brings the count to calls deletes the element
// (bpf_task_storage_delete) and, when a get without create then finds
// nothing, sets slot 1. A get that fails sets slot 2.
func taskStorageProgram(pid int32, calls int32) asm.Instructions {
	insns := append(filterGetppid(pid),
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMapPtr(asm.R1, 0).WithReference("task"),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, 1), // BPF_LOCAL_STORAGE_GET_F_CREATE
		asm.FnTaskStorageGet.Call(),
		asm.JNE.Imm(asm.R0, 0, "got"),
		asm.Mov.Imm(asm.R6, 2),
		asm.Ja.Label("set"),
		asm.LoadMem(asm.R8, asm.R0, 0, asm.DWord).WithSymbol("got"),
		asm.Add.Imm(asm.R8, 1),
		asm.StoreMem(asm.R0, 0, asm.R8, asm.DWord),
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
	)
	insns = append(insns, lookupOrOut("out")...)
	insns = append(insns,
		asm.StoreMem(asm.R0, 0, asm.R8, asm.DWord),
		asm.JNE.Imm(asm.R8, calls, "out"),
		asm.LoadMapPtr(asm.R1, 0).WithReference("task"),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.FnTaskStorageDelete.Call(),
		asm.JNE.Imm(asm.R0, 0, "out"),
		asm.LoadMapPtr(asm.R1, 0).WithReference("task"),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnTaskStorageGet.Call(),
		asm.JNE.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R6, 1),
		asm.StoreImm(asm.R10, -4, 0, asm.Word).WithSymbol("set"),
		asm.StoreMem(asm.R10, -4, asm.R6, asm.Word),
	)
	return slices.Concat(insns, lookupOrOut("out"), asm.Instructions{
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
	}, exit)
}

// TestTaskStorage proves that the programs of every attach kind bpftap
// uses for kernel probes may call bpf_get_current_task_btf and the
// task-storage helpers (get with and without create, delete), on a
// TASK_STORAGE map as the kernel wants it: max_entries 0,
// BPF_F_NO_PREALLOC, BTF key int and a BTF value.
func TestTaskStorage(t *testing.T) {
	k := targettest.Running(t)
	targettest.Require(t, k, target.TaskStorage)
	targettest.Require(t, k, target.TaskBTF)
	onEachKind(t, func(t *testing.T, point *attach.Point) {
		const calls = 3000
		task, err := ebpf.NewMap(&ebpf.MapSpec{Name: "task", Type: ebpf.TaskStorage, KeySize: 4, ValueSize: 8,
			Flags: unix.BPF_F_NO_PREALLOC, Key: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed},
			Value: &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}})
		if err != nil {
			t.Fatal(err)
		}
		defer task.Close()
		out, err := ebpf.NewMap(&ebpf.MapSpec{Name: "out", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		child := newWorkload(t, calls)
		p := loadAttached(t, &ProgramSpec{Name: "task_storage", Attach: point,
			Instructions: taskStorageProgram(child.pid(), calls), Maps: map[string]*ebpf.Map{"task": task, "out": out}})
		defer p.Close()
		child.run(t)
		var got [3]uint64
		for i := range got {
			if err := out.Lookup(uint32(i), &got[i]); err != nil {
				t.Fatal(err)
			}
		}
		if got != [3]uint64{calls, 1, 0} {
			t.Errorf("count %d, absent after delete %d, failed gets %d; want %d, 1, 0", got[0], got[1], got[2], calls)
		}
	})
}
