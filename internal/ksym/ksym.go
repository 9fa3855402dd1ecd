// Package ksym symbolizes kernel addresses as SystemTap prints them, from
// /proc/kallsyms. The table is read once, on first use, and holds the text
// symbols sorted by address; a symbol's size is the distance to the next
// one (kallsyms gives none). An address belongs to the last symbol at or
// below it, unless it lies past the end of the kernel's text. The formats
// are those of stap's runtime: symname() gives the name (the address in
// hex when there is none), symdata() "name+0xOFF/0xSIZE [module]" (module
// "kernel" for the kernel proper), a backtrace line " 0xADDR : DATA", and
// sprint_backtrace()'s "name+0xOFF [module]".
package ksym

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Symbol is one text symbol.
type Symbol struct {
	Addr   uint64
	Size   uint64
	Name   string
	Module string
}

// Table is a sorted symbol table, with the address ranges of the kernel
// and of its modules (modules.go).
type Table struct {
	syms    []Symbol
	modules []Module
}

// Kernel is the running kernel's table, read on first use (an empty
// table when /proc/kallsyms cannot be read or shows no addresses).
var Kernel = sync.OnceValue(func() *Table {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return &Table{}
	}
	defer f.Close()
	t := Parse(f)
	t.loadedModules()
	return t
})

// Parse reads a kallsyms listing: "ADDR TYPE NAME [MODULE]" per line.
func Parse(r io.Reader) *Table {
	var syms []Symbol
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || !strings.ContainsAny(f[1], "tTwW") {
			continue
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil || addr == 0 {
			continue
		}
		s := Symbol{Addr: addr, Name: f[2], Module: "kernel"}
		if len(f) > 3 {
			s.Module = strings.Trim(f[3], "[]")
		}
		syms = append(syms, s)
	}
	sort.SliceStable(syms, func(i, j int) bool { return syms[i].Addr < syms[j].Addr })
	// of the names an address has, the first listed stands for it
	syms = slices.CompactFunc(syms, func(a, b Symbol) bool { return a.Addr == b.Addr })
	for i := range syms {
		// the last symbol of a module (or of the kernel) has no known end
		if i+1 < len(syms) && syms[i+1].Module == syms[i].Module {
			syms[i].Size = syms[i+1].Addr - syms[i].Addr
		}
	}
	return &Table{syms, spans(syms)}
}

// Lookup returns the symbol holding addr and addr's offset in it.
func (t *Table) Lookup(addr uint64) (*Symbol, uint64, bool) {
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].Addr > addr }) - 1
	if i < 0 || (t.syms[i].Size == 0 && addr != t.syms[i].Addr) {
		return nil, 0, false
	}
	return &t.syms[i], addr - t.syms[i].Addr, true
}

// Len is the number of symbols.
func (t *Table) Len() int { return len(t.syms) }

// Symbols are the symbols, in address order.
func (t *Table) Symbols() []Symbol { return t.syms }

// tracingFrames are the functions through which the kernel runs a BPF
// program from a tracepoint: the top of a stack taken there. A tracepoint
// calls its one callback directly and its callbacks through
// __traceiter_EVENT when there are several: a frame that comes and goes
// as other tools attach to the event. A per-syscall event's (a perf
// event's) stack starts in perf_syscall_enter or perf_syscall_exit.
var tracingFrames = []string{"bpf_trace_run", "__bpf_trace_", "bpf_prog_", "__traceiter_", "perf_trace_run_bpf", "perf_syscall_"}

// TrimTracing drops the frames at the top of a kernel stack that belong to
// the BPF program taking it and the code that called it (a JIT-ed
// program's frame, bpf_trace_run2, __bpf_trace_EVENT), so that the stack
// starts where the probe point is, as stap's does.
func (t *Table) TrimTracing(addrs []uint64) []uint64 {
	for len(addrs) > 1 {
		if s, _, ok := t.Lookup(addrs[0]); ok && !s.tracing() {
			break
		}
		addrs = addrs[1:]
	}
	return addrs
}

// tracing tells whether s is a function of the machinery that runs a BPF
// program (TrimTracing's frames), or a BPF program itself.
func (s *Symbol) tracing() bool {
	return s.Module == "bpf" || slices.ContainsFunc(tracingFrames, func(p string) bool { return strings.HasPrefix(s.Name, p) })
}

// Range is a span of addresses, [Start, End).
type Range struct{ Start, End uint64 }

