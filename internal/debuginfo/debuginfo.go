// Package debuginfo reads what a program's or the kernel's DWARF says
// about its functions and lines: where each parameter and variable lives
// when a probe fires, and their C types, for $name, $name->member and
// typed $return in process("P").function("F") probes, the lines of
// .statement probes, the functions FUNC@FILE names.
//
// The DWARF is the program's own or, when it was stripped, its separate
// debug file, found as gdb finds it: by build ID
// (/usr/lib/debug/.build-id/xx/rest.debug), then by the .gnu_debuglink
// section's name beside the program, in its .debug directory and under
// /usr/lib/debug; the kernel's is its debug package's vmlinux (OpenKernel),
// a module's the module as built (OpenModule), a relocatable object whose
// sections this package places and relocates (relocate.go).
// A linked file's sections are mapped, not copied (sections.go); Go's
// debug/elf decompresses compressed ones and debug/dwarf reads DWARF 4
// and 5 entries, types and line tables; this package adds what Go leaves
// out: location expressions and location lists (.debug_loc,
// .debug_loclists), and the call frame information (.eh_frame, or
// .debug_frame) that gives the canonical frame address
// DW_OP_call_frame_cfa names.
//
// A location is evaluated at one address, the probe's, to one of three
// forms a BPF program can read from the registers the uprobe saw
// (Location): a register's value plus a constant, the memory at such an
// address, or a constant. Anything else (a value the compiler keeps in
// pieces, only as an entry value, or nowhere at that address) is refused
// with the reason.
//
// Unoptimized code (-O0) stores its parameters in the frame during the
// function's prologue, and its DWARF says where in the frame: a probe
// that reads them from there is placed after the prologue, at the address
// of the function's second line-table row (gdb's rule: AfterPrologue), as
// stap places it (package probes reads those the calling convention passes
// in registers at the entry instead).
// Optimized code describes its parameters with location lists, which say
// where each lives at the function's first instruction.
package debuginfo

import (
	"bytes"
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
)

// DebugRoot is where distributions install separate debug files.
var DebugRoot = "/usr/lib/debug"

// MissingError says that a program has no DWARF bpftap could find: Tried
// are the separate debug files looked for, by build ID first.
type MissingError struct {
	Path  string
	Tried []string
}

func (e *MissingError) Error() string {
	msg := fmt.Sprintf("%s has no DWARF debuginfo", e.Path)
	if len(e.Tried) > 0 {
		msg += fmt.Sprintf(" and its debug file (%s) is not installed", e.Tried[0])
	}
	return msg + ": install its debug package (Debian's -dbgsym or -dbg, Fedora's -debuginfo) or build it with -g"
}

// File is the DWARF of one program, read lazily.
type File struct {
	Path string
	// DebugPath is the file the DWARF was read from: Path or its
	// separate debug file.
	DebugPath string
	// Loaded, for the running kernel's DWARF or a module's
	// (kernel.Debuginfo, kernel.ModuleDebuginfo), is where the running
	// kernel holds what the debug file places at the link-time address
	// link: the kernel moved by KASLR, a module's section where it was
	// loaded.
	Loaded func(link uint64) (uint64, error)

	data     *dwarf.Data
	order    binary.ByteOrder
	ptrSize  int
	sections map[string][]byte // .debug_info, .debug_loc, .debug_loclists, .debug_addr of DebugPath
	frames   []byte            // Path's .eh_frame, or DebugPath's .debug_frame
	framesAt uint64            // .eh_frame's address
	// debugFrame: frames is a .debug_frame (cfi.go).
	debugFrame bool
	// layout places a relocatable debug file's sections (a module's).
	layout    *layout
	indexOnce sync.Once
	symOnce   sync.Once
	piecesMu  sync.Mutex
	pieces    map[dwarf.Offset][]functionPiece // unitFunctions, by unit
	funcSyms  map[string][]uint64              // FunctionSymbols
	funcCode  []funcSymbol                     // FunctionSymbolAt: by address
	dataSyms  map[string]uint64                // DataSymbol
	perCPU    [2]uint64                        // the kernel's .data..percpu, from first to last address
	funcs     map[uint64]dwarf.Offset          // subprograms by entry address
	units     map[dwarf.Offset]*unit
	indexErr  error
}

