package usym

import (
	"fmt"
	"path/filepath"
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
