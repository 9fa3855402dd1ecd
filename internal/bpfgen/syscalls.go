package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// SyscallMap is the ARRAY of system call names (indexed by number, "" in
// the gaps) that syscall_name() reads, created when a program uses it.
const SyscallMap = "syscall_names"

// syscallTable returns the names of this machine's system calls and the
// width of a name slot.
func syscallTable() ([]string, int) {
	names := tapset.SyscallNames(syntax.HostArch())
	width := 8
	for _, n := range names {
		width = max(width, (len(n)+8)&^7)
	}
	return names, width
}

// syscallName compiles syscall_name(nr): the name from SyscallMap, or ""
// for a number outside the table, as stap's tapset returns.
func (g *gen) syscallName(c *syntax.Call) value {
	names, width := syscallTable()
	if names == nil {
		g.fail(c, "syscall_name() has no system call table for %s", syntax.HostArch())
		return g.strSlot(8)
	}
	g.m.syscalls = true
	dst := g.strSlot(width)
	done := g.newLabel("sysname")
	g.long(c.Args[0])
	slot := g.pushSlot()
	g.emit(
		asm.StoreImm(regScratch, int16(dst.off), 0, asm.Byte),
		asm.JGE.Imm(asm.R0, int32(len(names)), done),
		asm.StoreMem(asm.R10, slot, asm.R0, asm.Word),
	)
	g.emit(emitLookup(SyscallMap, slot, done)...)
	g.readStr(asm.FnProbeReadKernelStr, dst, func() { g.emit(asm.Mov.Reg(asm.R3, asm.R0)) }, width)
	g.mark(done)
	g.popStack(8)
	return dst
}

// syscallMapSpec describes SyscallMap with its contents.
func syscallMapSpec() *ebpf.MapSpec {
	names, width := syscallTable()
	spec := &ebpf.MapSpec{Name: "sysnames", Type: ebpf.Array, KeySize: 4,
		ValueSize: uint32(width), MaxEntries: uint32(len(names))}
	for nr, name := range names {
		v := make([]byte, width)
		copy(v, name)
		spec.Contents = append(spec.Contents, ebpf.MapKV{Key: uint32(nr), Value: v})
	}
	return spec
}
