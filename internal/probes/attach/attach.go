// Package attach describes attach points: where the BPF program of a
// kernel probe attaches and how it reads the probe point's arguments. It is
// the contract between the kernel probe families (package probes), which
// resolve each probe point to a Point, the code generator (package bpfgen),
// which loads arguments from the locations a Point gives, and the runtime
// (package bpfrt, a file per Kind), which loads and attaches programs by
// Kind. A new family adds a Kind, and bpfrt's file for it, or reuses one;
// docs/adding-a-probe-family.md walks through it.
package attach

import (
	"fmt"
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
)

// Kind is how a kernel probe's program attaches.
type Kind uint8

const (
	// TPBTF is a BTF-typed raw tracepoint (tp_btf): the context is u64
	// args[], pointers typed so that they may be dereferenced directly.
	TPBTF Kind = iota + 1
	// RawTracepoint: the context is u64 args[], memory is read by helper.
	RawTracepoint
	// Tracepoint is a classic tracepoint, a perf event: the context is the
	// trace event's record, laid out as tracefs's events/SYSTEM/EVENT/format
	// says.
	Tracepoint
	// Uprobe fires at the first instruction of a user-space function, placed
	// by file offset in an executable or library (Path, Offset): the
	// context is the user's registers, struct pt_regs.
	Uprobe
	// Uretprobe fires when that function returns: pt_regs again, the return
	// value in rax, the instruction pointer at the return address.
	Uretprobe
	// PerfEvent is a sampling perf event (perf_event_open), opened on
	// every online CPU: the context is struct bpf_perf_event_data, the
	// interrupted registers (struct pt_regs) first. Perf says which event.
	PerfEvent
	// UprobeMulti is a Uprobe that shares one program with the other
	// points of its Set (the functions a wildcard matched in one file):
	// the program attaches to all of them with one uprobe_multi link
	// (Linux 6.6), and tells them apart by the attach cookie, the index
	// of the point in the program's Offsets.
	UprobeMulti
	// UretprobeMulti is UprobeMulti for uretprobes.
	UretprobeMulti
	// Kprobe fires at the entry of a kernel function (Event, of the
	// kernel or of Module): the context is the kernel's registers, struct
	// pt_regs.
	Kprobe
	// Kretprobe fires when that function returns: pt_regs, the return
	// value in rax; MaxActive bounds the returns pending at once (0: the
	// kernel's default).
	Kretprobe
	// KprobeMulti is a Kprobe that shares one program with the other
	// points of its Set, attached to all of their functions with one
	// kprobe_multi link (Linux 5.18, CONFIG_FPROBE); Symbols, on the point
	// that stands for the Set, names them in the order of their cookies.
	KprobeMulti
	// KretprobeMulti is KprobeMulti for kretprobes.
	KretprobeMulti
	// Fentry is a BPF trampoline at the entry of a kernel function (BTFID,
	// its BTF_KIND_FUNC, in the kernel's BTF or Module's): the context is
	// u64 args[], the function's arguments typed by BTF.
	Fentry
	// Fexit is the trampoline at its return: args[], then the return
	// value in the word after the last argument.
	Fexit
	// KprobeSession is a KprobeMulti whose one program runs both at the
	// entry and at the return of each function of its Set (Linux 6.10):
	// the kfunc bpf_session_is_return tells which, bpf_session_cookie is
	// 8 bytes of the call's own that the entry may fill for the return
	// (where pairing otherwise needs a map keyed by thread), and an entry
	// that returns nonzero skips the return.
	KprobeSession
	// LSM is a BPF LSM program (BPF_PROG_TYPE_LSM, BPF_LSM_MAC) on the
	// security hook Event, called through a BPF trampoline on the
	// kernel's bpf_lsm_HOOK (BTFID, its BTF_KIND_FUNC): the context is
	// u64 args[], the hook's arguments typed by BTF, as fentry's; the
	// program's return value is the hook's verdict (0 allows). Linux 5.7,
	// CONFIG_BPF_LSM, and "bpf" among the kernel's active LSMs.
	LSM
	// Netfilter is a BPF netfilter program (BPF_PROG_TYPE_NETFILTER,
	// Linux 6.4) on a netfilter hook, the Hook of the protocol family PF at
	// Priority (Net): the context is struct bpf_nf_ctx, the hook's state
	// then the packet's sk_buff, pointers typed by BTF; the program's
	// return value is the verdict on the packet (Verdict).
	Netfilter
)

