package debuginfo

import (
	"encoding/binary"
	"fmt"
)

// cfa is the rule for the canonical frame address at pc, as the
// program's .eh_frame gives it (or, without one, the debug file's
// .debug_frame, as a kernel's vmlinux has it): a register's value plus an
// offset. Only the rules a CFA takes matter here; the other registers'
// are skipped. The two sections differ in a few fields: .debug_frame
// marks a CIE by the id 0xffffffff (.eh_frame: 0), an FDE points at its
// CIE by offset from the section's start (.eh_frame: back from the
// pointer), its addresses are absolute, and version 4 CIEs give the
// address and segment sizes.
func (f *File) cfa(pc uint64) (Location, error) {
	fde, cie, err := f.frameEntry(pc)
	if err != nil {
		return Location{}, err
	}
	state := cfaRule{reg: -1}
	if err := cie.run(cie.instructions, &state, ^uint64(0)); err != nil {
		return Location{}, err
	}
	if err := cie.run(fde.instructions, &state, pc-fde.begin); err != nil {
		return Location{}, err
	}
	if state.reg < 0 {
		return Location{}, notHere("the call frame information at %#x gives its frame by an expression, which bpftap does not evaluate", pc)
	}
	return Location{Kind: Value, Reg: state.reg, Offset: state.off}, nil
}

type cfaRule struct {
	reg int
	off int64
}

type cie struct {
	order        binary.ByteOrder // of the instructions' operands
	codeAlign    uint64
	dataAlign    int64
	encoding     byte // of the FDEs' addresses
	augmented    bool // 'z': the FDEs have augmentation data
	instructions []byte
}

type fde struct {
	begin, end   uint64
	instructions []byte
}

// frameEntry finds the FDE that covers pc, and its CIE.
func (f *File) frameEntry(pc uint64) (*fde, *cie, error) {
	data := f.frames
	for off := 0; off+4 <= len(data); {
		b := &buf{data: data, off: off, order: f.order}
		length := uint64(b.u32())
		if length == 0 {
			break
		}
		if length == 0xffffffff {
			return nil, nil, fmt.Errorf("%s: 64-bit %s records are not read", f.Path, f.framesName())
		}
		next := b.off + int(length)
		idAt := b.off
		id := b.u32()
		if id != f.cieID() && next <= len(data) {
			cieAt := idAt - int(id)
			if f.debugFrame {
				cieAt = int(id)
			}
			c, err := f.parseCIE(cieAt)
			if err != nil {
				return nil, nil, err
			}
			e := &fde{}
			e.begin = f.encoded(b, c.encoding)
			e.end = e.begin + f.encoded(b, c.encoding&0x0f)
			if c.augmented {
				b.bytes(int(b.uleb()))
			}
			if e.begin <= pc && pc < e.end {
				e.instructions = data[b.off:next]
				return e, c, nil
			}
		}
		off = next
	}
	return nil, nil, notHere("the call frame information of %s (%s) does not cover %#x", f.Path, f.framesName(), pc)
}

// cieID marks a CIE in the call frame section.
func (f *File) cieID() uint32 {
	if f.debugFrame {
		return 0xffffffff
	}
	return 0
}

func (f *File) framesName() string {
	if f.debugFrame {
		return ".debug_frame"
	}
	return ".eh_frame"
}

// parseCIE reads the CIE whose length field is at off.
func (f *File) parseCIE(off int) (*cie, error) {
	b := &buf{data: f.frames, off: off, order: f.order}
	length := int(b.u32())
	end := b.off + length
	if b.u32() != f.cieID() || end > len(f.frames) {
		return nil, fmt.Errorf("%s: malformed %s CIE at %#x", f.Path, f.framesName(), off)
	}
	version := b.u8()
	var aug []byte
	for b.ok() {
		c := b.u8()
		if c == 0 {
			break
		}
		aug = append(aug, c)
	}
	c := &cie{order: f.order}
	if f.debugFrame && version >= 4 {
		b.u8() // address size
		b.u8() // segment size
	}
	c.codeAlign, c.dataAlign = b.uleb(), b.sleb()
	if version == 1 {
		b.u8()
	} else {
		b.uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		c.augmented = true
		augEnd := int(b.uleb()) + b.off
		for _, a := range aug[1:] {
			switch a {
			case 'R':
				c.encoding = b.u8()
			case 'P':
				f.encoded(b, b.u8())
			case 'L':
				b.u8()
			}
		}
		b.off = augEnd
	}
	if b.off > end {
		return nil, fmt.Errorf("%s: malformed %s CIE at %#x", f.Path, f.framesName(), off)
	}
	c.instructions = f.frames[b.off:end]
	return c, nil
}

