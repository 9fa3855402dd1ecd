package debuginfo

import (
	"encoding/binary"
	"fmt"
)

// Kind says how a Location gives its value.
type Kind int

const (
	// Value: the value is register Reg's plus Offset (Reg -1: the
	// constant Offset).
	Value Kind = iota
	// Memory: the value is in memory at register Reg's value plus Offset
	// (Reg -1: at the link-time address Offset, Static).
	Memory
)

// Location is where a variable's value is when a probe fires at one
// address. Registers are DWARF's numbers.
type Location struct {
	Kind   Kind
	Reg    int
	Offset int64
	// Static: a Memory location at a link-time address, which moves with
	// the address a position-independent object is loaded at.
	Static bool
}

// NotHereError says why a variable cannot be read at an address.
type NotHereError struct{ Reason string }

func (e *NotHereError) Error() string { return e.Reason }

func notHere(format string, args ...any) error {
	return &NotHereError{Reason: fmt.Sprintf(format, args...)}
}

// DWARF expression operations bpftap evaluates (DWARF 5, section 7.7.1).
const (
	opAddr         = 0x03
	opDeref        = 0x06
	opConst1u      = 0x08
	opConst1s      = 0x09
	opConst2u      = 0x0a
	opConst2s      = 0x0b
	opConst4u      = 0x0c
	opConst4s      = 0x0d
	opConst8u      = 0x0e
	opConst8s      = 0x0f
	opConstu       = 0x10
	opConsts       = 0x11
	opPlusUconst   = 0x23
	opLit0         = 0x30
	opReg0         = 0x50
	opBreg0        = 0x70
	opRegx         = 0x90
	opFbreg        = 0x91
	opBregx        = 0x92
	opPiece        = 0x93
	opCallFrameCFA = 0x9c
	opImplicitVal  = 0x9e
	opStackValue   = 0x9f
	opEntryValue   = 0xa3
	opGNUEntryVal  = 0xf3
)

// Locate is where v lives when a probe fires at address pc of fn.
func (fn *Function) Locate(v Var, pc uint64) (Location, error) {
	expr, err := fn.expression(v.loc, pc)
	if err != nil {
		return Location{}, err
	}
	return fn.evaluate(expr, pc)
}

// FrameAddress is the canonical frame address at pc of fn, where the
// stack pointer was before the call, as a Value location.
func (fn *Function) FrameAddress(pc uint64) (Location, error) { return fn.file.cfa(pc) }

// frameBase is where fn's frame base is at pc, as a Value location.
func (fn *Function) frameBase(pc uint64) (Location, error) {
	expr, err := fn.expression(fn.frame, pc)
	if err != nil {
		return Location{}, err
	}
	if len(expr) == 1 && expr[0] == opCallFrameCFA {
		return fn.file.cfa(pc)
	}
	loc, err := fn.evaluate(expr, pc)
	if err != nil {
		return Location{}, err
	}
	// a register holds the frame base; a memory location's address is it
	return Location{Kind: Value, Reg: loc.Reg, Offset: loc.Offset}, nil
}

// expression is the expression of l that applies at pc.
func (fn *Function) expression(l location, pc uint64) ([]byte, error) {
	switch {
	case l.expr != nil:
		return l.expr, nil
	case !l.isList:
		return nil, notHere("the compiler left it nowhere (no DW_AT_location)")
	case fn.unit.version >= 5:
		return fn.file.loclists(fn.unit, l.list, pc)
	}
	return fn.file.loc(fn.unit, l.list, pc)
}

// loc finds pc's expression in a DWARF 4 location list (.debug_loc).
func (f *File) loc(u *unit, off int64, pc uint64) ([]byte, error) {
	data := f.sections[".debug_loc"]
	b := &buf{data: data, off: int(off), order: f.order}
	base := u.base
	for b.ok() {
		begin, end := b.addr(f.ptrSize), b.addr(f.ptrSize)
		switch {
		case begin == 0 && end == 0:
			return nil, notHere("the compiler kept it nowhere at %#x", pc)
		case begin == ^uint64(0) || f.ptrSize == 4 && begin == 0xffffffff:
			base = end
			continue
		}
		expr := b.bytes(int(b.u16()))
		if base+begin <= pc && pc < base+end {
			return expr, nil
		}
	}
	return nil, fmt.Errorf("location list at %#x of .debug_loc is cut short", off)
}

