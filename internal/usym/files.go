package usym

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// mapping is a file mapped into a process: addresses start..end show the
// file from offset on.
type mapping struct {
	start, end, offset uint64
	path               string
}

// ReadMaps reads the file mappings of process pid (nil when it is gone).
func ReadMaps(pid int) []mapping {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil
	}
	defer f.Close()
	var maps []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := parseMapping(sc.Text()); ok {
			maps = append(maps, m)
		}
	}
	return maps
}

// parseMapping parses a line of /proc/PID/maps, "START-END PERMS OFFSET
// DEV INODE PATH", keeping mappings of files that still exist.
func parseMapping(line string) (mapping, bool) {
	f := strings.Fields(line)
	if len(f) != 6 || !strings.HasPrefix(f[5], "/") {
		return mapping{}, false
	}
	start, end, ok := strings.Cut(f[0], "-")
	var m mapping
	var errs [3]error
	m.start, errs[0] = strconv.ParseUint(start, 16, 64)
	m.end, errs[1] = strconv.ParseUint(end, 16, 64)
	m.offset, errs[2] = strconv.ParseUint(f[2], 16, 64)
	m.path = f[5]
	return m, ok && errs == [3]error{}
}

// findMapping finds the mapping holding addr.
func findMapping(maps []mapping, addr uint64) (mapping, bool) {
	for _, m := range maps {
		if addr >= m.start && addr < m.end {
			return m, true
		}
	}
	return mapping{}, false
}

// parsePid parses a /proc entry's name as a pid.
func parsePid(name string) (int, bool) {
	pid, err := strconv.Atoi(name)
	return pid, err == nil && pid > 0
}

// BuildID is the GNU build id of the ELF file at path, as raw bytes in a
// string ("" when it has none or cannot be read).
func BuildID(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			continue
		}
		if id := gnuBuildID(data, f.ByteOrder); id != "" {
			return id
		}
	}
	return ""
}

// gnuBuildID finds the NT_GNU_BUILD_ID note among notes: each a name
// size, a descriptor size, a type, then the name and the descriptor, each
// padded to 4 bytes.
func gnuBuildID(notes []byte, order binary.ByteOrder) string {
	const ntGNUBuildID = 3
	for len(notes) >= 12 {
		nameSize, descSize, typ := order.Uint32(notes), order.Uint32(notes[4:]), order.Uint32(notes[8:])
		name := 12 + align4(uint64(nameSize))
		end := name + align4(uint64(descSize))
		if end > uint64(len(notes)) {
			return ""
		}
		if typ == ntGNUBuildID && bytes.Equal(notes[12:12+nameSize], []byte("GNU\x00")) {
			return padBuildID(notes[name : name+uint64(descSize)])
		}
		notes = notes[end:]
	}
	return ""
}

// padBuildID is a build id as the kernel's stack frames carry it: 20
// bytes, a shorter id (lld's 8, md5's or uuid's 16) padded with zeros.
func padBuildID(id []byte) string {
	const size = 20
	if len(id) < size {
		id = append(id[:len(id):len(id)], make([]byte, size-len(id))...)
	}
	return string(id)
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }
