package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// Context functions that read the current task_struct: the address comes
// from bpf_get_current_task (a plain number in every program type), the
// member chain is resolved in the kernel's BTF once per module, and every
// hop is a bpf_probe_read_kernel (readPath), as for a $var chain.
//
//	ppid()         current->real_parent->tgid   (stap: the parent's tgid)
//	euid()         current->cred->euid.val      (stap: current_euid())
//	egid()         current->cred->egid.val      (stap: current_egid())
//	cmdline_str()  current->mm (NULL for a kernel thread), mm->arg_start
//	               and mm->arg_end: the arguments' bounds

// taskField compiles ppid(), euid() or egid() into R0.
func (g *gen) taskField(c *syntax.Call) { g.readTask(c, c.Name) }

// readTask loads the field taskPaths names of the current task (or the
// probe's context task) into R0.
func (g *gen) readTask(c *syntax.Call, field string) {
	path, err := g.m.facts.taskPaths[field]()
	if err != nil {
		g.fail(c, "%s() in a kernel probe needs task_struct from the kernel's BTF: %v", c.Name, err)
		return
	}
	g.task()
	g.readPath(path, false, c.Pos)
}

// cmdlineStr compiles cmdline_str(): the process's arguments lie
// NUL-separated in its memory from mm->arg_start to mm->arg_end; one
// bpf_probe_read_user copies them (at most MAXSTRINGLEN-1 bytes), and a
// loop turns every NUL but the last byte's into a space, as stap joins the
// arguments. A kernel thread (no mm) and memory it cannot read (arguments
// not paged in) give "".
func (g *gen) cmdlineStr(c *syntax.Call) value {
	dst := g.strSlot(g.m.maxStr)
	start, length := g.pushSlot(), g.pushSlot()
	fits, empty, loop, next, done := g.newLabel("args_fit"), g.newLabel("args_empty"),
		g.newLabel("args_loop"), g.newLabel("args_next"), g.newLabel("args_done")
	g.readTask(c, "mm")
	g.emit(asm.JEq.Imm(asm.R0, 0, empty))
	g.readTask(c, "arg_start")
	g.emit(asm.StoreMem(asm.R10, start, asm.R0, asm.DWord))
	g.readTask(c, "arg_end")
	g.emit(
		asm.LoadMem(asm.R3, asm.R10, start, asm.DWord),
		asm.Sub.Reg(asm.R0, asm.R3),
		asm.JSLT.Imm(asm.R0, 1, empty),
		asm.JLE.Imm(asm.R0, int32(g.m.maxStr-1), fits),
		asm.Mov.Imm(asm.R0, int32(g.m.maxStr-1)),
	)
	g.mark(fits)
	g.emit(
		asm.StoreMem(asm.R10, length, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(dst.off)),
		asm.FnProbeReadUser.Call(),
		asm.JSLT.Imm(asm.R0, 0, empty),
		asm.LoadMem(asm.R3, asm.R10, length, asm.DWord), // in [1, MAXSTRINGLEN-1]
		asm.JGT.Imm(asm.R3, int32(g.m.maxStr-1), empty), // never: the bound the verifier needs
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Reg(asm.R1, asm.R3),
		asm.StoreImm(asm.R1, int16(dst.off), 0, asm.Byte),
		asm.Sub.Imm(asm.R3, 1),
		asm.Mov.Imm(asm.R2, 0),
	)
	g.mark(loop)
	g.emit(
		asm.JGE.Reg(asm.R2, asm.R3, done),
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.LoadMem(asm.R4, asm.R1, int16(dst.off), asm.Byte),
		asm.JNE.Imm(asm.R4, 0, next),
		asm.StoreImm(asm.R1, int16(dst.off), ' ', asm.Byte),
	)
	g.mark(next)
	g.emit(asm.Add.Imm(asm.R2, 1), asm.Ja.Label(loop))
	g.mark(empty)
	g.emit(asm.StoreImm(regScratch, int16(dst.off), 0, asm.Byte))
	g.mark(done)
	g.popStack(16)
	return dst
}
