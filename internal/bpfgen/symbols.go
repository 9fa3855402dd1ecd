package bpfgen

import (
	"encoding/binary"
	"math/bits"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// symname(addr) and modname(addr) in a kernel probe. The name of the
// function or the module holding a kernel address is found in the kernel,
// an ordinary string a script can compare, keep or count by
// (`profile[symname(addr())] <<< 1` counts samples per function there).
// SymbolMap holds the kernel's text symbols in address order (package
// ksym), each its start, its end and its name; ModuleMap the ranges of the
// kernel proper and of its modules in the same shape; both filled at load
// (kernelside). A binary search of power-of-two steps (unrolled, the
// candidate kept in the scratch area so that every step's paths meet in
// one verifier state) finds the last range starting at or below addr,
// whose name is copied eight bytes at a time. An address no symbol holds
// gives stap's "0x%016x"; one no module holds stap's error.

// SymbolMap and ModuleMap are the names programs reference the kernel's
// symbols and modules by; CodeMap its text outside the tracing machinery
// (stackAt), in the same shape, without names.
const (
	SymbolMap = "ksyms"
	ModuleMap = "kmods"
	CodeMap   = "kcode"
)

// RangeTable is the shape of a map of address ranges (SymbolMap,
// ModuleMap): how many, and the bytes of a name with its NUL, rounded up
// to 8 (the longest name's).
type RangeTable struct{ Count, NameLen int }

// ValueSize is the size of an element: start, end (exclusive), name.
func (t RangeTable) ValueSize() int { return 16 + t.NameLen }

func rangeMapSpec(name string, t RangeTable) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: uint32(t.ValueSize()),
		MaxEntries: uint32(max(t.Count, 1)), Flags: unix.BPF_F_RDONLY_PROG}
}

// symname compiles symname(addr).
func (g *gen) symname(c *syntax.Call) value {
	return g.symbolName(func() { g.long(c.Args[0]) })
}

// symbolName compiles the name of the symbol holding the address addr0
// leaves in R0.
func (g *gen) symbolName(addr0 func()) value {
	t := g.m.symbolTable()
	v := g.strSlot(max(t.NameLen, len("0x")+16+1))
	addr := g.allocScratch(8)
	none, done := g.newLabel("nosym"), g.newLabel("sym")
	addr0()
	g.emit(asm.StoreMem(regScratch, int16(addr), asm.R0, asm.DWord))
	g.rangeName(SymbolMap, t, addr, v, none)
	g.emit(asm.Ja.Label(done))
	g.mark(none)
	g.emit(asm.LoadMem(asm.R0, regScratch, int16(addr), asm.DWord))
	g.hexAddress(v.off)
	g.mark(done)
	g.cutName(v)
	return v
}

// modname compiles modname(addr): the name of the kernel's range
// ("kernel") or of a module's holding addr, else stap's error.
func (g *gen) modname(c *syntax.Call) value {
	t := g.m.moduleTable()
	v := g.strSlot(max(t.NameLen, 8))
	addr := g.allocScratch(8)
	g.long(c.Args[0])
	g.emit(asm.StoreMem(regScratch, int16(addr), asm.R0, asm.DWord))
	g.rangeName(ModuleMap, t, addr, v, g.errorSite(tapset.MsgNoModule, c.Pos, false))
	g.cutName(v)
	return v
}

// cutName ends a name (a symbol's, a comm) copied into scratch value v
// at MAXSTRINGLEN-1 bytes when MAXSTRINGLEN is less than v's width.
func (g *gen) cutName(v value) {
	if g.m.maxStr < v.width {
		g.emit(asm.StoreImm(regScratch, int16(v.off+g.m.maxStr-1), 0, asm.Byte))
	}
}

// rangeName copies into v the name of the range of map mapRef (shaped t)
// holding the address at scratch offset addr, or jumps to none.
func (g *gen) rangeName(mapRef string, t RangeTable, addr int, v value, none string) {
	g.rangeFind(mapRef, t, addr, none)
	for i := 0; i < t.NameLen; i += 8 {
		g.emit(
			asm.LoadMem(asm.R1, asm.R0, int16(16+i), asm.DWord),
			asm.StoreMem(regScratch, int16(v.off+i), asm.R1, asm.DWord),
		)
	}
}

