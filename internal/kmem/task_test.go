package kmem

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/kernel"
)

// FindTask finds this process's task: its tgid field, read through the
// reader at the offset the kernel's BTF gives, is the process's pid. A
// pid no task has gives 0, as a number out of a pid's range does.
func TestFindTask(t *testing.T) {
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Skipf("needs BPF: %v", err)
	}
	btf, err := kernel.Kernel()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	path, err := btf.ResolveIn("task_struct", []kernel.Step{{Member: "tgid"}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := FindTask(int64(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Kernel()
	if err != nil {
		t.Fatal(err)
	}
	var tgid [4]byte
	if _, err := r.Read(task+uint64(path.Offsets[0]), tgid[:]); err != nil {
		t.Fatalf("reading the tgid of task %#x: %v", task, err)
	}
	if got := binary.NativeEndian.Uint32(tgid[:]); got != uint32(os.Getpid()) {
		t.Errorf("task %#x has tgid %d, want %d", task, got, os.Getpid())
	}
	for _, pid := range []int64{0x7fffffff, 0, -1, 1 << 40} {
		if task, err := FindTask(pid); task != 0 || err != nil {
			t.Errorf("FindTask(%d) = %#x, %v; want 0, nil", pid, task, err)
		}
	}
}
