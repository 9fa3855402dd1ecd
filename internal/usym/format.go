package usym

import (
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/bpftap/bpftap/internal/debuginfo"
)

// The forms stap prints a user address in. Its runtime prints addresses
// with %p, which is %#x; an address without a function keeps that bare
// hex form, stap's marker for an unknown frame.

// Hex is a user address as stap prints it: 0x and its hex digits.
func Hex(addr uint64) string { return fmt.Sprintf("%#x", addr) }

// Name is usymname(addr): the function's name, or the address.
func Name(addr uint64, sym Symbol, ok bool) string {
	if ok && sym.Name != "" {
		return sym.Name
	}
	return Hex(addr)
}

// Data is usymdata(addr): "name+0xOFF/0xSIZE [module]", or the address.
func Data(addr uint64, sym Symbol, ok bool) string {
	if ok && sym.Name != "" {
		return fmt.Sprintf("%s+%#x/%#x [%s]", sym.Name, sym.Offset, sym.Size, sym.Module)
	}
	return Hex(addr)
}

// Module is umodname(addr): the path of the file holding the address, or
// stap's "<unknown>".
func Module(sym Symbol, ok bool) string {
	if ok && sym.Module != "" {
		return sym.Module
	}
	return "<unknown>"
}

// FullLine is a line of print_ubacktrace() and print_ustack():
// " 0xADDR : name+0xOFF/0xSIZE [module]\n", or " 0xADDR\n".
func FullLine(addr uint64, sym Symbol, ok bool) string {
	if ok && sym.Name != "" {
		return " " + Hex(addr) + " : " + Data(addr, sym, ok) + "\n"
	}
	return " " + Hex(addr) + "\n"
}

// FullerLine is a line of print_ubacktrace_fileline(): FullLine's with
// the source file and line before the module, from the DWARF of the
// address's file, " 0xADDR : name+0xOFF/0xSIZE at FILE:LINE [module]\n";
// FullLine's where the DWARF gives none.
func FullerLine(addr uint64, sym Symbol, ok bool) string {
	if file, line, found := sourceLine(sym, ok); found && sym.Name != "" {
		return fmt.Sprintf(" %s : %s+%#x/%#x at %s:%d [%s]\n", Hex(addr), sym.Name, sym.Offset, sym.Size, file, line, sym.Module)
	}
	return FullLine(addr, sym, ok)
}

// BriefLine is a line of print_ubacktrace_brief(): "name+0xOFF\n", or
// "0xADDR\n".
func BriefLine(addr uint64, sym Symbol, ok bool) string {
	if ok && sym.Name != "" {
		return fmt.Sprintf("%s+%#x\n", sym.Name, sym.Offset)
	}
	return Hex(addr) + "\n"
}

// SimpleLine is a line of sprint_ubacktrace(): "name+0xOFF [file]\n" (the
// module's base name), or "0xADDR\n".
func SimpleLine(addr uint64, sym Symbol, ok bool) string {
	if ok && sym.Name != "" {
		return fmt.Sprintf("%s+%#x [%s]\n", sym.Name, sym.Offset, filepath.Base(sym.Module))
	}
	return Hex(addr) + "\n"
}

// File is usymfile(addr): the source file of the address, from its
// file's DWARF, or the address.
func File(addr uint64, sym Symbol, ok bool) string {
	if file, _, found := sourceLine(sym, ok); found {
		return file
	}
	return Hex(addr)
}

// Line is usymline(addr): the source line of the address, or the address.
func Line(addr uint64, sym Symbol, ok bool) string {
	if _, line, found := sourceLine(sym, ok); found {
		return strconv.Itoa(line)
	}
	return Hex(addr)
}

// FileLine is usymfileline(addr): "FILE:LINE", or the address.
func FileLine(addr uint64, sym Symbol, ok bool) string {
	if file, line, found := sourceLine(sym, ok); found {
		return file + ":" + strconv.Itoa(line)
	}
	return Hex(addr)
}

// sources holds the DWARF read for source lines, by path (nil: none).
var sources struct {
	sync.Mutex
	files map[string]*debuginfo.File
}

// sourceLine is the source file and line of a symbolized address, from
// the DWARF of its file (or its separate debug file), read once per file.
func sourceLine(sym Symbol, ok bool) (string, int, bool) {
	if !ok || sym.Module == "" || sym.Addr == 0 {
		return "", 0, false
	}
	sources.Lock()
	f, seen := sources.files[sym.Module]
	if !seen {
		f, _ = debuginfo.Open(sym.Module)
		if sources.files == nil {
			sources.files = map[string]*debuginfo.File{}
		}
		sources.files[sym.Module] = f
	}
	sources.Unlock()
	if f == nil {
		return "", 0, false
	}
	file, line, err := f.LineAt(sym.Addr)
	return file, line, err == nil
}