// rangeFind leaves in R0 the element of map mapRef (shaped t) whose range
// holds the address at scratch offset addr, or jumps to none.
func (g *gen) rangeFind(mapRef string, t RangeTable, addr int, none string) {
	cand := g.allocScratch(8)
	g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(regScratch, int16(cand), asm.R1, asm.DWord))
	key := g.pushSlot()
	for step := 1 << (bits.Len(uint(max(t.Count, 1))) - 1); step > 0; step >>= 1 {
		g.rangeStep(mapRef, key, addr, cand, step)
	}
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(cand), asm.DWord),
		asm.StoreMem(asm.R10, key, asm.R1, asm.Word),
	)
	g.emit(emitLookup(mapRef, key, none)...)
	g.emit(
		asm.LoadMem(asm.R2, regScratch, int16(addr), asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JGT.Reg(asm.R1, asm.R2, none),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
		asm.JGE.Reg(asm.R2, asm.R1, none),
	)
	g.popStack(8)
}

// rangeStep is one step of the search: the candidate moves up by step
// when the range there starts at or below the address.
func (g *gen) rangeStep(mapRef string, key int16, addr, cand, step int) {
	next := g.newLabel("symstep")
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(cand), asm.DWord),
		asm.Add.Imm(asm.R1, int32(step)),
		asm.StoreMem(asm.R10, key, asm.R1, asm.Word),
	)
	g.emit(emitLookup(mapRef, key, next)...)
	g.emit(
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.LoadMem(asm.R2, regScratch, int16(addr), asm.DWord),
		asm.JGT.Reg(asm.R1, asm.R2, next),
		asm.LoadMem(asm.R1, regScratch, int16(cand), asm.DWord),
		asm.Add.Imm(asm.R1, int32(step)),
		asm.StoreMem(regScratch, int16(cand), asm.R1, asm.DWord),
	)
	g.mark(next)
}

// hexAddress writes R0 as stap's "0x%016x" and its NUL at off in the
// scratch area, each digit looked up in a table of the sixteen kept in
// the scratch area too (no branch per digit for the verifier to follow).
func (g *gen) hexAddress(off int) {
	digits := g.allocScratch(16)
	for i, eight := range []string{"01234567", "89abcdef"} {
		g.emit(
			asm.LoadImm(asm.R1, int64(binary.NativeEndian.Uint64([]byte(eight))), asm.DWord),
			asm.StoreMem(regScratch, int16(digits+8*i), asm.R1, asm.DWord),
		)
	}
	g.emit(
		asm.StoreImm(regScratch, int16(off), '0', asm.Byte),
		asm.StoreImm(regScratch, int16(off+1), 'x', asm.Byte),
		asm.StoreImm(regScratch, int16(off+18), 0, asm.Byte),
	)
	for i := 0; i < 16; i++ {
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.RSh.Imm(asm.R1, int32(4*(15-i))),
			asm.And.Imm(asm.R1, 15),
			asm.Add.Reg(asm.R1, regScratch),
			asm.LoadMem(asm.R1, asm.R1, int16(digits), asm.Byte),
			asm.StoreMem(regScratch, int16(off+2+i), asm.R1, asm.Byte),
		)
	}
}

// SymbolTable and ModuleTable are the shapes of SymbolMap and ModuleMap
// the programs were compiled for.
func (m *Module) SymbolTable() RangeTable { return m.symtab }
func (m *Module) ModuleTable() RangeTable { return m.modtab }

// CodeTable is the shape of CodeMap the programs were compiled for.
func (m *Module) CodeTable() RangeTable { return m.codetab }

// symbolTable and moduleTable are the shapes of SymbolMap and ModuleMap,
// asked of the driver once.
func (m *Module) symbolTable() RangeTable {
	return askShape(&m.symbols, &m.symtab, m.cfg.KernelSymbols)
}
func (m *Module) moduleTable() RangeTable {
	return askShape(&m.modules, &m.modtab, m.cfg.KernelModules)
}
func (m *Module) codeTable() RangeTable {
	return askShape(&m.code, &m.codetab, m.cfg.KernelCode)
}

// askShape returns *shape, asked of ask (when set) the first time, which
// *used records: a program uses the map.
func askShape(used *bool, shape *RangeTable, ask func() RangeTable) RangeTable {
	if !*used {
		*used = true
		if ask != nil {
			*shape = ask()
		}
	}
	return *shape
}
