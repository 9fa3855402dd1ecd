package bpfrt

import (
	"os"
	"testing"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/bpftap/bpftap/internal/target/targettest"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// TestKprobe counts the test's own reads through vfs_read at its entry
// (the count argument in rdx) and at its return (the bytes read in rax),
// the kretprobe also with a bound on pending returns (through tracefs).
func TestKprobe(t *testing.T) {
	for _, c := range []struct {
		name  string
		point attach.Point
		off   int16
	}{
		{"kprobe", attach.Point{Kind: attach.Kprobe, Event: "vfs_read"}, regArg3},
		{"kretprobe", attach.Point{Kind: attach.Kretprobe, Event: "vfs_read"}, regReturn},
		{"kretprobe_maxactive", attach.Point{Kind: attach.Kretprobe, Event: "vfs_read", MaxActive: 8}, regReturn},
	} {
		t.Run(c.name, func(t *testing.T) { testCountReads(t, &c.point, c.off) })
	}
}

// testCountReads runs countIO on point and checks that it counted every
// read of the workload, and no other call.
func testCountReads(t *testing.T, point *attach.Point, off int16) {
	t.Helper()
	requireKind(t, point)
	const reads = 500
	io := newKernelFunctionIO(t)
	counts := newCountsN(t, 1)
	p := loadAttached(t, &ProgramSpec{Name: "count_reads", Attach: point,
		Instructions: countIO(off, false), Maps: map[string]*ebpf.Map{"counts": counts}})
	defer p.Close()
	io.run(t, reads, 0)
	if n := countOf(t, counts, 0); n != reads {
		t.Errorf("counted %d reads of %d bytes, the test made %d", n, ioSize, reads)
	}
}

// TestKprobeIP shows what a kprobe-type program sees of the probed
// address, regs->ip and bpf_get_func_ip (Linux 5.15), beside the
// function's address in /proc/kallsyms: for a kprobe, where ftrace or an
// int3 serves it, and for a kprobe_multi link (fprobe).
func TestKprobeIP(t *testing.T) {
	for _, point := range []*attach.Point{
		{Kind: attach.Kprobe, Event: "vfs_read"},
		{Kind: attach.KprobeMulti, Symbols: []string{"vfs_read"}},
	} {
		t.Run(point.Kind.String(), func(t *testing.T) { testIP(t, point) })
	}
}

func testIP(t *testing.T, point *attach.Point) {
	requireKind(t, point)
	targettest.Require(t, targettest.Running(t), target.FuncIP)
	ips, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ips", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ips.Close()
	p := loadAttached(t, &ProgramSpec{Name: "kprobe_ip", Attach: point,
		Instructions: ipProgram(), Maps: map[string]*ebpf.Map{"ips": ips}})
	defer p.Close()
	newKernelFunctionIO(t).run(t, 10, 0)
	var got [2]uint64
	if err := ips.Lookup(uint32(0), &got); err != nil {
		t.Fatal(err)
	}
	addr := kallsymsAddr("vfs_read")
	t.Logf("vfs_read at %#x in /proc/kallsyms: regs->ip %#x (%+d), bpf_get_func_ip %#x (%+d)",
		addr, got[0], int64(got[0]-addr), got[1], int64(got[1]-addr))
	if got[1] < addr || got[1] > addr+16 {
		t.Errorf("bpf_get_func_ip gave %#x, vfs_read is at %#x", got[1], addr)
	}
}

// ipProgram stores regs->ip and bpf_get_func_ip of the test's reads of
// ioSize bytes in the array "ips".
func ipProgram() asm.Instructions {
	return append(asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.JNE.Imm(asm.R0, int32(os.Getpid()), "out"),
		asm.LoadMem(asm.R1, asm.R6, regArg3, asm.DWord),
		asm.JNE.Imm(asm.R1, ioSize, "out"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.FnGetFuncIp.Call(),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("ips"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R6, int16(arch.Host().IP), asm.DWord),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.StoreMem(asm.R0, 8, asm.R7, asm.DWord),
	}, exit...)
}

// binfmtMisc is a module function the tests probe where the module is
// loaded: binfmt_misc's handler, which every execve tries first.
var binfmtMisc = attach.Point{Event: "load_misc_binary", Module: "binfmt_misc"}

// requireModule skips the test when module is not loaded with BTF.
func requireModule(t testing.TB, module string) {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/btf/" + module); err != nil {
		t.Skipf("skipped: module %s is not loaded (with BTF): %v", module, err)
	}
}

// testCountExecs attaches countAllProgram to point and checks that it
// counted the execve of a child.
func testCountExecs(t *testing.T, point *attach.Point) {
	counts := newCountsN(t, 1)
	p := loadAttached(t, &ProgramSpec{Name: "count_execs", Attach: point,
		Instructions: countAllProgram, Maps: map[string]*ebpf.Map{"counts": counts}})
	defer p.Close()
	newWorkload(t, 0).run(t)
	if n := countOf(t, counts, 0); n < 1 {
		t.Errorf("counted %d calls of %s:%s, a child was started", n, point.Module, point.Event)
	}
}

// TestKprobeModule puts a kprobe on a module's function.
func TestKprobeModule(t *testing.T) {
	point := binfmtMisc
	point.Kind = attach.Kprobe
	requireKind(t, &point)
	requireModule(t, point.Module)
	testCountExecs(t, &point)
}
