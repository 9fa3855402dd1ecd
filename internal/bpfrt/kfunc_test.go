package bpfrt

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The kernel function kinds are tested on vfs_read and vfs_write, which
// this process makes run by reading and writing a file of its own:
// pread and pwrite of ioSize bytes, a size no other I/O of the process
// asks for, so that a program counting calls whose count argument (at
// entry) or return value (at return) is ioSize counts the test's own.

// ioSize is the size of every read and write of the workload.
const ioSize = 1337

// kernelFunctionIO is a file of ioSize bytes to read and write.
type kernelFunctionIO struct {
	f   *os.File
	buf []byte
}

func newKernelFunctionIO(t testing.TB) *kernelFunctionIO {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "io")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w := &kernelFunctionIO{f: f, buf: make([]byte, ioSize)}
	if _, err := f.WriteAt(w.buf, 0); err != nil {
		t.Fatal(err)
	}
	return w
}

// run makes reads calls of vfs_read and writes of vfs_write, each of
// ioSize bytes.
func (w *kernelFunctionIO) run(t testing.TB, reads, writes int) {
	t.Helper()
	for range reads {
		if n, err := w.f.ReadAt(w.buf, 0); n != ioSize {
			t.Fatalf("read %d bytes: %v", n, err)
		}
	}
	for range writes {
		if n, err := w.f.WriteAt(w.buf, 0); n != ioSize {
			t.Fatalf("wrote %d bytes: %v", n, err)
		}
	}
}

// countIO is a program that counts, in the per-CPU array "counts", the
// calls of this process whose word at offset off of the context (an
// argument or the return value) is ioSize, in the slot of the attach
// cookie when byCookie (a multi link's index of the function), else in
// slot 0.
func countIO(off int16, byCookie bool) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.JNE.Imm(asm.R0, int32(os.Getpid()), "out"),
		asm.LoadMem(asm.R1, asm.R6, off, asm.DWord),
		asm.JNE.Imm(asm.R1, ioSize, "out"),
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
	}
	if byCookie {
		insns = append(insns,
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.FnGetAttachCookie.Call(),
			asm.StoreMem(asm.R10, -4, asm.R0, asm.Word),
		)
	}
	return slices.Concat(insns, lookupOrOut("counts"), asm.Instructions{
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
	}, exit)
}

// newCountsN creates a per-CPU array of n counters.
func newCountsN(t testing.TB, n uint32) *ebpf.Map {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "counts", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// countOf reads counter key of counts.
func countOf(t testing.TB, counts *ebpf.Map, key uint32) uint64 {
	t.Helper()
	n, err := SumPerCPU(counts, key)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// requireKind skips the test, saying why, when the kernel lacks p's kind,
// and fails it where the process may not use BPF at all.
func requireKind(t testing.TB, p *attach.Point) {
	t.Helper()
	requireBPF(t)
	if err := CanAttach(p); err != nil {
		t.Skipf("skipped: %v", err)
	}
}

// Slots of the host architecture's struct pt_regs the tests read: the
// third argument (the count of vfs_read and vfs_write) and the return
// value.
var (
	regArg3   = int16(arch.Host().FuncArgs[2])
	regReturn = int16(arch.Host().Return)
)

// kernelFunc returns the BTF id of vmlinux's function name and its number
// of parameters; a kernel without BTF skips the test.
func kernelFunc(t testing.TB, name string) (kernel.TypeID, int) {
	t.Helper()
	b, err := kernel.Kernel()
	if errors.Is(err, kernel.ErrNoBTF) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	fn, err := b.TypeByName(name, kernel.KindFunc)
	if err != nil {
		t.Fatal(err)
	}
	proto, err := b.Type(fn.Target)
	if err != nil {
		t.Fatal(err)
	}
	return fn.ID, len(proto.Params)
}

// kallsymsAddr returns the address /proc/kallsyms gives the function name
// of the kernel itself, or 0.
func kallsymsAddr(name string) uint64 {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[2] == name {
			a, _ := strconv.ParseUint(fields[0], 16, 64)
			return a
		}
	}
	return 0
}
