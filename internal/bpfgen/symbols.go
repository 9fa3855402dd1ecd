package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// symname(addr) in a kernel probe. The name of the function holding a
// kernel address is found in the kernel, so that a script can keep it
// (`profile[symname(addr())] <<< 1` counts samples per function there),
// and made text in user space. SymbolMap holds the kernel's text symbols
// in address order (package ksym: each symbol's start and end), filled
// at load; a binary search of power-of-two steps (unrolled, the
// candidate kept in the scratch area so that every step's paths meet in
// one verifier state) finds the last symbol starting at or below addr.
// The value is a symbol token, an ordinary kernel string like a stack
// token (stacks.go):
//
//	ESC, 'S', 'F' and the symbol's start, or 'N' and addr itself (no symbol
//	holds it), in eleven 6-bit digits each offset by '@', NUL
//
// so that every address of a function gives the same string. User space
// replaces a token by the name (or the address in hex) wherever it reads
// a string the kernel made, inside a longer string too (kernelside).

// SymbolMap is the name programs reference the kernel's symbols by.
const SymbolMap = "ksyms"

// SymbolSize is the size of an element of SymbolMap: the start and the
// end (exclusive) of a symbol.
const SymbolSize = 16

// symbolSteps bounds the search: up to 2^symbolSteps symbols.
const symbolSteps = 21

const (
	symbolForm     = 'S'
	symbolFound    = 'F'
	symbolNotFound = 'N'
	symbolDigits   = 11
	symbolTokenLen = 3 + symbolDigits
)

func symbolMapSpec(n int) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: "ksyms", Type: ebpf.Array, KeySize: 4, ValueSize: SymbolSize,
		MaxEntries: uint32(max(n, 1)), Flags: bpfRdonlyProg}
}

// bpfRdonlyProg is BPF_F_RDONLY_PROG: programs only read the map.
const bpfRdonlyProg = 1 << 7

// symname compiles symname(addr) to a symbol token.
func (g *gen) symname(c *syntax.Call) value {
	return g.symbolToken(func() { g.long(c.Args[0]) })
}

// symbolToken compiles the symbol token of the address addr leaves in R0.
func (g *gen) symbolToken(addr0 func()) value {
	g.m.symbols = true
	v := g.strSlot(symbolTokenLen + 1)
	addr, cand := g.allocScratch(8), g.allocScratch(8)
	addr0()
	g.emit(
		asm.StoreMem(regScratch, int16(addr), asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(regScratch, int16(cand), asm.R1, asm.DWord),
		asm.StoreImm(regScratch, int16(v.off), tokenMark, asm.Byte),
		asm.StoreImm(regScratch, int16(v.off+1), symbolForm, asm.Byte),
		asm.StoreImm(regScratch, int16(v.off+symbolTokenLen), 0, asm.Byte),
	)
	key := g.pushSlot()
	for step := 1 << (symbolSteps - 1); step > 0; step >>= 1 {
		g.symbolStep(key, addr, cand, step)
	}
	none, done := g.newLabel("nosym"), g.newLabel("sym")
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(cand), asm.DWord),
		asm.StoreMem(asm.R10, key, asm.R1, asm.Word),
	)
	g.emit(emitLookup(SymbolMap, key, none)...)
	g.emit(
		asm.LoadMem(asm.R2, regScratch, int16(addr), asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JGT.Reg(asm.R1, asm.R2, none),
		asm.LoadMem(asm.R3, asm.R0, 8, asm.DWord),
		asm.JGE.Reg(asm.R2, asm.R3, none),
		asm.Mov.Reg(asm.R0, asm.R1),
		asm.StoreImm(regScratch, int16(v.off+2), symbolFound, asm.Byte),
		asm.Ja.Label(done),
	)
	g.mark(none)
	g.emit(
		asm.LoadMem(asm.R0, regScratch, int16(addr), asm.DWord),
		asm.StoreImm(regScratch, int16(v.off+2), symbolNotFound, asm.Byte),
	)
	g.mark(done)
	g.tokenDigits(v.off+3, symbolDigits)
	g.popStack(8)
	return v
}

// symbolStep is one step of the search: the candidate moves up by step
// when the symbol there starts at or below the address.
func (g *gen) symbolStep(key int16, addr, cand, step int) {
	next := g.newLabel("symstep")
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(cand), asm.DWord),
		asm.Add.Imm(asm.R1, int32(step)),
		asm.StoreMem(asm.R10, key, asm.R1, asm.Word),
	)
	g.emit(emitLookup(SymbolMap, key, next)...)
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

// tokenDigits writes R0 as n 6-bit digits, least significant first, each
// offset by '@', at off in the scratch area.
func (g *gen) tokenDigits(off, n int) {
	for i := 0; i < n; i++ {
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.RSh.Imm(asm.R1, int32(6*i)),
			asm.And.Imm(asm.R1, 63),
			asm.Add.Imm(asm.R1, '@'),
			asm.StoreMem(regScratch, int16(off+i), asm.R1, asm.Byte),
		)
	}
}

// ParseSymbolToken recognizes a symbol token at the start of s: the
// symbol's start address (found) or the address no symbol holds.
func ParseSymbolToken(s string) (addr uint64, found, ok bool) {
	if len(s) < symbolTokenLen || s[0] != tokenMark || s[1] != symbolForm {
		return 0, false, false
	}
	for i := symbolDigits - 1; i >= 0; i-- {
		addr = addr<<6 | uint64(s[3+i]-'@')&63
	}
	return addr, s[2] == symbolFound, true
}

// TokenLen is the length of the token (stack or symbol) s starts with, 0
// when it starts with none.
func TokenLen(s string) int {
	if len(s) < 2 || s[0] != tokenMark {
		return 0
	}
	var n int
	switch f := StackForm(s[1]); f {
	case KernelHex, KernelText, UserHex, UserText:
		n = tokenLen(f)
	case symbolForm:
		n = symbolTokenLen
	}
	if len(s) < n {
		return 0
	}
	return n
}