var kindNames = [...]string{TPBTF: "tp_btf", RawTracepoint: "raw_tracepoint", Tracepoint: "tracepoint",
	Uprobe: "uprobe", Uretprobe: "uretprobe", PerfEvent: "perf_event",
	UprobeMulti: "uprobe_multi", UretprobeMulti: "uretprobe_multi",
	Kprobe: "kprobe", Kretprobe: "kretprobe", KprobeMulti: "kprobe_multi", KretprobeMulti: "kretprobe_multi",
	Fentry: "fentry", Fexit: "fexit", KprobeSession: "kprobe_session", LSM: "lsm", Netfilter: "netfilter"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("attach kind %d", uint8(k))
}

// BTFTyped tells whether programs of kind k are BTF-typed tracing programs,
// which may dereference the BTF-typed pointers of helpers such as
// bpf_get_current_task_btf without a probe read.
func (k Kind) BTFTyped() bool { return k == TPBTF || k == Fentry || k == Fexit || k == LSM }

// TypedContext tells whether the verifier types the pointers a program
// of kind k loads from its context by BTF (trusted, never NULL to it):
// the BTF-typed tracing programs' and a netfilter program's.
func (k Kind) TypedContext() bool { return k.BTFTyped() || k == Netfilter }

// Single is the kind of one point of a Set of kind k: a uprobe for an
// uprobe_multi, a kprobe for a kprobe_multi; k itself for other kinds.
func (k Kind) Single() Kind {
	switch k {
	case UprobeMulti:
		return Uprobe
	case UretprobeMulti:
		return Uretprobe
	case KprobeMulti:
		return Kprobe
	case KretprobeMulti:
		return Kretprobe
	}
	return k
}

// Point is the attach point of one kernel probe.
type Point struct {
	Kind Kind
	// The target, by kind. Tracepoints: Event, with its System (the
	// tracefs directory, which a classic tracepoint needs) and, for tp_btf,
	// BTFID, the typedef btf_trace_EVENT the kernel checks the program
	// against.
	Event  string
	System string
	BTFID  kernel.TypeID
	// Uprobes: the function Event of the ELF file Path, at file Offset;
	// PC is where stap's -p2 listing says it is (".dynamic+0x1149").
	// A kprobe's Offset is from its function's start (a kernel
	// statement's).
	Path   string
	Offset uint64
	PC     string
	// USDT markers (a uprobe at the marker): Provider, and the file offset
	// of the marker's semaphore (0: none), which the kernel raises while
	// the uprobe is attached (ref_ctr_offset).
	Provider     string
	RefCtrOffset uint64
	// Kernel functions: Module is the module of the function Event ("" for
	// the kernel itself), whose BTF holds BTFID on fentry and fexit points;
	// MaxActive is a kretprobe's bound on pending returns; Symbols, on the
	// point that stands for a KprobeMulti, KretprobeMulti or KprobeSession
	// Set, are the functions of its points, in the order of their cookies.
	Module    string
	MaxActive int
	Symbols   []string
	// Set, on UprobeMulti and UretprobeMulti points, is what the points
	// that share one program have in common: the points of one Set are
	// the functions of one file a probe point of a script matched, whose
	// probes run the same code. Offsets, on the point that stands for a
	// whole Set (the one its program is loaded for and attached to), are
	// the file offsets of its points, in the order of their cookies.
	Set     *Set
	Offsets []uint64
	// Perf is the event of a PerfEvent point.
	Perf *Perf
	// Net is the hook of a Netfilter point.
	Net *NetHook
	// Verdict, when set, says that the program's return value decides
	// what becomes of the event (a netfilter hook's packet): Default
	// unless the script assigns the argument whose Loc is Verdict a value
	// from 0 to Max.
	Verdict *Verdict
	// What a program finds in its context, whatever the kind (the code
	// generator reads these, never Kind): Regs, the context is or begins
	// with a struct pt_regs, the registers of the probed code when the
	// probe fired (kprobes, uprobes, perf samples; package arch lays it
	// out); User, the probed code is a user thread's (uprobes, USDT
	// markers), so that its instruction pointer is uaddr(); Func, the
	// function a function probe probes (nil for other points); Syscall,
	// the program runs in the thread making a system call, at its entry or
	// its exit, so that the thread's user registers hold the call's
	// arguments (int_arg(n) in syscall probes); I386, the probed code is a
	// 32-bit x86 program on a 64-bit kernel: its function arguments follow
	// the i386 calling convention (4-byte words on the stack above the
	// return address, a 64-bit value in two), its value is eax.
	Regs    bool
	User    bool
	Func    *Func
	Syscall bool
	I386    bool
	// Args are the point's arguments, $NAME in a script, in order. For a
	// classic tracepoint they are the record's fields, read from tracefs
	// when a script first asks for one (probes.Context).
	Args []Arg
}

