package probes

import (
	"cmp"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/parallel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// syscall.NAME and syscall.NAME.return, for every system call of the running
// kernel: the names are those of tracefs's syscalls:sys_enter_NAME events,
// read when a script first names a syscall point, and each point is that
// event (or sys_exit_NAME), a classic tracepoint whose arguments are the
// call's ($fd, $buf, $count; $ret on return).
//
// A return takes stap's .maxactive(N), which bounds the kretprobe
// instances of its kernel function; an event has none to bound, so it
// changes nothing here.
//
// This family is the generic layer: the tapset (tapset/syscalls.stp)
// defines syscall.NAME itself as a probe alias, with SystemTap's named
// locals and argstr, for the calls scripts use most, and such an alias
// takes the name from this family (see node.native). Every other call,
// and every return, gets the locals every syscall probe has, from a
// prologue built here:
//
//	name    the call's name, SystemTap's (pread, not pread64)
//	argstr  its arguments by their C types: pointers %p, signed %d,
//	        unsigned %u (__syscall_argstr)
//	retval, retstr  on return: $ret, and $ret as return_str(1, ...) gives it
//
// Which programs serve a point that stands for many calls is decided here
// for returns (expandSyscall) and by the elaborator for entries (sema's
// syscalls.go), to which this family gives the entries of its calls as
// one point when it may (expandEntries); docs/syscalls.md has the table.

// The event name prefixes of a call's entry and return.
const (
	syscallEnter = "sys_enter_"
	syscallExit  = "sys_exit_"
)

func syscallFamily(k KernelInfo, listing bool) *Family {
	names := sync.OnceValues(func() ([]string, error) {
		// whether k makes compat calls is a search of its BTF's strings,
		// made while SyscallNames waits for tracefs's list of events
		compat := make(chan bool, 1)
		go func() { compat <- (&Context{kernel: k}).CompatSyscalls() }()
		names, err := SyscallNames(k)
		return withCompatOnly(names, err, <-compat)
	})
	return &Family{Name: "syscall", Paths: []string{"syscall.*", "syscall.*.return", "syscall.*.return.maxactive(number)"}, Kernel: true,
		Names: names, OptionalLocals: []string{"retstr"},
		Expand:   func(p *Point) ([]*Point, error) { return expandSyscall(k, p, listing) },
		Prefetch: func(p *Point) { prefetchSyscalls(k, p) }}
}

// prefetchSyscalls reads the raw syscall tracepoint that a point of many
// calls shares (expandReturns, expandEntries): its event in tracefs, its
// prototype in the BTF, whether it attaches BTF-typed; errno.stp's
// derivation waited a millisecond for them.
func prefetchSyscalls(k KernelInfo, p *Point) {
	if len(p.Components) < 2 || !strings.ContainsAny(p.Components[1].Name, "*?[") {
		return
	}
	event := "sys_enter"
	if len(p.Components) > 2 {
		event = "sys_exit"
	}
	rawSyscalls(k, event)
}

// Where SystemTap's name for a call differs from the kernel's event name
// or from the architecture's table of numbers (syscall_name).
var (
	// stapEventNames maps SystemTap's name to the kernel's event name.
	stapEventNames = map[string]string{"stat": "newstat", "fstat": "newfstat", "lstat": "newlstat",
		"uname": "newuname", "sendfile": "sendfile64", "pread": "pread64", "pwrite": "pwrite64",
		"fstatat": "newfstatat"}
	// tableNames maps SystemTap's name to the name in the table of numbers.
	tableNames = map[string]string{"pread": "pread64", "pwrite": "pwrite64", "fstatat": "newfstatat",
		"umount": "umount2"}
)

// eventName is the trace event name of call name.
func eventName(name string) string { return cmp.Or(stapEventNames[name], name) }

// stapName is SystemTap's name of the call whose trace event is event's.
func stapName(event string) string { return keyOf(stapEventNames, event) }

// keyOf is the key of m whose value is v, v itself when there is none.
func keyOf(m map[string]string, v string) string {
	for k, mv := range m {
		if mv == v {
			return k
		}
	}
	return v
}

// SyscallNames lists the system calls of the kernel k describes, sorted,
// by SystemTap's names.
func SyscallNames(k KernelInfo) ([]string, error) {
	tps, err := k.MatchTracepoints("syscalls:" + syscallEnter + "*")
	if err != nil {
		return nil, kernelError(err)
	}
	var names []string
	for _, tp := range tps {
		if name, ok := strings.CutPrefix(tp.Event, syscallEnter); ok && tp.System == "syscalls" {
			names = append(names, stapName(name))
		}
	}
	if len(names) == 0 {
		why := "the kernel has no syscalls:sys_enter_* trace events (CONFIG_FTRACE_SYSCALLS)"
		if err := k.TracefsError(); err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("cannot list the kernel's system calls: %s", why)
	}
	sort.Strings(names)
	return names, nil
}

// expandSyscall expands syscall.PATTERN[.return], whose pattern matched
// the calls p.Names, by the cheaper plan. Entries, and returns of a few
// calls, are each call's own trace event: the other calls pay nothing.
// Returns of more calls share one program on raw_syscalls:sys_exit that
// keeps the calls' numbers (syscallSet): one program to load and attach
// however many calls match, as syscall_any.return costs, where a program
// per call would take seconds to load. Entries of more calls, for a body
// that may share them, are one point the elaborator makes one program of
// (expandEntries). A listing (Config.Listing) gives each call its own
// event.
func expandSyscall(k KernelInfo, p *Point, listing bool) ([]*Point, error) {
	names := p.Names
	if names == nil {
		names = []string{p.Components[1].Name}
	}
	ret := len(p.Components) > 2
	names, compat := splitCompatOnly(names, p.Components[1].Name)
	if compat != "" {
		q, err := compatOnlySyscall(k, p, compat, ret)
		return []*Point{q}, err
	}
	var out []*Point
	if ret && len(names) > narrowCalls && !listing {
		wide, rest, err := expandReturns(k, p, names)
		if err != nil {
			return nil, err
		}
		out, names = append(out, wide...), rest
	}
	if !ret && p.SharedEntries && len(names) > narrowCalls && !listing {
		generic, rest, err := expandEntries(k, p, names)
		if err != nil {
			return nil, err
		}
		out, names = append(out, generic...), rest
	}
	own, err := syscallEvents(k, p, names, ret)
	if err != nil {
		return nil, err
	}
	out = append(out, own...)
	if len(names) > 1 && ret {
		out[len(out)-1].Plan = fmt.Sprintf("%s: the returns of %d system calls on their own trace events", p.Name(), len(names))
	}
	return out, nil
}

// narrowCalls is the most calls whose returns get a program each.
const narrowCalls = 4

// syscallEvent is syscall.NAME[.return] on the call's own trace event,
// named as pp() names it, with the generic prologue.
func syscallEvent(k KernelInfo, p *Point, name string, ret bool) (*Point, error) {
	event := syscallEnter + eventName(name)
	if ret {
		event = syscallExit + eventName(name)
	}
	a := &attach.Point{Kind: attach.Tracepoint, System: "syscalls", Event: event, Syscall: true}
	q := *p
	q.Names = nil
	q.Components = traceComponents(p.Components[0], a.Target())
	q.Script = "syscall." + name
	if ret {
		q.Script += ".return"
	}
	q.Context = &Context{kernel: k, Attach: a}
	text := fmt.Sprintf("name = %q\n", name)
	if ret {
		q.Context.entry = func() *Entry { return eventEntry(k, syscallEnter+eventName(name)) }
		q.Context.aliases = syscallReturnAliases
		text += returnLocals
	} else {
		if err := q.Context.loadFields(); err != nil {
			return nil, &Error{Msg: err.Msg}
		}
		text += argstrOf(a.Args) + "\n"
	}
	prologue, err := parsePrologue("syscall."+name, text)
	q.Prologue = prologue
	return &q, err
}

// GenericEntry is one call among the entries a point serves together
// (Point.Entries): its number, its name as SystemTap's, and how
// __syscall_argstr prints its arguments.
type GenericEntry struct {
	Nr    int
	Name  string
	Kinds int
}

// expandEntries serves the entries of names together, for a probe whose
// body reads no context variable (Point.SharedEntries): one point on
// raw_syscalls:sys_enter that keeps each call's number, name and the
// kinds of its arguments (Point.Entries) and the prologue they share,
// their argstr from the registers, which the elaborator makes the calls'
// cases of one program (sema's mergeSyscallEntries). Deriving a probe of
// each call's event, the generic layer's 190 calls of syscall.* on
// x86_64, to merge them there took a third of that script's pass 2. It
// returns the names this cannot serve (a call missing from bpftap's table
// of numbers) for their own events, all of them where the kernel has no
// raw_syscalls:sys_enter to read the registers from.
func expandEntries(k KernelInfo, p *Point, names []string) ([]*Point, []string, error) {
	wide := (&Context{kernel: k}).SyscallEntries()
	if wide == nil {
		return nil, names, nil
	}
	var served []GenericEntry
	var rest []string
	for _, name := range names {
		if nr, ok := numberOf(name); ok {
			served = append(served, GenericEntry{Nr: nr, Name: name})
		} else {
			rest = append(rest, name)
		}
	}
	entries, err := parallel.Map(len(served), func(i int) (GenericEntry, error) { return withKinds(k, served[i]) })
	if err != nil || len(entries) == 0 {
		return nil, names, err
	}
	// named as its first call's probe, which a program merging calls
	// keeps the point of
	slices.SortFunc(entries, func(a, b GenericEntry) int { return a.Nr - b.Nr })
	q := *p
	q.Names = nil
	q.Components = traceComponents(p.Components[0], "syscalls:"+syscallEnter+eventName(entries[0].Name))
	q.Script = "syscall." + entries[0].Name
	q.Context, q.Entries = wide, entries
	q.Prologue, err = parsePrologue("syscall.*", sharedArgstr)
	return []*Point{&q}, rest, err
}

// withKinds is call c with the kinds of its arguments, read from its
// entry event's record (its fields alone: not the raw words loadFields
// adds, which kinds leave out).
func withKinds(k KernelInfo, c GenericEntry) (GenericEntry, error) {
	ctx := &Context{kernel: k, Attach: &attach.Point{Kind: attach.Tracepoint, System: "syscalls", Event: syscallEnter + eventName(c.Name), Syscall: true}}
	args, err := ctx.eventArgs()
	if err != nil {
		return GenericEntry{}, &Error{Msg: err.Msg}
	}
	c.Kinds = argKinds(args)
	return c, nil
}

// syscallReturnAliases are the other names of a return's arguments:
// $return is $ret, the call's value, as in stap's syscall tapset.
var syscallReturnAliases = map[string]string{"return": "ret"}

// returnLocals are the locals of every return.
const returnLocals = "retval = $ret\nretstr = return_str(1, retval)\n"

// expandReturns puts the returns of names on raw_syscalls:sys_exit, the
// probe keeping the calls' numbers only; it returns the names this
// cannot serve (a call missing from bpftap's table of numbers) for their
// own events.
func expandReturns(k KernelInfo, p *Point, names []string) ([]*Point, []string, error) {
	nrs, unknown := syscallNumbers(names)
	if len(nrs) == 0 {
		return nil, names, nil
	}
	a, err := rawSyscalls(k, "sys_exit")
	if a == nil {
		return nil, names, err
	}
	q := *p
	q.Names = nil
	q.Components = traceComponents(p.Components[0], "raw_syscalls:sys_exit")
	q.Context = &Context{kernel: k, Attach: a, entry: func() *Entry { return rawEntries(k, nrs) }, aliases: syscallReturnAliases}
	text := fmt.Sprintf("__syscall_nr = __syscall_native_nr($regs->%[1]s)\nif (!(%[2]s)) next\nname = %[3]ssyscall_name($regs->%[1]s)\n%[4]s",
		syscallNrRegister(), syscallSet(nrs, "__syscall_nr"), renames(), returnLocals)
	prologue, err := parsePrologue("syscall.*.return", text)
	q.Prologue = prologue
	q.Plan = fmt.Sprintf("%s: the returns of %d system calls share one program on raw_syscalls:sys_exit", p.Name(), len(nrs))
	return []*Point{&q}, unknown, err
}

// syscallNumbers returns the numbers of names on this architecture, and
// the names it has none for.
func syscallNumbers(names []string) (nrs []int, unknown []string) {
	for _, name := range names {
		if nr, ok := numberOf(name); ok {
			nrs = append(nrs, nr)
		} else {
			unknown = append(unknown, name)
		}
	}
	sort.Ints(nrs)
	return nrs, unknown
}

// numberOf is the number of call name (SystemTap's name) on this
// architecture.
func numberOf(name string) (int, bool) {
	nr, ok := numbersByName()[cmp.Or(tableNames[name], name)]
	return nr, ok
}

// numbersByName indexes the architecture's table of numbers by name, once
// (the merge of syscall.* asks for the number of each of its calls).
var numbersByName = sync.OnceValue(func() map[string]int {
	byName := map[string]int{}
	for nr, name := range tapset.SyscallNames(syntax.HostArch()) {
		if name != "" {
			byName[name] = nr
		}
	}
	return byName
})

// renames are the conditions that give a call SystemTap's name where
// syscall_name's differs, by number (cheaper in BPF than by name).
func renames() string {
	var b strings.Builder
	for _, stap := range slices.Sorted(maps.Keys(tableNames)) {
		if nrs, _ := syscallNumbers([]string{stap}); len(nrs) == 1 {
			fmt.Fprintf(&b, "__syscall_nr == %d ? %q : ", nrs[0], stap)
		}
	}
	return b.String()
}

// syscallSet is a condition true for the numbers nrs (sorted) of
// subject: __syscall_in of their ranges ("0-133,135,140-155",
// tapset.ParseSyscallSet's).
func syscallSet(nrs []int, subject string) string {
	var terms []string
	for i := 0; i < len(nrs); {
		j := i
		for j+1 < len(nrs) && nrs[j+1] == nrs[j]+1 {
			j++
		}
		if i == j {
			terms = append(terms, strconv.Itoa(nrs[i]))
		} else {
			terms = append(terms, fmt.Sprintf("%d-%d", nrs[i], nrs[j]))
		}
		i = j + 1
	}
	return fmt.Sprintf("__syscall_in(%s, %q)", subject, strings.Join(terms, ","))
}

// syscallNrRegister is the member of struct pt_regs that holds the
// number of the call in progress.
func syscallNrRegister() string {
	if regs := arch.Host(); regs != nil {
		return regs.SyscallNrMember
	}
	return "orig_ax"
}

// syscallNrOf is the expression of the call's number in a probe on
// raw_syscalls:sys_enter, or on sys_exit with ret, whose tracepoint has
// no number: the register the architecture keeps it in.
func syscallNrOf(ret bool) string {
	if ret {
		return "$regs->" + syscallNrRegister()
	}
	return "$id"
}

// traceComponents are the components of kernel.trace("TARGET"), positioned
// at first.
func traceComponents(first *syntax.Component, target string) []*syntax.Component {
	at := first.Pos
	return []*syntax.Component{{Pos: at, Name: "kernel"},
		{Pos: at, Name: "trace", Arg: &syntax.StringLit{Typed: syntax.Typed{Pos: at}, Value: target, Raw: target}}}
}

// PrologueCalls lists, by the points of a family, the library functions
// the prologues of its points call (the texts given to parsePrologue),
// which pass 1 must parse even when the script itself names none of them
// (internal/tapset's index; the driver's TestPartialLibrary fails when one
// is missing): a syscall.*.return reaches no entry's argstr. The calls the
// elaborator makes of operators are listed under the points they go with.
var PrologueCalls = []tapset.Implied{
	{Point: "syscall.*", Calls: []string{"__syscall_argstr"}},
	{Point: "syscall.*.return", Calls: []string{"return_str"}, Local: "retstr"}, // errno.stp, for a script that reads retstr
	{Point: "process", Suffixes: true, Calls: []string{"__process_fork_nr", "__process_exec_nr", "__process_in_target", "__process_exe_is"}},
	// perf.*.process(PATH)'s prologue; @perf, which goes with a
	// perf.*.counter point, becomes a call of __perf_counter
	{Point: "perf", Suffixes: true, Calls: []string{"__process_exe_is", "__perf_counter"}},
}

// parsePrologue parses the text of a prologue, named as a tapset file.
func parsePrologue(name, text string) (*syntax.Block, error) {
	src := syntax.NewSource("tapset/"+name, "probe begin {\n"+text+"}\n")
	f, err := syntax.Parse(src, &syntax.Config{Tapset: true})
	if err != nil {
		return nil, fmt.Errorf("the prologue of %s: %w", name, err)
	}
	return f.Decls[0].(*syntax.ProbeDecl).Body, nil
}

// The generic argstr is one tapset function for every call,
// __syscall_argstr(kinds, a1, ..., a6), given each argument's raw 64-bit
// word and, packed five bits an argument in kinds, how to print it: 16 for
// an argument present, 8 a pointer (%p), 4 signed (%d, else %u), the low
// two bits the log2 of its size (the word is cut to it). The call's own
// part is a number, so the entries of many calls share the code that
// formats them (see sema's mergeSyscallEntries).

// argstrOf is the generic argstr of a call with the given arguments (the
// record's fields, __syscall_nr left out).
func argstrOf(args []attach.Arg) string {
	return fmt.Sprintf("__syscall_kinds = %#x\n%s", argKinds(args), sharedArgstr)
}

// argKinds packs how __syscall_argstr prints each of args.
func argKinds(args []attach.Arg) int {
	kinds := 0
	n := 0
	for _, a := range args {
		if a.Name == "__syscall_nr" || a.Hidden || n == 6 {
			continue
		}
		k := 16 | bits.Len(uint(a.Loc.Size)) - 1
		switch {
		case a.Pointer:
			k |= 8
		case a.Loc.Signed:
			k |= 4
		}
		kinds |= k << (5 * n)
		n++
	}
	return kinds
}

// sharedArgstr is the part of the generic argstr every call shares, from
// the raw words of the arguments.
var sharedArgstr = func() string {
	var regs []string
	for i := range 6 {
		regs = append(regs, EntryArg(i, 8, false))
	}
	return fmt.Sprintf("argstr = __syscall_argstr(__syscall_kinds, %s)\n", strings.Join(regs, ", "))
}()

// appendRawCallArgs appends to the fields of a call's entry event (the
// slice grown once) the hidden arguments $__syscall_arg1_u64 ...
// _arg6_u64: each argument's raw word in the record. The
// record of a call with fewer than six arguments has no word for the
// others: they read __syscall_nr instead, a value __syscall_argstr never
// looks at (kinds marks them absent).
func appendRawCallArgs(fields []attach.Arg) []attach.Arg {
	var offsets [6]int
	n, nr := 0, 8
	for _, f := range fields {
		if f.Name == "__syscall_nr" {
			nr = f.Loc.Offset
		} else if n < len(offsets) {
			offsets[n] = f.Loc.Offset
			n++
		}
	}
	fields = slices.Grow(fields, len(offsets))
	for i := range offsets {
		loc := attach.Loc{Offset: nr, Size: 4}
		if i < n {
			loc = attach.Loc{Offset: offsets[i], Size: 8}
		}
		name := strings.TrimPrefix(EntryArg(i, 8, false), "$")
		fields = append(fields, attach.Arg{Name: name, Local: name, Loc: loc, Hidden: true})
	}
	return fields
}

// Entries of many calls share one program too, but their prologues differ
// call by call (the tapset's named locals, each call's argstr), so the
// elaborator merges them (sema's mergeSyscallEntries) into one probe on
// raw_syscalls:sys_enter whose body dispatches on the call's number; the
// context of that probe is SyscallEntries. Each call's arguments, $fd or
// $filename on its own event, become registers of the entry's pt_regs,
// cut to the width of their C type: EntryArg names them.

// EntryArg names argument i (0-based) of a call, cut to size bytes (signed
// or not), in SyscallEntries: "$__syscall_arg1_s32". The names of the six
// arguments in 1, 2, 4 and 8 bytes are made once (syscall.* asks for them
// thousands of times).
func EntryArg(i, size int, signed bool) string {
	if i < 0 || i >= 6 || size <= 0 || size > 8 || size&(size-1) != 0 {
		return entryArgName(i, size, signed)
	}
	sign := 0
	if signed {
		sign = 1
	}
	return entryArgNames()[i][sign][bits.Len(uint(size))-1]
}

// entryArgNames are EntryArg's names, by argument, sign and size.
var entryArgNames = sync.OnceValue(func() (names [6][2][4]string) {
	for i := range names {
		for sign := range 2 {
			for size := range 4 {
				names[i][sign][size] = entryArgName(i, 1<<size, sign == 1)
			}
		}
	}
	return names
})

func entryArgName(i, size int, signed bool) string {
	sign := "u"
	if signed {
		sign = "s"
	}
	return fmt.Sprintf("$__syscall_arg%d_%s%d", i+1, sign, 8*size)
}

// SyscallEntries returns the context of a probe serving the entries of
// many calls: raw_syscalls:sys_enter as tp_btf, whose $id is the call's
// number, with the arguments EntryArg names. Nil when the kernel cannot
// give it (no tp_btf, an architecture without a register table).
func (c *Context) SyscallEntries() *Context { return c.syscallEntries(eitherRegisters) }

// CompatSyscallEntries is SyscallEntries for compat calls alone (a
// probe that leaves every other call, sema's compat twins): the
// arguments are the compat registers' 32 bits; nil where the
// architecture has none.
func (c *Context) CompatSyscallEntries() *Context {
	if regs := arch.Host(); regs == nil || regs.Compat == nil {
		return nil
	}
	return c.syscallEntries(compatRegisters)
}

// syscallRegisters says which registers a probe serving the entries of
// many calls reads their arguments from.
type syscallRegisters int

const (
	eitherRegisters syscallRegisters = iota // the native ones, the compat ones in a compat call
	nativeRegisters                         // the native ones alone: the probe leaves compat calls
	compatRegisters                         // the compat ones alone: the probe leaves native calls
)

// syscallEntries is SyscallEntries with the arguments read from the
// registers from names.
func (c *Context) syscallEntries(from syscallRegisters) *Context {
	regs := arch.Host()
	a, _ := rawSyscalls(c.kernel, "sys_enter")
	if a == nil || regs == nil || a.Kind != attach.TPBTF {
		return nil
	}
	for i, off := range regs.SyscallArgs {
		for _, size := range []int{1, 2, 4, 8} {
			for _, signed := range []bool{false, true} {
				name := strings.TrimPrefix(EntryArg(i, size, signed), "$")
				loc := attach.Loc{Deref: true, Base: 0, Offset: off, Size: size, Signed: signed}
				switch {
				case from == compatRegisters:
					loc.Offset, loc.Size = regs.Compat.SyscallArgs[i], min(size, 4)
				case from == eitherRegisters && regs.Compat != nil:
					loc.Compat, loc.CompatOffset = true, regs.Compat.SyscallArgs[i]
				}
				a.Args = append(a.Args, attach.Arg{Name: name, Local: name, Hidden: true, Loc: loc})
			}
		}
	}
	return &Context{kernel: c.kernel, Attach: a}
}

// SyscallReturns returns the context of a probe serving the returns of
// many calls: raw_syscalls:sys_exit, whose $ret is the call's value and
// $regs the thread's registers; nil when the kernel does not have it.
func (c *Context) SyscallReturns() *Context {
	a, _ := rawSyscalls(c.kernel, "sys_exit")
	if a == nil {
		return nil
	}
	return &Context{kernel: c.kernel, Attach: a, aliases: c.aliases}
}

// CompatSyscalls tells whether the kernel makes 32-bit (compat) system
// calls, which its syscalls:* events do not see (x86_64's and arm64's
// ignore them): its BTF has the function that dispatches them or an i386
// call's wrapper (x86_64, IA32_EMULATION) or ARM's private calls (arm64,
// CONFIG_COMPAT). Debian 11's 5.10 has only the wrappers: the dispatch is
// noinstr there (do_int80_syscall_32), and BTF leaves out functions ftrace
// cannot trace.
func (c *Context) CompatSyscalls() bool {
	if regs := arch.Host(); regs == nil || regs.Compat == nil {
		return false
	}
	b, err := c.kernel.BTF()
	if err != nil {
		return false
	}
	for _, name := range []string{"ia32_sys_call", "do_int80_syscall_32", "__ia32_sys_read", "compat_arm_syscall"} {
		if len(b.IDsByName(name)) > 0 {
			return true
		}
	}
	return false
}

// CompatSyscallNumbers returns the numbers of the compat calls that are
// the native call nr (fcntl and fcntl64 are x86_64's fcntl), sorted.
func CompatSyscallNumbers(nr int) []int { return slices.Clone(compatByNative()[nr]) }

// compatByNative indexes the host's compat calls by the native call each
// is, once (the merges of syscall.* ask at each of their calls).
var compatByNative = sync.OnceValue(func() map[int][]int {
	byNative := map[int][]int{}
	for compat, native := range tapset.NativeSyscallNumbers(syntax.HostArch()) {
		if native >= 0 {
			byNative[int(native)] = append(byNative[int(native)], compat)
		}
	}
	return byNative
})

// CompatGuard is the statement that leaves a probe on
// raw_syscalls:sys_enter (sys_exit with ret) unless the call is a compat
// call that is the native call nr; nil where there is none.
func CompatGuard(nr int, ret bool) syntax.Stmt {
	nrs := CompatSyscallNumbers(nr)
	if nrs == nil {
		return nil
	}
	b, err := parsePrologue("compat calls", fmt.Sprintf("if (!(%s) || !__syscall_compat()) next\n", syscallSet(nrs, syscallNrOf(ret))))
	if err != nil {
		panic(err) // the text is bpftap's own
	}
	return b.Stmts[0]
}

// CallArgs returns the arguments of a call's own entry event (the
// record's fields but __syscall_nr), reading its format file: listed once,
// the same slice at every call (sema asks for them three times a call),
// which its callers do not change.
func (c *Context) CallArgs() ([]attach.Arg, error) {
	if err := c.loadFields(); err != nil {
		return nil, err
	}
	if c.callArgs == nil {
		n := 0
		for _, a := range c.Attach.Args {
			if ownCallArg(a) {
				n++
			}
		}
		c.callArgs = make([]attach.Arg, 0, n)
		for _, a := range c.Attach.Args {
			if ownCallArg(a) {
				c.callArgs = append(c.callArgs, a)
			}
		}
	}
	return c.callArgs, nil
}

// ownCallArg tells whether a of a call's entry event is an argument of
// the call: not the event's __syscall_nr, nor a raw word the tapset reads.
func ownCallArg(a attach.Arg) bool { return a.Name != "__syscall_nr" && !a.Hidden }

// SyscallNumber returns the number of the call whose trace event is
// syscalls:EVENT (sys_enter_NAME or sys_exit_NAME) on this architecture.
func SyscallNumber(event string) (int, bool) {
	name, ok := strings.CutPrefix(event, syscallEnter)
	if !ok {
		name, ok = strings.CutPrefix(event, syscallExit)
	}
	if !ok {
		return 0, false
	}
	nrs, _ := syscallNumbers([]string{stapName(name)})
	if len(nrs) != 1 {
		return 0, false
	}
	return nrs[0], true
}

// The entries the @entry of a syscall return pairs with: a call's own
// return (syscall.NAME.return, on sys_exit_NAME) pairs with its own entry
// event, the returns of many calls on raw_syscalls:sys_exit with those
// calls on raw_syscalls:sys_enter.

// eventEntry is the Entry of the trace event syscalls:EVENT.
func eventEntry(k KernelInfo, event string) *Entry {
	a := &attach.Point{Kind: attach.Tracepoint, System: "syscalls", Event: event, Syscall: true}
	return &Entry{Context: &Context{kernel: k, Attach: a}, Name: traceName(a)}
}

// rawEntries is the Entry of the calls nrs on raw_syscalls:sys_enter;
// nil when the kernel does not have it.
func rawEntries(k KernelInfo, nrs []int) *Entry {
	a, _ := rawSyscalls(k, "sys_enter")
	if a == nil {
		return nil
	}
	guard, err := parsePrologue("syscall entries", fmt.Sprintf("if (!(%s)) next\n", syscallSet(nrs, "$id")))
	if err != nil {
		return nil
	}
	return &Entry{Context: &Context{kernel: k, Attach: a}, Name: traceName(a), Guard: guard}
}

// traceName is the probe point kernel.trace("SYSTEM:EVENT") of a.
func traceName(a *attach.Point) string { return fmt.Sprintf("kernel.trace(%q)", a.Target()) }

// rawSyscalls is the attach point of raw_syscalls:EVENT (sys_enter or
// sys_exit), which serves many calls with one program; nil when the
// kernel does not have it (with the error when its tracepoints could not
// be read).
func rawSyscalls(k KernelInfo, event string) (*attach.Point, error) {
	return tracepointAttach(k, "raw_syscalls:"+event)
}

// syscallAliases are the families SystemTap reaches the system calls by,
// all of them syscall here (tapset/syscalls.stp).
var syscallAliases = []string{"syscall", "nd_syscall", "tp_syscall", "nd1_syscall", "nd2_syscall"}

// SyscallFunction is the kernel function that serves the one system call
// a probe point names as a script names it (syscall.openat,
// nd_syscall.pread.return), as probefunc() gives it: the architecture's
// prefix, "sys_" and the call's SYSCALL_DEFINE name, which is its trace
// event's ("__x64_sys_pread64"). It is "" for a point of no single call
// (syscall.*), or on an architecture bpftap has no table for.
func SyscallFunction(script string, regs *arch.Regs) string {
	name, ok := syscallPointName(script)
	if !ok || regs == nil || regs.SyscallPrefix == "" || name == "" || strings.ContainsAny(name, "*?[{.") {
		return ""
	}
	return syscallFunction(regs, name)
}

// SyscallFunctions lists by number the kernel functions of the native
// system calls of regs's architecture (SyscallFunction's), "" in the
// table's gaps; nil where bpftap has no table.
func SyscallFunctions(regs *arch.Regs) []string {
	if regs == nil || regs.SyscallPrefix == "" {
		return nil
	}
	names := tapset.SyscallNames(regs.Name)
	if names == nil {
		return nil
	}
	funcs := make([]string, len(names))
	for nr, name := range names {
		if name != "" {
			funcs[nr] = syscallFunction(regs, keyOf(tableNames, name))
		}
	}
	return funcs
}

// SyscallPoints are, indexed by number, what pn() and pp() give in a
// probe of the call's entry, or return, on its own trace event
// (syscall.NAME, kernel.trace("syscalls:sys_enter_EVENT"); .return,
// sys_exit_EVENT): the merged programs of many calls name each call so.
// nil where bpftap cannot name the calls.
func SyscallPoints(regs *arch.Regs, ret bool) (pn, pp []string) {
	names := tapset.SyscallNames(regs.Name)
	if names == nil {
		return nil, nil
	}
	suffix, event := "", syscallEnter
	if ret {
		suffix, event = ".return", syscallExit
	}
	pn, pp = make([]string, len(names)), make([]string, len(names))
	for nr, name := range names {
		if name != "" {
			stap := keyOf(tableNames, name)
			pn[nr] = "syscall." + stap + suffix
			pp[nr] = fmt.Sprintf("kernel.trace(%q)", "syscalls:"+event+eventName(stap))
		}
	}
	return pn, pp
}

// SyscallFamilyPoint tells whether script names a point of the syscall
// family or one of its aliases (syscall.*, nd_syscall.read.return).
func SyscallFamilyPoint(script string) bool {
	_, ok := syscallPointName(script)
	return ok
}

// syscallPointName is what follows the family in a point of the syscall
// family, .return left out.
func syscallPointName(script string) (string, bool) {
	for _, family := range syscallAliases {
		if name, ok := strings.CutPrefix(script, family+"."); ok {
			return strings.TrimSuffix(name, ".return"), true
		}
	}
	return "", false
}

// syscallFunction is the kernel function of the call stap names name.
func syscallFunction(regs *arch.Regs, name string) string {
	return regs.SyscallPrefix + "sys_" + eventName(name)
}
