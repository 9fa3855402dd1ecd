package debuginfo

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// sectionNames are the DWARF sections dwarf.New takes, in its order, and
// the ones DWARF 5 adds, which it takes through AddSection.
var (
	sectionNames = []string{".debug_abbrev", ".debug_aranges", ".debug_frame", ".debug_info",
		".debug_line", ".debug_pubnames", ".debug_ranges", ".debug_str"}
	dwarf5Sections = []string{".debug_addr", ".debug_line_str", ".debug_loclists", ".debug_rnglists", ".debug_str_offsets"}
)

// readSections gives the DWARF of the debug file e at path and the raw
// sections this package reads itself (wanted). A linked file's sections
// stored as they are are not read but mapped: a kernel's vmlinux holds
// hundreds of MiB of DWARF, of which a probe reads a few units, and a
// copy would be that much memory and time at every start. Compressed
// sections are read and decompressed; a relocatable object's (a kernel
// module's, whose layout l is) are read and relocated (relocate.go);
// DWARF 4 type units are left to Go's reader.
func readSections(path string, e *elf.File, wanted []string, l *layout) (*dwarf.Data, map[string][]byte, error) {
	read := func(name string) ([]byte, error) { return l.relocated(e, name) }
	if l == nil {
		if e.Section(".debug_types") != nil || hasZdebug(e) {
			return readAll(path, e, wanted)
		}
		mapped, err := mapFile(path)
		if err != nil { // a file system that maps no files: read them
			return readAll(path, e, wanted)
		}
		read = func(name string) ([]byte, error) { return sectionData(e, mapped, name) }
	}
	sec := map[string][]byte{}
	for _, name := range append(append(sectionNames, dwarf5Sections...), wanted...) {
		if _, done := sec[name]; done {
			continue
		}
		var err error
		if sec[name], err = read(name); err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", path, name, err)
		}
	}
	d, err := dwarf.New(sec[".debug_abbrev"], sec[".debug_aranges"], sec[".debug_frame"], sec[".debug_info"],
		sec[".debug_line"], sec[".debug_pubnames"], sec[".debug_ranges"], sec[".debug_str"])
	for _, name := range dwarf5Sections {
		if err == nil && sec[name] != nil {
			err = d.AddSection(name, sec[name])
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: reading DWARF: %w", path, err)
	}
	return d, pick(sec, wanted), nil
}

// readAll reads the DWARF the way Go's reader does, into memory.
func readAll(path string, e *elf.File, wanted []string) (*dwarf.Data, map[string][]byte, error) {
	d, err := e.DWARF()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: reading DWARF: %w", path, err)
	}
	sec := map[string][]byte{}
	for _, name := range wanted {
		if sec[name], err = sectionData(e, nil, name); err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", path, name, err)
		}
	}
	return d, sec, nil
}

// sectionData is the named section of e: nil if e has none or it takes
// no room in the file, its bytes in mapped (the whole file) where stored
// as they are, else read (and decompressed).
func sectionData(e *elf.File, mapped []byte, name string) ([]byte, error) {
	s := e.Section(name)
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	if mapped == nil || s.Flags&elf.SHF_COMPRESSED != 0 {
		return s.Data()
	}
	if s.Offset+s.FileSize > uint64(len(mapped)) {
		return nil, fmt.Errorf("section runs past the end of the file")
	}
	return mapped[s.Offset : s.Offset+s.FileSize : s.Offset+s.FileSize], nil
}

func hasZdebug(e *elf.File) bool {
	for _, s := range e.Sections {
		if strings.HasPrefix(s.Name, ".zdebug_") {
			return true
		}
	}
	return false
}

func pick(sec map[string][]byte, names []string) map[string][]byte {
	out := make(map[string][]byte, len(names))
	for _, name := range names {
		out[name] = sec[name]
	}
	return out
}

// mapFile maps the file at path read-only for the life of the process:
// the DWARF read from it refers to the mapping. (A debug file truncated
// while bpftap runs would end it with SIGBUS, as it would gdb or perf:
// package managers replace files, they do not rewrite them in place.)
func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return nil, cmp.Or(err, fmt.Errorf("%s is empty", path))
	}
	return unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
}