// DWARF 5 location list entries (section 7.7.3) and GCC's view pair.
const (
	lleEnd = iota
	lleBaseAddressx
	lleStartxEndx
	lleStartxLength
	lleOffsetPair
	lleDefault
	lleBaseAddress
	lleStartEnd
	lleStartLength
	lleGNUViewPair
)

// loclists finds pc's expression in a DWARF 5 location list
// (.debug_loclists).
func (f *File) loclists(u *unit, off int64, pc uint64) ([]byte, error) {
	b := &buf{data: f.sections[".debug_loclists"], off: int(off), order: f.order}
	base := u.base
	var fallback []byte
	for b.ok() {
		var start, end uint64
		switch kind := b.u8(); kind {
		case lleEnd:
			if fallback != nil {
				return fallback, nil
			}
			return nil, notHere("the compiler kept it nowhere at %#x", pc)
		case lleBaseAddressx:
			base = f.debugAddr(u, b.uleb())
			continue
		case lleBaseAddress:
			base = b.addr(f.ptrSize)
			continue
		case lleGNUViewPair:
			b.uleb()
			b.uleb()
			continue
		case lleStartxEndx:
			start, end = f.debugAddr(u, b.uleb()), f.debugAddr(u, b.uleb())
		case lleStartxLength:
			start = f.debugAddr(u, b.uleb())
			end = start + b.uleb()
		case lleOffsetPair:
			start, end = base+b.uleb(), base+b.uleb()
		case lleDefault:
			fallback = b.bytes(int(b.uleb()))
			continue
		case lleStartEnd:
			start, end = b.addr(f.ptrSize), b.addr(f.ptrSize)
		case lleStartLength:
			start = b.addr(f.ptrSize)
			end = start + b.uleb()
		default:
			return nil, fmt.Errorf("location list at %#x of .debug_loclists: unknown entry kind %#x", off, kind)
		}
		expr := b.bytes(int(b.uleb()))
		switch {
		case start <= pc && pc < end:
			return expr, nil
		case start == pc && end == pc && fallback == nil:
			// an empty range at pc: GCC's location views, states of the
			// source at one address (an inlined copy's entry), where the
			// machine's state, and so the value's place, is the same
			fallback = expr
		}
	}
	return nil, fmt.Errorf("location list at %#x of .debug_loclists is cut short", off)
}

// debugAddr is entry i of u's addresses in .debug_addr.
func (f *File) debugAddr(u *unit, i uint64) uint64 {
	b := &buf{data: f.sections[".debug_addr"], off: int(u.addrBase + i*uint64(f.ptrSize)), order: f.order}
	return b.addr(f.ptrSize)
}

// term is an entry of the expression stack: register reg's value (-1:
// none) plus off.
type term struct {
	reg    int
	off    int64
	static bool
}

