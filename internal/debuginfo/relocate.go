package debuginfo

import (
	"cmp"
	"debug/elf"
	"fmt"
	"slices"
)

// A kernel module's debug file is a relocatable object (ET_REL): each of
// its sections starts at address 0, and its DWARF refers to code and data
// by relocations against the sections' symbols. So that one address names
// one place, as in a linked file, layout places the allocated sections one
// after the other, as a linker would, and the DWARF sections are read with
// their relocations applied against those places (Go's reader would apply
// them against 0, leaving .text's and .init.text's addresses the same).
// A function's entry and a line's address are then in the same space, and
// their difference is the offset a kprobe on the function's symbol takes;
// a global's place in the running module is its section's, as
// /sys/module/NAME/sections gives it, plus its offset there (SectionAt).

// layoutBase is where layout places the first section: no address is 0,
// which the symbol table's readers take for "none".
const layoutBase = 0x1000

// placedSection is an allocated section of a relocatable object, where
// layout put it.
type placedSection struct {
	name        string
	start, size uint64
}

// layout is where the allocated sections of a relocatable object are
// placed: base by section index (0 for the others).
type layout struct {
	base     map[elf.SectionIndex]uint64
	sections []placedSection // by address
}

// layOut places e's allocated sections, each at its alignment.
func layOut(e *elf.File) *layout {
	l := &layout{base: map[elf.SectionIndex]uint64{}}
	next := uint64(layoutBase)
	for i, s := range e.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 {
			continue
		}
		if align := max(s.Addralign, 1); next%align != 0 {
			next += align - next%align
		}
		l.base[elf.SectionIndex(i)] = next
		l.sections = append(l.sections, placedSection{name: s.Name, start: next, size: s.Size})
		next += s.Size
	}
	return l
}

// addr is where the layout places the symbol's value.
func (l *layout) addr(sym elf.Symbol) uint64 {
	return sym.Value + l.base[sym.Section]
}

// relocated is the named section of e with its relocations (SHT_RELA
// sections whose Info is its index) applied against the layout: nil if e
// has no such section.
func (l *layout) relocated(e *elf.File, name string) ([]byte, error) {
	target := -1
	for i, s := range e.Sections {
		if s.Name == name && s.Type != elf.SHT_NOBITS {
			target = i
		}
	}
	if target < 0 {
		return nil, nil
	}
	data, err := e.Sections[target].Data()
	if err != nil {
		return nil, err
	}
	var syms []elf.Symbol
	for _, s := range e.Sections {
		switch {
		case int(s.Info) != target || s.Type != elf.SHT_RELA && s.Type != elf.SHT_REL:
			continue
		case s.Type == elf.SHT_REL:
			return nil, fmt.Errorf("%s: relocations without addends (SHT_REL) are not read", s.Name)
		}
		if syms == nil {
			if syms, err = e.Symbols(); err != nil {
				return nil, err
			}
		}
		rela, err := s.Data()
		if err != nil {
			return nil, err
		}
		if err := l.apply(e, data, rela, syms); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	return data, nil
}

// apply applies the relocations rela (Elf64_Rela entries) to data.
func (l *layout) apply(e *elf.File, data, rela []byte, syms []elf.Symbol) error {
	if e.Class != elf.ELFCLASS64 {
		return fmt.Errorf("bpftap relocates 64-bit objects only")
	}
	order := e.ByteOrder
	for ; len(rela) >= 24; rela = rela[24:] {
		off, info, addend := order.Uint64(rela), order.Uint64(rela[8:]), int64(order.Uint64(rela[16:]))
		symIndex, typ := info>>32, uint32(info)
		size := relocationSize(e.Machine, typ)
		switch {
		case size < 0:
			return fmt.Errorf("relocation type %d of %s is not one DWARF uses", typ, e.Machine)
		case size == 0 || symIndex == 0:
			continue
		case symIndex > uint64(len(syms)):
			return fmt.Errorf("relocation at %#x names symbol %d of %d", off, symIndex, len(syms))
		case off > uint64(len(data)) || uint64(len(data))-off < uint64(size):
			return fmt.Errorf("relocation at %#x past the section's end", off)
		}
		sym := syms[symIndex-1] // Symbols leaves out the null symbol
		if sym.Section == elf.SHN_UNDEF {
			continue
		}
		value := uint64(int64(l.addr(sym)) + addend)
		if size == 8 {
			order.PutUint64(data[off:], value)
		} else {
			order.PutUint32(data[off:], uint32(value))
		}
	}
	return nil
}

// relocationSize is how many bytes a relocation of type typ writes: 8 or
// 4 for the absolute ones DWARF sections take, 0 for none, -1 for any
// other.
func relocationSize(machine elf.Machine, typ uint32) int {
	switch {
	case machine == elf.EM_X86_64 && typ == uint32(elf.R_X86_64_64),
		machine == elf.EM_AARCH64 && typ == uint32(elf.R_AARCH64_ABS64):
		return 8
	case machine == elf.EM_X86_64 && (typ == uint32(elf.R_X86_64_32) || typ == uint32(elf.R_X86_64_32S)),
		machine == elf.EM_AARCH64 && typ == uint32(elf.R_AARCH64_ABS32):
		return 4
	case typ == 0: // R_X86_64_NONE, R_AARCH64_NONE
		return 0
	}
	return -1
}

// SectionAt is the allocated section of a module's debug file that holds
// the address addr (as the layout placed it), and addr's offset in it:
// the running module's section of that name (/sys/module/NAME/sections)
// holds the same thing at that offset. ok is false for a linked file.
func (f *File) SectionAt(addr uint64) (name string, offset uint64, ok bool) {
	if f.layout == nil {
		return "", 0, false
	}
	s := f.layout.sections
	i, found := slices.BinarySearchFunc(s, addr, func(p placedSection, addr uint64) int { return cmp.Compare(p.start, addr) })
	if !found {
		i--
	}
	if i < 0 || addr >= s[i].start+max(s[i].size, 1) {
		return "", 0, false
	}
	return s[i].name, addr - s[i].start, true
}
