package bpfgen

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// Writes to the current process's memory, guru mode's set_user_long(addr,
// val) and the other tapset.UserWrites, set_user_string(addr, val) and
// set_user_string_n(addr, n, val): bpf_probe_write_user, which the kernel
// lets tracing programs call (and logs, once per program, that the
// program may corrupt user memory). A number's low bytes are written (the
// machine is little-endian); a string's bytes and a NUL, at most
// MAXSTRINGLEN - 1 of them (n of them for set_user_string_n). A write
// that faults (an address the process has not mapped, a page not present
// or read-only) raises stap's error with the address. A kernel under
// lockdown refuses the helper: pass 3 says so (target.WriteUser).

// userWrite compiles set_user_long and the other writers of a number.
func (g *gen) userWrite(c *syntax.Call) {
	if !g.needs(c.Pos, target.WriteUser, c.Name+"()") {
		return
	}
	w := tapset.UserWrites[c.Name]
	mark := g.scratchMark()
	cells := g.longArgs(c.Args[0], c.Args[1])
	g.emit(
		asm.LoadMem(regRec, regScratch, int16(cells[0]), asm.DWord),
		asm.Mov.Reg(asm.R1, regRec),
		asm.Mov.Reg(asm.R2, regScratch),
		asm.Add.Imm(asm.R2, int32(cells[1])),
		asm.Mov.Imm(asm.R3, int32(w.Size)),
		asm.FnProbeWriteUser.Call(),
		asm.JNE.Imm(asm.R0, 0, g.errorSite(fmt.Sprintf(tapset.UserWriteFault, w.What), c.Pos, true)),
	)
	g.scratchRelease(mark)
}

// userWriteString compiles set_user_string and set_user_string_n: the
// string's bytes (at most n, at most MAXSTRINGLEN - 1), then a NUL.
func (g *gen) userWriteString(c *syntax.Call) {
	if !g.needs(c.Pos, target.WriteUser, c.Name+"()") {
		return
	}
	mark := g.scratchMark()
	addr := g.longArgs(c.Args[0])[0]
	count := g.allocScratch(8) // the bytes to write: the limit, then the count
	g.setCell(count, int32(g.m.maxStr-1))
	if len(c.Args) == 3 { // set_user_string_n: n bytes at most, none for n < 0
		g.long(c.Args[1])
		under, positive := g.newLabel("write_n"), g.newLabel("write_n_positive")
		g.emit(
			asm.LoadMem(asm.R1, regScratch, int16(count), asm.DWord),
			asm.JSGE.Reg(asm.R0, asm.R1, under),
			asm.JSGE.Imm(asm.R0, 0, positive),
			asm.Mov.Imm(asm.R0, 0),
		)
		g.mark(positive)
		g.emit(asm.StoreMem(regScratch, int16(count), asm.R0, asm.DWord))
		g.mark(under)
	}
	val := g.str(c.Args[len(c.Args)-1])
	fault := g.errorSite(fmt.Sprintf(tapset.UserWriteFault, "string"), c.Pos, true)
	shorter, nul := g.newLabel("write_shorter"), g.newLabel("write_nul")
	g.strlenOf(val)
	g.emit(
		asm.LoadMem(asm.R3, regScratch, int16(count), asm.DWord),
		asm.JSLE.Reg(asm.R3, asm.R0, shorter),
		asm.Mov.Reg(asm.R3, asm.R0),
	)
	g.mark(shorter)
	g.emit(
		asm.StoreMem(regScratch, int16(count), asm.R3, asm.DWord),
		asm.JSLE.Imm(asm.R3, 0, nul),
		asm.JGT.Imm(asm.R3, int32(val.width), nul), // never: the bound the verifier needs
		asm.LoadMem(regRec, regScratch, int16(addr), asm.DWord),
		asm.Mov.Reg(asm.R1, regRec),
		asm.Mov.Reg(asm.R2, regScratch),
		asm.Add.Imm(asm.R2, int32(val.off)),
		asm.FnProbeWriteUser.Call(),
		asm.JNE.Imm(asm.R0, 0, fault),
	)
	g.mark(nul)
	zero := g.allocScratch(8)
	g.setCell(zero, 0)
	g.emit(
		asm.LoadMem(regRec, regScratch, int16(addr), asm.DWord), // the fault's address: the string's
		asm.LoadMem(asm.R1, regScratch, int16(count), asm.DWord),
		asm.Add.Reg(asm.R1, regRec),
		asm.Mov.Reg(asm.R2, regScratch),
		asm.Add.Imm(asm.R2, int32(zero)),
		asm.Mov.Imm(asm.R3, 1),
		asm.FnProbeWriteUser.Call(),
		asm.JNE.Imm(asm.R0, 0, fault),
	)
	g.scratchRelease(mark)
}