// Func is the function of a function probe: where its arguments and its
// value are, and what probefunc() and addr() say of it.
type Func struct {
	// Name is the function's name, probefunc().
	Name string
	// Addr is its address in the kernel; 0 for a user function, which the
	// point's Path and Offset place.
	Addr uint64
	// Words: the function's arguments are the first Words words of the
	// context (fentry, fexit); 0: they are registers of the calling
	// convention (Regs), and the stack above the return address.
	Words int
	// Return is where a return probe finds the function's value (rax's
	// slot of pt_regs, the word after fexit's arguments); nil at entry.
	Return *Loc
	// Void: the function returns nothing; its return probe has no
	// $return, and an empty $$return.
	Void bool
	// FromEvent: the kprobe's symbol (Point.Event) is not the function's
	// but one the function is Point.Offset bytes after (_stext, for a
	// function whose name others share).
	FromEvent bool
}

// Set identifies the points that share one program (Point.Set). (It holds
// a byte so that every Set has an address of its own.)
type Set struct{ _ byte }

// Perf is a sampling perf event: perf_event_attr's type and config, and
// every how many events it fires (Period), or how many times a second
// (Freq, when nonzero). A hardware breakpoint (type PERF_TYPE_BREAKPOINT)
// watches BreakLen bytes at BreakAddr for the accesses of BreakType
// (HW_BREAKPOINT_W, _RW).
type Perf struct {
	Type, Config uint64
	Period, Freq uint64

	BreakType           uint32
	BreakAddr, BreakLen uint64
}

// NetHook is a netfilter hook: the protocol family PF (NFPROTO_IPV4 is
// 2), the hook's number in it (NF_INET_LOCAL_IN is 1) and the priority
// among the hook's functions (lower runs first).
type NetHook struct {
	PF, Hook uint32
	Priority int32
}

// Verdict is what a program's return value decides (Point.Verdict).
type Verdict struct {
	Default, Max int32
}

// SyscallExit tells whether p fires as a system call returns:
// raw_syscalls:sys_exit or a syscalls:sys_exit_NAME event.
func (p *Point) SyscallExit() bool {
	return p.Syscall && (p.Event == "sys_exit" || strings.HasPrefix(p.Event, "sys_exit_"))
}

// Target names what p attaches to, for messages: "sched:sched_switch",
// "/usr/bin/ls:main (file offset 0x4d70)".
func (p *Point) Target() string {
	if p.Perf != nil && p.Perf.BreakType != 0 {
		return fmt.Sprintf("hardware breakpoint at %#x (%d bytes)", p.Perf.BreakAddr, p.Perf.BreakLen)
	}
	if p.Perf != nil {
		return fmt.Sprintf("perf event type %d config %d", p.Perf.Type, p.Perf.Config)
	}
	if p.Net != nil {
		return fmt.Sprintf("netfilter hook %d of protocol family %d, priority %d", p.Net.Hook, p.Net.PF, p.Net.Priority)
	}
	if p.Path != "" {
		return fmt.Sprintf("%s:%s (file offset %#x)", p.Path, p.Event, p.Offset)
	}
	if p.System == "" {
		return p.Event
	}
	return p.System + ":" + p.Event
}

// Arg returns the argument called name and its index.
func (p *Point) Arg(name string) (int, *Arg, bool) {
	for i := range p.Args {
		if p.Args[i].Name == name {
			return i, &p.Args[i], true
		}
	}
	return -1, nil, false
}

// Arg is one argument of an attach point.
type Arg struct {
	// Name is the argument's name without its `$`.
	Name string
	// Type is its type in the kernel's BTF, which member chains follow; 0
	// when the kernel does not describe it.
	Type kernel.TypeID
	// CType is a trace record field's C type as its format file spells it
	// ("const char *"), for a field that Type does not describe.
	CType string
	// Local is the name stap's -p2 listing gives the local holding it
	// (__tracepoint_arg_NAME for a tracepoint's).
	Local string
	// Loc is where the program finds it.
	Loc Loc
	// Pointer: the argument is a pointer, though Type may not say so (a
	// trace record's field has a C type, not a BTF one); $$parms prints it
	// with %p.
	Pointer bool
	// Hidden arguments serve the tapset ($__syscall_arg1_u64): $$parms
	// and the "alternatives" of an error leave them out.
	Hidden bool
	// Unavailable: a variable the program's DWARF names but keeps nowhere
	// the probe can read it ($name is refused with the reason); $$parms
	// and $$vars show it as "name=?", as stap does.
	Unavailable bool
}

