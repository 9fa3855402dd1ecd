// Package usdt reads the static markers of <sys/sdt.h> (USDT probes) from
// an ELF file and says where a BPF program finds their arguments: what
// process("PATH").mark("NAME") needs beyond a uprobe.
//
// # Notes
//
// Each marker is an ELF note of type 3 (NT_STAPSDT) owned by "stapsdt" in
// the non-allocated section .note.stapsdt. Its descriptor holds three
// addresses of the ELF class's width, all link-time virtual addresses:
// the marker's pc (a nop), the link-time address of the .stapsdt.base
// section, and the marker's semaphore (0 when the marker has none); then
// the provider, the name and the argument string, each NUL-terminated.
//
// Base adjustment: a tool that moved the sections after the notes were
// written (prelink) leaves the note's base stale; the difference between
// the .stapsdt.base section's address and the note's base is added to the
// pc and to the semaphore, as gdb does. A file without .stapsdt.base (or
// a note with base 0) is taken as it is.
//
// File offsets: a uprobe is placed at a file offset, and its kernel-managed
// semaphore (the uprobe's ref_ctr_offset) is named by a file offset too.
// Both come from the PT_LOAD segment holding the address: offset =
// address - p_vaddr + p_offset. That is the same computation for
// executables (ET_EXEC, non-PIE), position-independent executables and
// shared libraries (ET_DYN): addresses in the file are link-time ones in
// all three, and the load bias never enters. A semaphore must lie in the
// file-backed part of a writable segment (sys/sdt.h puts it in .probes),
// else the kernel could not find it.
//
// # Arguments
//
// The argument string is the assembler's text for each operand, separated
// by spaces: [-]SIZE[f]@OPERAND, SIZE the operand's bytes (1, 2, 4 or 8),
// a minus sign for a signed value, f for a floating-point one. The syntax
// is the assembler's of the file's machine (its ELF header). operand.go
// parses the x86-64 AT&T operands compilers emit (registers of every
// width, $imm, off(%reg), off(%base,%index,scale), sym(%rip), sym+off(%rip)
// and absolute sym or sym(,%index,scale) in non-PIE code), arm64.go GCC's
// arm64 operands (xN, wN, sp, imm, [base], [base, off]); x86.go turns an
// operand into an attach.Loc on the uprobe's context, struct pt_regs:
//
//   - a register is a Size-byte load at its pt_regs slot (the byte after
//     it for %ah, %bh, %ch, %dh), sign-extended when signed;
//   - an argument whose operand does not parse, or names a symbol the file
//     lacks, has no Loc: the marker's others still do;
//   - a constant is attach.Loc.Const;
//   - a memory operand is attach.Loc.User: the address is a displacement
//     plus registers times scales, and Size bytes of user memory are read
//     there (a fault reads 0, as stap's user_intN functions return);
//   - a symbol's run-time address is its link-time address plus the load
//     bias. In a non-PIE executable the bias is 0. In PIE code the bias is
//     regs->ip minus the marker's link-time pc, since at a uprobe the
//     kernel sets ip to the probed address: sym+off(%rip) becomes memory
//     at ip + (sym + off - pc), with no bias to find at run time and one
//     program serving every process that maps the file.
//
// Proposal for wiring it (process("P").mark("N")): the mark family opens
// the file (Open), picks the probes by provider and name, attaches a
// uprobe at Probe.Offset with Probe.SemaphoreOffset as its ref_ctr_offset
// (the kernel then counts attached probes in the semaphore), and gives
// $arg1…$argN the Locs of File.Loc; $$name and $$provider are the probe's
// strings, $$parms prints the arguments.
package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// ntSTAPSDT is the note type of a marker, owned by "stapsdt".
const ntSTAPSDT = 3

// File is an ELF file's markers.
type File struct {
	// Path names the file in messages.
	Path string
	// Type is elf.ET_EXEC for a non-PIE executable, elf.ET_DYN for a PIE
	// executable or a shared library.
	Type   elf.Type
	Probes []*Probe
	// symbols are the link-time addresses of the symbols the operands
	// name, from .symtab and .dynsym; a name with two addresses (two
	// static variables of one name) maps to ambiguous.
	symbols map[string]uint64
}

// ambiguous marks a symbol name that has several addresses.
const ambiguous = ^uint64(0)

// Probe is one marker.
type Probe struct {
	Provider, Name string
	// ArgText is the argument string, as readelf -n prints it.
	ArgText string
	// NotePC, NoteBase and NoteSemaphore are the note's addresses.
	NotePC, NoteBase, NoteSemaphore uint64
	// PC and Semaphore are the link-time virtual addresses after base
	// adjustment (Semaphore 0: none).
	PC, Semaphore uint64
	// Offset and SemaphoreOffset are their file offsets: where a uprobe
	// attaches and its ref_ctr_offset (0: no semaphore).
	Offset, SemaphoreOffset uint64
	// Args are the parsed arguments; one that does not parse says why in
	// its Err (the probe can still be attached, and its other arguments
	// read).
	Args []Arg
}

// Open reads the markers of the ELF file at path.
func Open(path string) (*File, error) {
	r, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return Read(path, r)
}

