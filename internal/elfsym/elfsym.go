// Package elfsym reads the function symbols of ELF executables and shared
// libraries, as user-space probes need them: process("PATH").function("NAME")
// resolves NAME (wildcards allowed) against the symbol tables of PATH, with
// no debuginfo.
//
// Functions are the defined STT_FUNC and STT_GNU_IFUNC symbols of .symtab
// and of .dynsym (a stripped binary keeps only the latter), each name and
// address once, in address order (the order stap lists them in). A uprobe is
// placed by file offset, not by address: the offset of a function is its
// address minus the virtual address of the PT_LOAD segment holding it plus
// that segment's file offset. That one rule serves position-dependent
// executables (ET_EXEC, linked at 0x400000), position-independent ones and
// shared libraries (ET_DYN, linked at 0) alike.
//
// Resolve finds the file a probe point names: a path, a command searched in
// PATH, or a shared library's soname looked up as the dynamic loader does
// (resolve.go). The stubs of the procedure linkage table, which
// process("PATH").plt("NAME") probes, are read too (plt.go).
package elfsym

import (
	"debug/elf"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
)

// Func is one function of an object.
type Func struct {
	Name string
	// Addr is the symbol's value, a virtual address of the object as linked.
	Addr uint64
	// Offset is where the function's first instruction lies in the file,
	// the position a uprobe is placed at.
	Offset uint64
	Size   uint64
	// Indirect: an STT_GNU_IFUNC symbol, whose code is the resolver the
	// dynamic loader runs once to pick an implementation, not the function
	// a call reaches.
	Indirect bool
}

// Object is the function table of one ELF file.
type Object struct {
	Path string
	// Dynamic: the object is ET_DYN (a PIE executable or a shared library),
	// loaded at an address chosen at run time.
	Dynamic bool
	// Base is the lowest virtual address of its PT_LOAD segments.
	Base uint64
	// Machine and Class say which processor and word size the object's
	// code is for (a 32-bit x86 program: EM_386, ELFCLASS32).
	Machine elf.Machine
	Class   elf.Class
	Funcs   []Func
	// PLT are the stubs of its procedure linkage table, each named after
	// the function it calls (plt.go), in address order.
	PLT []Func
	// Go: the object is built by Go's toolchain (goSections), whose
	// goroutines run on stacks the runtime moves as they grow.
	Go bool
}

// goSections are the sections only Go's linker writes: the build
// information runtime/debug reads (Go 1.13 on, kept by strip), the build
// ID note, the PC-value table of the runtime's symbolizer.
var goSections = []string{".go.buildinfo", ".note.go.buildid", ".gopclntab"}

// isGo tells whether f was built by Go's toolchain (Object.Go).
func isGo(f *elf.File) bool {
	for _, name := range goSections {
		if f.Section(name) != nil {
			return true
		}
	}
	return false
}

// Open reads the function table of the ELF file at path.
func Open(path string) (*Object, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return nil, fmt.Errorf("%s is an ELF %s, neither an executable nor a shared library", path, f.Type)
	}
	o := &Object{Path: path, Dynamic: f.Type == elf.ET_DYN, Base: ^uint64(0), Machine: f.Machine, Class: f.Class, Go: isGo(f)}
	var loads []*elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p)
			o.Base = min(o.Base, p.Vaddr)
		}
	}
	if len(loads) == 0 {
		return nil, fmt.Errorf("%s has no loadable segment", path)
	}
	syms, err := functionSymbols(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[Func]bool{}
	for _, s := range syms {
		off, ok := fileOffset(loads, s.Value)
		fn := Func{Name: s.Name, Addr: s.Value, Offset: off, Size: s.Size, Indirect: elf.ST_TYPE(s.Info) == elf.STT_GNU_IFUNC}
		if ok && !seen[fn] {
			seen[fn] = true
			o.Funcs = append(o.Funcs, fn)
		}
	}
	sort.SliceStable(o.Funcs, func(i, j int) bool { return o.Funcs[i].Addr < o.Funcs[j].Addr })
	o.PLT = pltStubs(f, loads)
	return o, nil
}

// functionSymbols returns the defined function symbols of .symtab and
// .dynsym; an object with neither table has none.
func functionSymbols(f *elf.File) ([]elf.Symbol, error) {
	var out []elf.Symbol
	for _, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, err := read()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return nil, err
		}
		for _, s := range syms {
			typ := elf.ST_TYPE(s.Info)
			if (typ == elf.STT_FUNC || typ == elf.STT_GNU_IFUNC) && s.Section != elf.SHN_UNDEF && s.Value != 0 && s.Name != "" {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// fileOffset converts a virtual address to its offset in the file, through
// the PT_LOAD segment whose file image holds it.
func fileOffset(loads []*elf.Prog, addr uint64) (uint64, bool) {
	for _, p := range loads {
		if addr >= p.Vaddr && addr < p.Vaddr+p.Filesz {
			return addr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

// Match returns the functions whose name matches pattern, a name with
// shell wildcards (`*`, `?`, `[...]`), in address order.
func (o *Object) Match(pattern string) ([]Func, error) { return Match(o.Funcs, pattern) }

// Match returns the functions of fns (Object.Funcs or Object.PLT) whose
// name matches pattern, in their order. A pattern without wildcards is
// compared as it is (path.Match reads the whole pattern for each name:
// seconds for a 480 KB name against a large symbol table).
func Match(fns []Func, pattern string) ([]Func, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("bad function pattern %q: %w", pattern, err)
	}
	matches := func(name string) bool { ok, _ := path.Match(pattern, name); return ok }
	if !strings.ContainsAny(pattern, `*?[\`) {
		matches = func(name string) bool { return name == pattern }
	}
	var out []Func
	for _, fn := range fns {
		if matches(fn.Name) {
			out = append(out, fn)
		}
	}
	return out, nil
}

// Names lists the names of the functions, each once.
func (o *Object) Names() []string { return names(o.Funcs) }

// PLTNames lists the names of the functions the PLT stubs call, each once.
func (o *Object) PLTNames() []string { return names(o.PLT) }

func names(fns []Func) []string {
	seen := map[string]bool{}
	var names []string
	for _, fn := range fns {
		if !seen[fn.Name] {
			seen[fn.Name] = true
			names = append(names, fn.Name)
		}
	}
	return names
}

// PC is where stap's -p2 listing says a function lies: ".dynamic+0x1149"
// in an ET_DYN object, ".absolute+0x11a0" in an ET_EXEC one, the address
// relative to the object's lowest segment.
func (o *Object) PC(fn Func) string {
	section := ".absolute"
	if o.Dynamic {
		section = ".dynamic"
	}
	return fmt.Sprintf("%s+%#x", section, fn.Addr-o.Base)
}
