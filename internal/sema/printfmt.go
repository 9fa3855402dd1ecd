package sema

import (
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// PrintFormat compiles what a print-family call prints: printf's format,
// print_char's one character (%c: the value's low byte, as stap's
// _stp_print_char takes a C char), or for print/println/printd/printdln and
// their s* forms, the arguments by type with printd's delimiter and
// println's newline. Both runtimes (the interpreter and the kernel records'
// formatter) render with it.
func PrintFormat(n *syntax.PrintCall) (*format.Format, error) {
	switch {
	case n.Format != nil:
		return n.CompiledFormat()
	case n.Name == "print_char":
		return format.Char(), nil
	}
	kinds := make([]format.Kind, len(n.Args))
	for i, a := range n.Args {
		kinds[i] = format.KindLong
		if a.Type() == syntax.TypeString {
			kinds[i] = format.KindString
		}
	}
	delim := ""
	if n.Delim != nil {
		delim = n.Delim.Value
	}
	newline := n.Name == "println" || n.Name == "sprintln" || n.Name == "printdln" || n.Name == "sprintdln"
	return format.Print(kinds, delim, newline), nil
}