// encoded reads a pointer in .eh_frame's encoding enc (DW_EH_PE_*).
func (f *File) encoded(b *buf, enc byte) uint64 {
	if enc == 0xff { // DW_EH_PE_omit
		return 0
	}
	at := f.framesAt + uint64(b.off)
	var v uint64
	switch enc & 0x0f {
	case 0x00:
		v = b.addr(f.ptrSize)
	case 0x01:
		v = b.uleb()
	case 0x02:
		v = uint64(b.u16())
	case 0x03:
		v = uint64(b.u32())
	case 0x04:
		v = b.u64()
	case 0x09:
		v = uint64(b.sleb())
	case 0x0a:
		v = uint64(int64(int16(b.u16())))
	case 0x0b:
		v = uint64(int64(int32(b.u32())))
	case 0x0c:
		v = b.u64()
	}
	if enc&0x70 == 0x10 { // DW_EH_PE_pcrel
		v += at
	}
	return v
}

// Call frame instructions (DWARF 5, section 6.4.2) that set the CFA or
// take operands to skip.
const (
	cfaAdvanceLoc       = 0x40
	cfaOffset           = 0x80
	cfaRestore          = 0xc0
	cfaSetLoc           = 0x01
	cfaAdvanceLoc1      = 0x02
	cfaAdvanceLoc2      = 0x03
	cfaAdvanceLoc4      = 0x04
	cfaOffsetExtended   = 0x05
	cfaRestoreExtended  = 0x06
	cfaUndefined        = 0x07
	cfaSameValue        = 0x08
	cfaRegister         = 0x09
	cfaRememberState    = 0x0a
	cfaRestoreState     = 0x0b
	cfaDefCFA           = 0x0c
	cfaDefCFARegister   = 0x0d
	cfaDefCFAOffset     = 0x0e
	cfaDefCFAExpression = 0x0f
	cfaExpression       = 0x10
	cfaOffsetExtendedSF = 0x11
	cfaDefCFASF         = 0x12
	cfaDefCFAOffsetSF   = 0x13
	cfaValOffset        = 0x14
	cfaValOffsetSF      = 0x15
	cfaValExpression    = 0x16
	cfaGNUArgsSize      = 0x2e
	cfaGNUNegOffsetExt  = 0x2f
	cfaAArch64NegateRA  = 0x2d
)

// run executes instructions on state up to the row of the address
// distance bytes after the FDE's start (a CIE's: all of them).
func (c *cie) run(instructions []byte, state *cfaRule, distance uint64) error {
	b := &buf{data: instructions, order: c.order}
	var loc uint64
	var saved []cfaRule
	advance := func(delta uint64) bool {
		loc += delta * c.codeAlign
		return loc > distance
	}
	for b.ok() {
		op := b.u8()
		switch op & 0xc0 {
		case cfaAdvanceLoc:
			if advance(uint64(op & 0x3f)) {
				return nil
			}
			continue
		case cfaOffset:
			b.uleb()
			continue
		case cfaRestore:
			continue
		}
		var stop bool
		switch op {
		case cfaAdvanceLoc1:
			stop = advance(uint64(b.u8()))
		case cfaAdvanceLoc2:
			stop = advance(uint64(b.u16()))
		case cfaAdvanceLoc4:
			stop = advance(uint64(b.u32()))
		case cfaSetLoc:
			return fmt.Errorf("DW_CFA_set_loc in .eh_frame is not read")
		case cfaOffsetExtended, cfaRegister, cfaValOffset:
			b.uleb()
			b.uleb()
		case cfaOffsetExtendedSF, cfaValOffsetSF, cfaGNUNegOffsetExt:
			b.uleb()
			b.sleb()
		case cfaRestoreExtended, cfaUndefined, cfaSameValue, cfaGNUArgsSize:
			b.uleb()
		case cfaRememberState:
			saved = append(saved, *state)
		case cfaRestoreState:
			if len(saved) > 0 {
				*state, saved = saved[len(saved)-1], saved[:len(saved)-1]
			}
		case cfaDefCFA:
			state.reg, state.off = int(b.uleb()), int64(b.uleb())
		case cfaDefCFASF:
			state.reg, state.off = int(b.uleb()), b.sleb()*c.dataAlign
		case cfaDefCFARegister:
			state.reg = int(b.uleb())
		case cfaDefCFAOffset:
			state.off = int64(b.uleb())
		case cfaDefCFAOffsetSF:
			state.off = b.sleb() * c.dataAlign
		case cfaDefCFAExpression:
			b.bytes(int(b.uleb()))
			state.reg = -1
		case cfaExpression, cfaValExpression:
			b.uleb()
			b.bytes(int(b.uleb()))
		case 0, cfaAArch64NegateRA: // DW_CFA_nop
		default:
			return fmt.Errorf("unknown call frame instruction %#x", op)
		}
		if stop {
			return nil
		}
	}
	return nil
}
