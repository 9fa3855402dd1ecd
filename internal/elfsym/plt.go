package elfsym

import (
	"debug/elf"
)

// PLT stubs. A call to a function of another object goes through a stub
// of the caller's procedure linkage table, one per function, which jumps
// where the function's GOT slot says. process("P").plt("NAME") probes the
// stubs of P, each named after the function it calls: the symbol of the
// stub's R_X86_64_JUMP_SLOT relocation in .rela.plt. On x86-64 the stubs
// are 16 bytes each, in the order of those relocations: in .plt.sec when
// the file has one (IBT-enabled links put the stubs there), else in .plt
// after its 16-byte header. Other machines have no stubs here.

// pltEntrySize is the size of an x86-64 PLT stub and of .plt's header.
const pltEntrySize = 16

// relaSize is the size of an Elf64_Rela: offset, info, addend.
const relaSize = 24

// pltStubs returns the PLT stubs of f as functions named after the
// functions they call, their offsets in the file through loads.
func pltStubs(f *elf.File, loads []*elf.Prog) []Func {
	rela, plt := f.Section(".rela.plt"), f.Section(".plt.sec")
	first := uint64(0)
	if plt == nil {
		plt, first = f.Section(".plt"), 1
	}
	if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 || rela == nil || plt == nil {
		return nil
	}
	data, err := rela.Data()
	syms, serr := f.DynamicSymbols()
	if err != nil || serr != nil {
		return nil
	}
	var stubs []Func
	for i := 0; i+relaSize <= len(data); i += relaSize {
		info := f.ByteOrder.Uint64(data[i+8:])
		sym := info >> 32
		if elf.R_X86_64(info&0xffffffff) != elf.R_X86_64_JMP_SLOT || sym == 0 || int(sym) > len(syms) {
			continue
		}
		addr := plt.Addr + (first+uint64(i/relaSize))*pltEntrySize
		if off, ok := fileOffset(loads, addr); ok && addr < plt.Addr+plt.Size {
			stubs = append(stubs, Func{Name: syms[sym-1].Name, Addr: addr, Offset: off, Size: pltEntrySize})
		}
	}
	return stubs
}