// Loc is where a program finds an argument: Size bytes (1, 2, 4 or 8) at
// byte Offset of its context, sign-extended when Signed. That is args[i]
// at 8·i for tp_btf, raw tracepoints and fentry; a register's slot of
// struct pt_regs for kprobes and uprobes (rdi at 112 on x86-64); a field
// of the trace event record for a classic tracepoint; a byte within a
// register's slot for %ah. A USDT operand may also be a constant (Const)
// or live in user memory (User).
type Loc struct {
	Offset int
	Size   int
	Signed bool
	// Address: the value is the address of the Size bytes at Offset, not
	// their content (a char array in a trace record, as stap gives it).
	Address bool
	// DataLoc: the 32-bit word at Offset is a trace record's __data_loc,
	// whose low half is the offset in the record of a variable-length
	// array; the value is that array's address.
	DataLoc bool
	// Deref: the context's word at Base is a BTF-typed pointer (tp_btf's
	// struct pt_regs *regs), and the value is the 8 bytes at Offset from
	// it, cut to Size bytes (a syscall's argument in its register slot).
	Deref bool
	Base  int
	// Compat (with Deref): while the thread makes a 32-bit (compat)
	// system call, the value is the low 4 bytes of the register slot at
	// CompatOffset instead (the call's argument in the 32-bit convention),
	// cut to at most 4 bytes.
	Compat       bool
	CompatOffset int
	// Verdict: the value is the program's verdict so far (Point.Verdict),
	// which assigning the argument sets.
	Verdict bool
	// Const: the value is Value (a USDT operand $-5).
	Const bool
	Value int64
	// User: the value is the Size bytes of user memory (the kernel's
	// with User.Kernel) at the address User computes from the registers,
	// sign-extended when Signed, 0 when the memory cannot be read (as
	// stap's user_intN functions); with Address, it is the address itself. A register is read as an
	// argument at its Offset is (through the pointer at Base when Deref).
	User *UserAddr
}

// Plain tells whether the value is the word at Offset of the context as
// it is (a tracepoint's args[] word), which the verifier types as the
// argument's BTF type in a BTF-typed program.
func (l Loc) Plain() bool {
	return !l.Address && !l.DataLoc && !l.Deref && !l.Const && !l.Verdict && l.User == nil && l.Size == 8
}

// UserAddr is an address computed from the registers of the probed
// thread, in user space unless Kernel: Disp plus each term's register
// times its scale (a USDT
// memory operand: -16(%rbp), 8(%rax,%rsi,4); sym(%rip) in PIE code is
// ip plus the symbol's distance from the probed instruction).
type UserAddr struct {
	Disp  int64
	Terms []RegTerm
	// Kernel: the address is in the kernel's memory (a kernel statement's
	// variable in its frame), not the probed program's.
	Kernel bool
}

// RegTerm is a register, named by the offset of its slot in struct
// pt_regs, times Scale.
type RegTerm struct {
	Offset, Scale int
}

// Words lays out params as the words of args[], the context of tp_btf and
// raw tracepoint programs; local prefixes the names -p2 lists.
func Words(params []kernel.Param, local string) []Arg {
	args := make([]Arg, len(params))
	for i, p := range params {
		args[i] = Arg{Name: p.Name, Type: p.Type, Local: local + p.Name, Loc: Loc{Offset: 8 * i, Size: 8}}
	}
	return args
}

// Fields lays out the fields of a trace event's record, the context of a
// classic tracepoint program; local prefixes the names -p2 lists.
func Fields(fields []kernel.Field, local string) []Arg {
	args := make([]Arg, len(fields))
	for i, f := range fields {
		args[i] = Arg{Name: f.Name, Local: local + f.Name, Pointer: f.Pointer(), CType: f.CType,
			Loc: Loc{Offset: f.Offset, Size: f.Size, Signed: f.Signed, Address: f.Array, DataLoc: f.DataLoc}}
	}
	return args
}