// evaluate runs expr at pc as far as bpftap can: a location whose value
// is a register plus a constant, or in memory at such an address.
func (fn *Function) evaluate(expr []byte, pc uint64) (Location, error) {
	b := &buf{data: expr, order: fn.file.order}
	var stack []term
	push := func(t term) { stack = append(stack, t) }
	for b.ok() {
		op := b.u8()
		switch {
		case op >= opLit0 && op < opLit0+32:
			push(term{reg: -1, off: int64(op - opLit0)})
		case op >= opReg0 && op < opReg0+32 || op == opRegx:
			reg := int(op - opReg0)
			if op == opRegx {
				reg = int(b.uleb())
			}
			if b.ok() && !wholePiece(b) {
				return Location{}, notHere("the compiler keeps it in pieces here")
			}
			return Location{Kind: Value, Reg: reg}, nil
		case op >= opBreg0 && op < opBreg0+32:
			push(term{reg: int(op - opBreg0), off: b.sleb()})
		case op == opBregx:
			reg := int(b.uleb())
			push(term{reg: reg, off: b.sleb()})
		case op == opFbreg:
			off := b.sleb()
			fb, err := fn.frameBase(pc)
			if err != nil {
				return Location{}, fmt.Errorf("its frame base: %w", err)
			}
			push(term{reg: fb.Reg, off: fb.Offset + off})
		case op == opCallFrameCFA:
			cfa, err := fn.file.cfa(pc)
			if err != nil {
				return Location{}, err
			}
			push(term{reg: cfa.Reg, off: cfa.Offset})
		case op == opAddr:
			push(term{reg: -1, off: int64(b.addr(fn.file.ptrSize)), static: true})
		case op >= opConst1u && op <= opConsts:
			push(term{reg: -1, off: b.constant(op)})
		case op == opPlusUconst:
			if len(stack) == 0 {
				return Location{}, notHere("a malformed location expression")
			}
			stack[len(stack)-1].off += int64(b.uleb())
		case op == opStackValue:
			if len(stack) != 1 || b.ok() {
				return Location{}, notHere("a computed value bpftap cannot evaluate")
			}
			return Location{Kind: Value, Reg: stack[0].reg, Offset: stack[0].off}, nil
		case op == opEntryValue || op == opGNUEntryVal:
			inner := b.bytes(int(b.uleb()))
			if pc != fn.codeStart() || len(inner) != 1 || inner[0] < opReg0 || inner[0] >= opReg0+32 {
				return Location{}, notHere("the compiler kept only its value at the function's entry (DW_OP_entry_value), not where it is at %#x", pc)
			}
			push(term{reg: int(inner[0] - opReg0)}) // at the entry, the register still holds it
		case op == opPiece:
			return Location{}, notHere("the compiler keeps it in pieces here")
		case op == opImplicitVal:
			return Location{}, notHere("the compiler keeps it as an implicit value")
		default:
			return Location{}, notHere("a location expression with DW_OP %#x, which bpftap does not evaluate", op)
		}
	}
	if len(stack) != 1 {
		return Location{}, notHere("a location expression bpftap cannot evaluate")
	}
	t := stack[0]
	if t.static && t.reg != -1 {
		return Location{}, notHere("a location expression bpftap cannot evaluate")
	}
	return Location{Kind: Memory, Reg: t.reg, Offset: t.off, Static: t.static}, nil
}

// wholePiece tells whether what remains of a register location is one
// DW_OP_piece (the whole value in that register).
func wholePiece(b *buf) bool {
	if b.u8() != opPiece {
		return false
	}
	b.uleb()
	return !b.ok()
}

// buf reads the encodings of DWARF and .eh_frame; reading past the end
// yields zeros and leaves it not ok.
type buf struct {
	data  []byte
	off   int
	order binary.ByteOrder
	bad   bool
}

func (b *buf) ok() bool { return !b.bad && b.off < len(b.data) }

func (b *buf) bytes(n int) []byte {
	if n < 0 || b.off+n > len(b.data) {
		b.bad, b.off = true, len(b.data)
		return nil
	}
	out := b.data[b.off : b.off+n]
	b.off += n
	return out
}

func (b *buf) u8() uint8 {
	if s := b.bytes(1); s != nil {
		return s[0]
	}
	return 0
}

func (b *buf) u16() uint16 {
	if s := b.bytes(2); s != nil {
		return b.order.Uint16(s)
	}
	return 0
}

func (b *buf) u32() uint32 {
	if s := b.bytes(4); s != nil {
		return b.order.Uint32(s)
	}
	return 0
}

func (b *buf) u64() uint64 {
	if s := b.bytes(8); s != nil {
		return b.order.Uint64(s)
	}
	return 0
}

func (b *buf) addr(size int) uint64 {
	if size == 4 {
		return uint64(b.u32())
	}
	return b.u64()
}

func (b *buf) uleb() uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		c := b.u8()
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

func (b *buf) sleb() int64 {
	var v int64
	shift := 0
	for {
		c := b.u8()
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

// constant reads the operand of a DW_OP_const* operation.
func (b *buf) constant(op byte) int64 {
	switch op {
	case opConst1u:
		return int64(b.u8())
	case opConst1s:
		return int64(int8(b.u8()))
	case opConst2u:
		return int64(b.u16())
	case opConst2s:
		return int64(int16(b.u16()))
	case opConst4u:
		return int64(b.u32())
	case opConst4s:
		return int64(int32(b.u32()))
	case opConst8u, opConst8s:
		return int64(b.u64())
	case opConstu:
		return int64(b.uleb())
	}
	return b.sleb()
}
