package usdt

import (
	"debug/elf"
	"fmt"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/probes/attach"
)

// Reg is a general-purpose register, or a part of one: x86-64's (below)
// or arm64's (arm64.go).
type Reg struct {
	Name string
	// Slot is the offset in struct pt_regs of the 64-bit register it is
	// part of.
	Slot int
	// Size is its width in bytes; High: it is bits 8-15 (%ah).
	Size int
	High bool
}

// The slots of struct pt_regs on x86-64 (package arch).
var (
	slot    = func(name string) int { return arch.X86_64.Registers[name].Offset }
	slotAX  = slot("rax")
	slotBX  = slot("rbx")
	slotCX  = slot("rcx")
	slotDX  = slot("rdx")
	slotSI  = slot("rsi")
	slotDI  = slot("rdi")
	slotBP  = slot("rbp")
	slotSP  = slot("rsp")
	slotIP  = slot("rip")
	slotR8  = slot("r8")
	slotR9  = slot("r9")
	slotR10 = slot("r10")
	slotR11 = slot("r11")
	slotR12 = slot("r12")
	slotR13 = slot("r13")
	slotR14 = slot("r14")
	slotR15 = slot("r15")
)

// RIP is %rip, the base of a rip-relative address.
var RIP = &Reg{Name: "rip", Slot: slotIP, Size: 8}

// registers are the general-purpose registers by name, every width.
var registers = func() map[string]*Reg {
	m := map[string]*Reg{}
	add := func(name string, slot, size int, high bool) {
		m[name] = &Reg{Name: name, Slot: slot, Size: size, High: high}
	}
	legacy := []struct {
		slot                 int
		q, d, w, b, highByte string
	}{
		{slotAX, "rax", "eax", "ax", "al", "ah"},
		{slotBX, "rbx", "ebx", "bx", "bl", "bh"},
		{slotCX, "rcx", "ecx", "cx", "cl", "ch"},
		{slotDX, "rdx", "edx", "dx", "dl", "dh"},
		{slotSI, "rsi", "esi", "si", "sil", ""},
		{slotDI, "rdi", "edi", "di", "dil", ""},
		{slotBP, "rbp", "ebp", "bp", "bpl", ""},
		{slotSP, "rsp", "esp", "sp", "spl", ""},
	}
	for _, r := range legacy {
		add(r.q, r.slot, 8, false)
		add(r.d, r.slot, 4, false)
		add(r.w, r.slot, 2, false)
		add(r.b, r.slot, 1, false)
		if r.highByte != "" {
			add(r.highByte, r.slot, 1, true)
		}
	}
	numbered := []int{slotR8, slotR9, slotR10, slotR11, slotR12, slotR13, slotR14, slotR15}
	for i, slot := range numbered {
		name := fmt.Sprintf("r%d", 8+i)
		add(name, slot, 8, false)
		add(name+"d", slot, 4, false)
		add(name+"w", slot, 2, false)
		add(name+"b", slot, 1, false)
		add(name+"l", slot, 1, false) // Intel's name for the low byte
	}
	return m
}()

// Loc says where a uprobe program on p, whose context is struct pt_regs,
// finds argument a of p.
func (f *File) Loc(p *Probe, a Arg) (attach.Loc, error) {
	op := a.Operand
	switch op.Kind {
	case Register:
		return registerLoc(op.Reg, a), nil
	case Immediate:
		if op.Symbol == "" {
			return attach.Loc{Const: true, Value: extend(op.Disp, a.Size, a.Signed), Size: a.Size, Signed: a.Signed}, nil
		}
		addr, err := f.address(p, a)
		return attach.Loc{User: addr, Address: true, Size: 8}, err
	}
	addr, err := f.address(p, a)
	return attach.Loc{User: addr, Size: a.Size, Signed: a.Signed}, err
}

// registerLoc loads a register operand: the argument's bytes of it, the
// register's own width when that is narrower (a 32-bit register's upper
// half is zero).
func registerLoc(r *Reg, a Arg) attach.Loc {
	loc := attach.Loc{Offset: r.Slot, Size: min(a.Size, r.Size), Signed: a.Signed && a.Size <= r.Size}
	if r.High {
		loc.Offset++
	}
	return loc
}

// address is the run-time address of a memory operand, or of an
// immediate symbol: its registers as terms, its displacement, and its
// symbol's link-time address plus the load bias, which is 0 in a non-PIE
// executable and regs->ip minus the marker's pc in PIE code (package
// comment).
func (f *File) address(p *Probe, a Arg) (*attach.UserAddr, error) {
	op := a.Operand
	addr := &attach.UserAddr{Disp: op.Disp}
	if op.Reg != nil && op.Reg != RIP {
		addr.Terms = append(addr.Terms, attach.RegTerm{Offset: op.Reg.Slot, Scale: 1})
	}
	if op.Index != nil {
		addr.Terms = append(addr.Terms, attach.RegTerm{Offset: op.Index.Slot, Scale: op.Scale})
	}
	if op.Symbol == "" {
		return addr, nil
	}
	sym, ok := f.symbols[op.Symbol]
	switch {
	case !ok:
		return nil, &ArgError{a.operandText(), fmt.Sprintf("symbol %s is not in the symbol tables of %s", op.Symbol, f.Path)}
	case sym == ambiguous:
		return nil, &ArgError{a.operandText(), fmt.Sprintf("%s has several symbols called %s", f.Path, op.Symbol)}
	case f.Type == elf.ET_DYN:
		addr.Disp += int64(sym - p.PC)
		addr.Terms = append(addr.Terms, attach.RegTerm{Offset: slotIP, Scale: 1})
	default:
		addr.Disp += int64(sym)
	}
	return addr, nil
}

// extend cuts v to size bytes, sign- or zero-extended.
func extend(v int64, size int, signed bool) int64 {
	bits := uint(64 - 8*size)
	if signed {
		return v << bits >> bits
	}
	return int64(uint64(v) << bits >> bits)
}