// Open reads the DWARF of the program at path.
func Open(path string) (*File, error) {
	looked.Add(1)
	prog, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	f := newFile(path, prog)
	// a relocatable object's (load relocates its .debug_frame)
	if s := prog.Section(".eh_frame"); s != nil && s.Type != elf.SHT_NOBITS && prog.Type != elf.ET_REL {
		if f.frames, err = s.Data(); err != nil {
			return nil, fmt.Errorf("%s: .eh_frame: %w", path, err)
		}
		f.framesAt = s.Addr
	}
	debug, tried := prog, []string(nil)
	if !hasDWARF(prog) {
		var found string
		found, tried = findDebugFile(path, prog)
		if found == "" {
			return nil, &MissingError{Path: path, Tried: tried}
		}
		if debug, err = elf.Open(found); err != nil {
			return nil, err
		}
		defer debug.Close()
		f.DebugPath = found
	}
	if f.frames == nil {
		if err := f.readDebugFrame(debug); err != nil {
			return nil, err
		}
	}
	if err := f.load(debug); err != nil {
		return nil, err
	}
	return f, nil
}

// readDebugFrame takes the call frame information from the debug file's
// .debug_frame: a kernel's, or a program's built without unwind tables
// (a relocatable object's is load's to read, relocated).
func (f *File) readDebugFrame(debug *elf.File) error {
	s := debug.Section(".debug_frame")
	if s == nil || s.Type == elf.SHT_NOBITS || debug.Type == elf.ET_REL {
		return nil
	}
	var err error
	if f.frames, err = s.Data(); err != nil {
		return fmt.Errorf("%s: .debug_frame: %w", f.DebugPath, err)
	}
	f.debugFrame = true
	return nil
}

func newFile(path string, e *elf.File) *File {
	f := &File{Path: path, DebugPath: path, order: e.ByteOrder, ptrSize: 8}
	if e.Class == elf.ELFCLASS32 {
		f.ptrSize = 4
	}
	return f
}

// load reads the DWARF of debug, the file at f.DebugPath; a relocatable
// one's call frame information too, which needs relocating.
func (f *File) load(debug *elf.File) error {
	wanted := []string{".debug_info", ".debug_loc", ".debug_loclists", ".debug_addr"}
	if debug.Type == elf.ET_REL {
		f.layout = layOut(debug)
		wanted = append(wanted, ".debug_frame")
	}
	var err error
	f.data, f.sections, err = readSections(f.DebugPath, debug, wanted, f.layout)
	if err == nil && f.sections[".debug_frame"] != nil {
		f.frames, f.debugFrame = f.sections[".debug_frame"], true
	}
	return err
}

func hasDWARF(f *elf.File) bool {
	s := f.Section(".debug_info")
	return s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0
}

// findDebugFile is the separate debug file of prog at path, "" if none is
// installed, and the places it looked.
func findDebugFile(path string, prog *elf.File) (string, []string) {
	var candidates []string
	if id := buildID(prog); len(id) > 1 {
		h := hex.EncodeToString(id)
		candidates = append(candidates, filepath.Join(DebugRoot, ".build-id", h[:2], h[2:]+".debug"))
	}
	if s := prog.Section(".gnu_debuglink"); s != nil {
		if data, err := s.Data(); err == nil {
			if name, _, ok := bytes.Cut(data, []byte{0}); ok && len(name) > 0 {
				real, err := filepath.EvalSymlinks(path)
				if err != nil {
					real = path
				}
				dir := filepath.Dir(real)
				for _, d := range []string{dir, filepath.Join(dir, ".debug"), filepath.Join(DebugRoot, dir)} {
					if c := filepath.Join(d, string(name)); c != real {
						candidates = append(candidates, c)
					}
				}
			}
		}
	}
	for _, c := range candidates {
		if f, err := elf.Open(c); err == nil {
			ok := hasDWARF(f)
			f.Close()
			if ok {
				return c, candidates
			}
		}
	}
	return "", candidates
}

// buildID is the GNU build ID note of f, nil without one.
func buildID(f *elf.File) []byte {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		if data, err := s.Data(); err == nil {
			if id := NoteBuildID(data, f.ByteOrder); id != nil {
				return id
			}
		}
	}
	return nil
}