// Read reads the markers of the ELF file r; path names it in messages.
func Read(path string, r io.ReaderAt) (*File, error) {
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer ef.Close()
	f := &File{Path: path, Type: ef.Type}
	notes := ef.Section(".note.stapsdt")
	if notes == nil {
		return f, nil
	}
	data, err := notes.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: .note.stapsdt: %w", path, err)
	}
	if f.Probes, err = parseNotes(data, ef.Class, ef.ByteOrder); err != nil {
		return nil, fmt.Errorf("%s: .note.stapsdt: %w", path, err)
	}
	for _, p := range f.Probes {
		if err := f.place(ef, p); err != nil {
			return nil, err
		}
		p.Args = ParseArgs(p.ArgText, ef.Machine)
	}
	f.symbols = symbolsNamed(ef, f.operandSymbols())
	return f, nil
}

// Lookup returns the probes called name of provider ("" or "*": any).
func (f *File) Lookup(provider, name string) []*Probe {
	var found []*Probe
	for _, p := range f.Probes {
		if p.Name == name && (provider == "" || provider == "*" || p.Provider == provider) {
			found = append(found, p)
		}
	}
	return found
}

// parseNotes reads the stapsdt notes of a .note.stapsdt section; other
// notes are skipped.
func parseNotes(data []byte, class elf.Class, order binary.ByteOrder) ([]*Probe, error) {
	width := 8
	if class == elf.ELFCLASS32 {
		width = 4
	}
	var probes []*Probe
	for len(data) > 0 {
		if len(data) < 12 {
			return nil, fmt.Errorf("truncated note header")
		}
		nameSize, descSize, typ := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
		nameEnd := 12 + uint64(nameSize)
		descStart := align4(nameEnd)
		descEnd := descStart + uint64(descSize)
		if descEnd > uint64(len(data)) {
			return nil, fmt.Errorf("truncated note")
		}
		owner := string(bytes.TrimRight(data[12:nameEnd], "\x00"))
		if owner == "stapsdt" && typ == ntSTAPSDT {
			p, err := parseDesc(data[descStart:descEnd], width, order)
			if err != nil {
				return nil, err
			}
			probes = append(probes, p)
		}
		data = data[min(align4(descEnd), uint64(len(data))):]
	}
	return probes, nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// parseDesc reads a marker's descriptor: three addresses, then provider,
// name and arguments, NUL-terminated.
func parseDesc(desc []byte, width int, order binary.ByteOrder) (*Probe, error) {
	if len(desc) < 3*width {
		return nil, fmt.Errorf("truncated stapsdt descriptor")
	}
	addr := func(i int) uint64 {
		if width == 4 {
			return uint64(order.Uint32(desc[i*4:]))
		}
		return order.Uint64(desc[i*8:])
	}
	strs := bytes.SplitN(desc[3*width:], []byte{0}, 4)
	if len(strs) < 3 {
		return nil, fmt.Errorf("stapsdt descriptor without provider, name and arguments")
	}
	return &Probe{Provider: string(strs[0]), Name: string(strs[1]), ArgText: string(strs[2]),
		NotePC: addr(0), NoteBase: addr(1), NoteSemaphore: addr(2)}, nil
}

// place adjusts p's addresses for the .stapsdt.base section and finds
// their file offsets.
func (f *File) place(ef *elf.File, p *Probe) error {
	p.PC, p.Semaphore = p.NotePC, p.NoteSemaphore
	if base := ef.Section(".stapsdt.base"); base != nil && p.NoteBase != 0 {
		delta := base.Addr - p.NoteBase
		p.PC += delta
		if p.Semaphore != 0 {
			p.Semaphore += delta
		}
	}
	var ok bool
	if p.Offset, ok = fileOffset(ef, p.PC, elf.PF_X); !ok {
		return fmt.Errorf("%s: marker %s:%s at 0x%x is not in an executable segment of the file", f.Path, p.Provider, p.Name, p.PC)
	}
	if p.Semaphore == 0 {
		return nil
	}
	if p.SemaphoreOffset, ok = fileOffset(ef, p.Semaphore, elf.PF_W); !ok {
		return fmt.Errorf("%s: the semaphore of marker %s:%s at 0x%x is not in a writable segment's file-backed part", f.Path, p.Provider, p.Name, p.Semaphore)
	}
	return nil
}

// fileOffset returns the file offset of the link-time address addr, from
// the loadable segment with flag that holds it in its file-backed part.
func fileOffset(ef *elf.File, addr uint64, flag elf.ProgFlag) (uint64, bool) {
	for _, seg := range ef.Progs {
		if seg.Type == elf.PT_LOAD && seg.Flags&flag != 0 && addr >= seg.Vaddr && addr-seg.Vaddr < seg.Filesz {
			return addr - seg.Vaddr + seg.Off, true
		}
	}
	return 0, false
}

// operandSymbols lists the symbols the probes' operands name.
func (f *File) operandSymbols() map[string]bool {
	names := map[string]bool{}
	for _, p := range f.Probes {
		for _, a := range p.Args {
			if a.Operand.Symbol != "" {
				names[a.Operand.Symbol] = true
			}
		}
	}
	return names
}

// symbolsNamed returns the link-time addresses of the defined symbols in
// names, from the static and the dynamic symbol tables.
func symbolsNamed(ef *elf.File, names map[string]bool) map[string]uint64 {
	found := map[string]uint64{}
	if len(names) == 0 {
		return found
	}
	for _, table := range []func() ([]elf.Symbol, error){ef.Symbols, ef.DynamicSymbols} {
		syms, _ := table() // a file may lack either table
		for _, s := range syms {
			if !names[s.Name] || s.Section == elf.SHN_UNDEF {
				continue
			}
			if old, ok := found[s.Name]; ok && old != s.Value {
				found[s.Name] = ambiguous
			} else {
				found[s.Name] = s.Value
			}
		}
	}
	return found
}
