package bpfrt

import (
	"os"
	"slices"
	"testing"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// TestKprobeMulti attaches one program to vfs_read and vfs_write with one
// link, at their entry (the count argument in rdx) and at their return
// (the bytes read or written in rax), and tells the two apart by the
// attach cookie: the index of the function in Symbols.
func TestKprobeMulti(t *testing.T) {
	for _, c := range []struct {
		kind attach.Kind
		off  int16
	}{{attach.KprobeMulti, regArg3}, {attach.KretprobeMulti, regReturn}} {
		t.Run(c.kind.String(), func(t *testing.T) {
			point := &attach.Point{Kind: c.kind, Symbols: []string{"vfs_read", "vfs_write"}}
			requireKind(t, point)
			const reads, writes = 300, 200
			io := newKernelFunctionIO(t)
			counts := newCountsN(t, 2)
			p := loadAttached(t, &ProgramSpec{Name: "count_io", Attach: point,
				Instructions: countIO(c.off, true), Maps: map[string]*ebpf.Map{"counts": counts}})
			defer p.Close()
			io.run(t, reads, writes)
			if r, w := countOf(t, counts, 0), countOf(t, counts, 1); r != reads || w != writes {
				t.Errorf("counted %d reads and %d writes of %d bytes, the test made %d and %d", r, w, ioSize, reads, writes)
			}
		})
	}
}

// TestKprobeSession runs one program at the entry and the return of
// vfs_read and vfs_write: at entry it keeps the count argument in the
// session's cookie (skipping the return of calls not the test's), at
// return it counts the calls whose kept count and return value are both
// ioSize, each function (attach cookie) and side in a slot of its own.
func TestKprobeSession(t *testing.T) {
	point := &attach.Point{Kind: attach.KprobeSession, Symbols: []string{"vfs_read", "vfs_write"}}
	requireKind(t, point)
	isReturn, _ := kernelFunc(t, "bpf_session_is_return")
	cookie, _ := kernelFunc(t, "bpf_session_cookie")
	const reads, writes = 300, 200
	io := newKernelFunctionIO(t)
	counts := newCountsN(t, 4)
	p := loadAttached(t, &ProgramSpec{Name: "session_io", Attach: point,
		Instructions: sessionProgram(isReturn, cookie), Maps: map[string]*ebpf.Map{"counts": counts}})
	defer p.Close()
	io.run(t, reads, writes)
	want := [4]uint64{reads, reads, writes, writes}
	var got [4]uint64
	for i := range got {
		got[i] = countOf(t, counts, uint32(i))
	}
	if got != want {
		t.Errorf("counted %v (read entries and returns, write entries and returns), want %v", got, want)
	}
}

// kfuncCall calls the kernel function of BTF id id.
func kfuncCall(id kernel.TypeID) asm.Instruction {
	return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: int64(id)}
}

// sessionProgram is TestKprobeSession's program: counts[2·cookie] counts
// the entries of the test's calls, counts[2·cookie+1] their returns.
func sessionProgram(isReturn, cookie kernel.TypeID) asm.Instructions {
	entry := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R6, regArg3, asm.DWord),
		asm.JNE.Imm(asm.R7, ioSize, "skip"),
		kfuncCall(cookie),
		asm.StoreMem(asm.R0, 0, asm.R7, asm.DWord),
		asm.Ja.Label("count"),
	}
	ret := asm.Instructions{
		kfuncCall(cookie).WithSymbol("return"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JNE.Imm(asm.R1, ioSize, "out"),
		asm.LoadMem(asm.R1, asm.R6, regReturn, asm.DWord),
		asm.JNE.Imm(asm.R1, ioSize, "out"),
		asm.Add.Imm(asm.R8, 1),
	}
	return slices.Concat(asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.JNE.Imm(asm.R0, int32(os.Getpid()), "skip"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.FnGetAttachCookie.Call(),
		asm.LSh.Imm(asm.R0, 1),
		asm.Mov.Reg(asm.R8, asm.R0),
		kfuncCall(isReturn),
		asm.JNE.Imm(asm.R0, 0, "return"),
	}, entry, ret, asm.Instructions{
		asm.StoreMem(asm.R10, -4, asm.R8, asm.Word).WithSymbol("count"),
	}, lookupOrOut("counts"), asm.Instructions{
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Ja.Label("out"),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("skip"),
		asm.Return(),
	}, exit)
}