// NoteBuildID is the GNU build ID in data, ELF notes in byte order order
// (a note section, or the running kernel's /sys/kernel/notes), nil
// without one.
func NoteBuildID(data []byte, order binary.ByteOrder) []byte {
	for len(data) >= 12 {
		nameSize, descSize, typ := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
		nameEnd := 12 + align4(nameSize)
		descEnd := nameEnd + align4(descSize)
		if uint64(len(data)) < uint64(descEnd) {
			break
		}
		if typ == 3 && string(data[12:12+nameSize]) == "GNU\x00" { // NT_GNU_BUILD_ID
			return data[nameEnd : nameEnd+descSize]
		}
		data = data[descEnd:]
	}
	return nil
}

func align4(n uint32) uint32 { return (n + 3) &^ 3 }

// ErrNoFunction says that the DWARF describes no function at an address.
var ErrNoFunction = errors.New("no DWARF entry describes the function")

// ErrNoType says that the DWARF defines no type of a name.
var ErrNoType = errors.New("no DWARF entry defines the type")

// ErrNoVariable says that the DWARF places no such variable at a static
// address.
var ErrNoVariable = errors.New("no DWARF entry places the variable at a static address")

// FunctionSymbols are the link-time addresses the symbol table of the
// debug file gives the functions named name (several for static
// functions of different files): where a probe names a function, its
// unit is found without reading the others.
func (f *File) FunctionSymbols(name string) []uint64 {
	f.readSymbols()
	return f.funcSyms[name]
}

// funcSymbol is a function symbol's code.
type funcSymbol struct {
	name        string
	start, size uint64
}

// FunctionSymbolAt is the function symbol whose code holds pc, as the
// kernel's symbols name it (foo, or the compiler's foo.part.0, foo.cold):
// its name and address, and whether other function symbols share the
// name (static functions of different files), which then names no one.
func (f *File) FunctionSymbolAt(pc uint64) (name string, start uint64, shared bool, ok bool) {
	f.readSymbols()
	i, _ := slices.BinarySearchFunc(f.funcCode, pc, func(s funcSymbol, pc uint64) int { return cmp.Compare(s.start, pc+1) })
	if i == 0 {
		return "", 0, false, false
	}
	s := f.funcCode[i-1]
	if pc >= s.start+max(s.size, 1) {
		return "", 0, false, false
	}
	return s.name, s.start, len(f.funcSyms[s.name]) > 1, true
}

// DataSymbol is the link-time address of the global symbol name that is
// no function's (a variable's, or a linker script's: the kernel's jiffies,
// _stext), as the debug file's symbol table gives it.
func (f *File) DataSymbol(name string) (uint64, bool) {
	f.readSymbols()
	addr, ok := f.dataSyms[name]
	return addr, ok
}

// readSymbols reads the function and global data symbols of the debug
// file, once.
func (f *File) readSymbols() {
	f.symOnce.Do(func() {
		f.funcSyms = map[string][]uint64{}
		e, err := elf.Open(f.DebugPath)
		if err != nil {
			return
		}
		defer e.Close()
		syms, _ := e.Symbols()
		f.dataSyms = map[string]uint64{}
		for _, sym := range syms {
			addr := sym.Value
			if f.layout != nil {
				addr = f.layout.addr(sym)
			}
			switch kind := elf.ST_TYPE(sym.Info); {
			case addr == 0 || sym.Section == elf.SHN_UNDEF:
			case kind == elf.STT_FUNC:
				f.funcSyms[sym.Name] = append(f.funcSyms[sym.Name], addr)
				f.funcCode = append(f.funcCode, funcSymbol{name: sym.Name, start: addr, size: sym.Size})
			case (kind == elf.STT_OBJECT || kind == elf.STT_NOTYPE) && elf.ST_BIND(sym.Info) == elf.STB_GLOBAL:
				f.dataSyms[sym.Name] = addr
			}
		}
		for i, s := range e.Sections {
			if s.Name != ".data..percpu" {
				continue
			}
			start := s.Addr
			if f.layout != nil {
				start = f.layout.base[elf.SectionIndex(i)]
			}
			f.perCPU = [2]uint64{start, start + s.Size}
		}
		slices.SortFunc(f.funcCode, func(a, b funcSymbol) int { return cmp.Compare(a.start, b.start) })
	})
}

// looked counts the debug files the process looked for (Open, OpenKernel,
// OpenModule), found or not.
var looked atomic.Int64

// Looked says how many debug files the process looked for, found or
// not: a program elaborated from what one held (or from its absence) is
// not kept across runs (internal/driver's cache), where the file may have
// come or changed.
func Looked() int64 { return looked.Load() }
