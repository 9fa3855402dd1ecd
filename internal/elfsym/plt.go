package elfsym

import (
	"debug/elf"
)

// PLT stubs. A call to a function of another object goes through a stub
// of the caller's procedure linkage table, one per function, which jumps
// where the function's GOT slot says. process("P").plt("NAME") probes the
// stubs of P, each named after the function it calls: the symbol of the
// stub's R_X86_64_JUMP_SLOT relocation in .rela.plt. On x86-64 the stubs
// are 16 bytes each, in the order of the GOT slots they jump through
// (.got.plt, after its three reserved words), which each relocation
// names: in .plt.sec when the file has one (IBT-enabled links put the
// stubs there), else in .plt after its 16-byte header. (Relocations come
// in slot order in most files, but not in glibc's, whose stubs of
// indirect functions, R_X86_64_IRELATIVE, are relocated after the others
// while their slots lie among them.) Other machines have no stubs here.

// pltEntrySize is the size of an x86-64 PLT stub and of .plt's header.
const pltEntrySize = 16

// gotReserved is the number of words .got.plt reserves before the slots
// of the stubs (the dynamic section's address, and two for the loader).
const gotReserved = 3

// relaSize is the size of an Elf64_Rela: offset, info, addend.
const relaSize = 24

// pltStubs returns the PLT stubs of f as functions named after the
// functions they call, their offsets in the file through loads.
func pltStubs(f *elf.File, loads []*elf.Prog) []Func {
	rela, plt, got := f.Section(".rela.plt"), f.Section(".plt.sec"), f.Section(".got.plt")
	first := uint64(0)
	if plt == nil {
		plt, first = f.Section(".plt"), 1
	}
	if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 || rela == nil || plt == nil || got == nil {
		return nil
	}
	data, err := rela.Data()
	syms, serr := f.DynamicSymbols()
	if err != nil || serr != nil {
		return nil
	}
	var stubs []Func
	for i := 0; i+relaSize <= len(data); i += relaSize {
		slot, info := f.ByteOrder.Uint64(data[i:]), f.ByteOrder.Uint64(data[i+8:])
		sym := info >> 32
		if elf.R_X86_64(info&0xffffffff) != elf.R_X86_64_JMP_SLOT || sym == 0 || int(sym) > len(syms) ||
			slot < got.Addr+gotReserved*8 {
			continue
		}
		addr := plt.Addr + (first+(slot-got.Addr)/8-gotReserved)*pltEntrySize
		if off, ok := fileOffset(loads, addr); ok && addr < plt.Addr+plt.Size {
			stubs = append(stubs, Func{Name: syms[sym-1].Name, Addr: addr, Offset: off, Size: pltEntrySize})
		}
	}
	return stubs
}