// UntracedRanges are the kernel's text outside the tracing machinery, in
// address order: each a run of adjacent symbols none of which is a
// tracing frame. An address is in one exactly when TrimTracing keeps a
// frame there; a symbol of unknown size (the last of a module) holds its
// start alone, as in Lookup.
func (t *Table) UntracedRanges() []Range {
	var rs []Range
	for i := range t.syms {
		s := &t.syms[i]
		if s.tracing() {
			continue
		}
		end := s.Addr + max(s.Size, 1)
		if n := len(rs); n > 0 && rs[n-1].End == s.Addr {
			rs[n-1].End = end
			continue
		}
		rs = append(rs, Range{s.Addr, end})
	}
	return rs
}

// Hex is an address as stap's %p prints it: 0x and 16 digits.
func Hex(addr uint64) string { return fmt.Sprintf("0x%016x", addr) }

// Symname is symname(addr): the symbol's name, or the address in hex.
func (t *Table) Symname(addr uint64) string {
	if s, _, ok := t.Lookup(addr); ok {
		return s.Name
	}
	return Hex(addr)
}

// Symdata is symdata(addr): "name+0xOFF/0xSIZE [module]", or the address
// in hex.
func (t *Table) Symdata(addr uint64) string {
	if s, off, ok := t.Lookup(addr); ok {
		return fmt.Sprintf("%s+%#x/%#x [%s]", s.Name, off, s.Size, s.Module)
	}
	return Hex(addr)
}

// FullLine is a line of print_backtrace(): " 0xADDR : name+0xOFF/0xSIZE
// [module]\n", or " 0xADDR\n" without a symbol.
func (t *Table) FullLine(addr uint64) string {
	if _, _, ok := t.Lookup(addr); ok {
		return " " + Hex(addr) + " : " + t.Symdata(addr) + "\n"
	}
	return " " + Hex(addr) + "\n"
}

// SimpleLine is a line of sprint_backtrace(): "name+0xOFF [module]\n", or
// "0xADDR\n" without a symbol.
func (t *Table) SimpleLine(addr uint64) string {
	if s, off, ok := t.Lookup(addr); ok {
		return fmt.Sprintf("%s+%#x [%s]\n", s.Name, off, s.Module)
	}
	return Hex(addr) + "\n"
}

// HexList is backtrace()'s form of a stack: each address in hex followed
// by a space.
func HexList(addrs []uint64) string {
	var b strings.Builder
	for _, a := range addrs {
		b.WriteString(Hex(a) + " ")
	}
	return b.String()
}

// Addresses parses a HexList (or any space-separated hex addresses, as
// print_stack takes them); a word that is not one ends the list, as
// stap's strtol ends its loop on 0.
func Addresses(list string) []uint64 {
	var addrs []uint64
	for _, w := range strings.Fields(list) {
		a, err := strconv.ParseUint(strings.TrimPrefix(w, "0x"), 16, 64)
		if err != nil {
			break
		}
		addrs = append(addrs, a)
	}
	return addrs
}

// Lines renders each frame of a stack (an address, or a word of a list)
// with line and joins them; limit, when positive, keeps whole lines while
// the text stays under it (stap's sprint_syms cleanly stops at
// MAXSTRINGLEN).
func Lines[F any](frames []F, line func(F) string, limit int) string {
	var b strings.Builder
	for _, f := range frames {
		l := line(f)
		if limit > 0 && b.Len()+len(l) > limit {
			break
		}
		b.WriteString(l)
	}
	return b.String()
}

// Address is the address of the kernel's symbol name, of any type (data
// too, which the table leaves out), from a fresh read of /proc/kallsyms;
// ok is false when the listing has no such symbol, or shows no addresses.
func Address(name string) (addr uint64, ok bool) { return AddressIn(name, "") }

// AddressIn is Address of a symbol of module ("" for the kernel's own).
func AddressIn(name, module string) (addr uint64, ok bool) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == name && symbolModule(fields) == module {
			addr, err := strconv.ParseUint(fields[0], 16, 64)
			return addr, err == nil && addr != 0
		}
	}
	return 0, false
}

// symbolModule is the module of a kallsyms line's fields ("[binfmt_misc]"
// after the name), "" for the kernel's own symbols.
func symbolModule(fields []string) string {
	if len(fields) < 4 {
		return ""
	}
	return strings.Trim(fields[3], "[]")
}
