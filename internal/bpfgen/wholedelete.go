package bpfgen

import (
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// Deleting a whole global in a kernel probe (`delete A`, `delete s`).
//
//   - An array (of longs, strings or statistics): every element is deleted
//     by a walk of its map (bpf_for_each_map_elem), as `delete A[*, ...]`
//     is with every column a `*` (wilddelete.go). An element another CPU
//     adds during the walk may stay, as if added after the delete.
//   - A string: its value becomes "".
//   - A statistic: every CPU's partial is zeroed, word by word. This CPU's
//     is zeroed under the nesting guard (nesting.go), and the updates of a
//     statistic some kernel probe deletes take the guard too (sema cannot
//     tell which run first), so a program that interrupts the delete on
//     this CPU skips its update, counted, rather than leave a partial half
//     zeroed, and one that reads it there skips the rest of its run,
//     counted, rather than read a half-zeroed partial (guardedRead). Another CPU's partial is zeroed while that CPU may update it:
//     BPF has no lock to take there, and an update racing the delete may be
//     lost or partly kept (stap's module runtime locks each CPU's partial).

// deleteWhole compiles `delete v` of a global array, string or statistic.
func (g *gen) deleteWhole(s *syntax.DeleteStmt, v *syntax.Var) {
	gl := g.m.global(v)
	switch {
	case v.IsArray:
		stars := make([]syntax.Expr, len(gl.Keys))
		for i := range stars {
			stars[i] = &syntax.Star{Typed: syntax.Typed{Pos: s.Pos}}
		}
		g.deleteMatching(s, gl, stars)
	case v.Type == syntax.TypeString:
		g.lookupOrCreate(gl, nil, s.Pos)
		g.emit(asm.StoreImm(regRec, 0, 0, asm.Byte))
	default:
		g.resetStat(s, gl)
	}
}

// resetStat zeroes every CPU's partial of the global statistic gl.
func (g *gen) resetStat(s *syntax.DeleteStmt, gl *Global) {
	ncpu := g.possibleCPUs(s, "delete of a statistic in a kernel probe")
	if ncpu == 0 {
		return
	}
	stack := g.stack
	g.lookupOrCreate(gl, nil, s.Pos)
	g.guarded(func() { g.zeroStat(gl) })
	acc := g.pushStack(accSize)
	g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.R10, acc+accCPU, asm.R1, asm.DWord))
	k := g.key(gl, nil)
	top, other := g.newLabel("reset_cpu"), g.newLabel("reset_other")
	g.mark(top)
	g.emit(asm.FnGetSmpProcessorId.Call(), asm.LoadMem(asm.R1, asm.R10, acc+accCPU, asm.DWord), asm.JEq.Reg(asm.R0, asm.R1, other))
	g.percpuLookup(gl.Ref, k, acc)
	g.emit(asm.JEq.Imm(asm.R0, 0, other), asm.Mov.Reg(regRec, asm.R0))
	g.zeroStat(gl)
	g.mark(other)
	g.nextCPU(acc, ncpu, top)
	g.stack = stack
}

// zeroStat zeroes the partial at regRec.
func (g *gen) zeroStat(gl *Global) {
	g.emit(asm.Mov.Imm(asm.R1, 0))
	for off := int16(0); off < int16(gl.Stat.Size); off += 8 {
		g.emit(asm.StoreMem(regRec, off, asm.R1, asm.DWord))
	}
}

// resetInKernel tells whether kernel code deletes the whole statistic v.
func (m *Module) resetInKernel(v *syntax.Var) bool {
	return m.uses().deleted[v]
}

// wholeUses are the globals kernel code (a kernel probe, or a function,
// which kernel probes may call) uses whole: found in one walk of the
// program when a global's layout first asks, so the layouts of many
// globals do not walk the program once each.
type wholeUses struct {
	iterated map[*syntax.Var]bool // the array of a foreach
	deleted  map[*syntax.Var]bool // the target of a delete
}

// walkWholeUses finds the globals kernel code of prog uses whole.
func walkWholeUses(prog *sema.Program) *wholeUses {
	u := &wholeUses{iterated: map[*syntax.Var]bool{}, deleted: map[*syntax.Var]bool{}}
	note := func(set map[*syntax.Var]bool, e syntax.Expr) {
		if id, ok := e.(*syntax.Ident); ok {
			set[id.Var] = true
		}
	}
	visit := func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ForeachStmt:
			note(u.iterated, n.Array)
		case *syntax.DeleteStmt:
			note(u.deleted, n.Target)
		}
		return true
	}
	for _, p := range prog.Probes {
		if p.Kernel {
			syntax.Walk(p.Body, visit)
		}
	}
	for _, f := range prog.Funcs {
		if f.Decl != nil && f.Decl.Body != nil {
			syntax.Walk(f.Decl.Body, visit)
		}
	}
	return u
}
