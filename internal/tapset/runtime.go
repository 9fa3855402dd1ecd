package tapset

import (
	"fmt"
	"math"
	"strconv"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// The runtime's limits and run-time error messages, as stap's runtime has
// them. The interpreter (user-side probes) and the BPF code generator
// (kernel probes) both enforce the limits and raise these errors, so that a
// script fails the same way wherever its code runs.

// Limits are the run-time limits stap takes from -D NAME=VALUE.
type Limits struct {
	MaxStringLen  int64 // MAXSTRINGLEN: string buffers, including the NUL byte
	MaxAction     int64 // MAXACTION; begin and end handlers get ten times as many (MAXACTION_INTERRUPTIBLE)
	MaxNesting    int64 // MAXNESTING; 0 means computed from the call graph as stap does
	MaxMapEntries int64 // MAXMAPENTRIES: capacity of arrays declared without a size
	MaxErrors     int64 // MAXERRORS: errors tolerated before the session stops
	MaxSkipped    int64 // MAXSKIPPED
	// MaxStacks is bpftap's own: the distinct stacks the kernel keeps
	// (the size of its stack maps), stap's runtime having none.
	MaxStacks int64 // MAXSTACKS
}

// DefaultLimits are stap's defaults on a 64-bit machine.
func DefaultLimits() Limits {
	return Limits{MaxStringLen: format.DefaultMaxStringLen, MaxAction: 1000, MaxMapEntries: 2048, MaxSkipped: 100, MaxStacks: 16384}
}

// Define applies a -D NAME=VALUE setting. It reports false for names that are
// not run-time limits (the driver may accept and ignore those, as they only
// matter to stap's C compiler). A value outside the limit's range is an error.
func (l *Limits) Define(name, value string) (bool, error) {
	r, ok := limitRanges[name]
	if !ok {
		return false, nil
	}
	v, err := strconv.ParseInt(value, 0, 64)
	if err != nil || v < r.min || v > r.max {
		return true, fmt.Errorf("invalid value %q for %s (%s: %d to %d)", value, name, r.what, r.min, r.max)
	}
	*r.field(l) = v
	return true, nil
}

// limitRanges are the values each limit accepts. stap bounds them only by
// the C types of its runtime; bpftap caps the ones that size memory or
// recursion, so that a typo cannot take gigabytes or overflow the stack.
var limitRanges = map[string]struct {
	field    func(*Limits) *int64
	min, max int64
	what     string
}{
	"MAXSTRINGLEN": {func(l *Limits) *int64 { return &l.MaxStringLen }, 2, 1 << 20, "bytes, with the NUL"},
	"MAXACTION":    {func(l *Limits) *int64 { return &l.MaxAction }, 0, math.MaxInt64, "statements"},
	"MAXNESTING":   {func(l *Limits) *int64 { return &l.MaxNesting }, 0, 10000, "nested calls, 0 for stap's computed depth"},
	"MAXMAPENTRIES": {func(l *Limits) *int64 { return &l.MaxMapEntries }, 1, math.MaxUint32,
		"elements, the kernel's u32"},
	"MAXERRORS":  {func(l *Limits) *int64 { return &l.MaxErrors }, 0, math.MaxInt64, "errors"},
	"MAXSKIPPED": {func(l *Limits) *int64 { return &l.MaxSkipped }, 0, math.MaxInt64, "skipped probes"},
	// a user stack takes 800 bytes in two maps: 2^18 of them ~200 MiB
	"MAXSTACKS": {func(l *Limits) *int64 { return &l.MaxStacks }, 1, 1 << 18, "distinct stacks"},
}

// Run-time error messages (stap prints them after "ERROR: ").
const (
	MsgDivisionByZero     = "division by 0"
	MsgMaxAction          = "MAXACTION exceeded"
	MsgMaxNesting         = "MAXNESTING exceeded"
	MsgFunctionsExhausted = "all functions exhausted"
	// MsgPositionOutOfBounds is stringat()'s, for a position outside the
	// string.
	MsgPositionOutOfBounds = "Position out of bounds"
	// MsgNoModule is modname()'s, for an address no module holds.
	MsgNoModule = "Cannot determine kernel module name"
	// MsgSkippedTooMany ends a run that skipped more probes than
	// MAXSKIPPED allows (stap's words, bpftap's -t).
	MsgSkippedTooMany = "Skipped too many probes, check MAXSKIPPED or try again with bpftap -t for more details."
)

// MsgEmptyAggregate is the error of @min, @max, @avg and histograms of a
// statistic without values (format's statistics return it too).
var MsgEmptyAggregate = format.ErrEmpty.Error()

// OverflowMessage is stap's error when array v is full.
func OverflowMessage(v *syntax.Var) string {
	if v.Decl != nil && v.Decl.Size > 0 {
		return "Array overflow, check size limit (" + strconv.FormatInt(v.Decl.Size, 10) + ")"
	}
	return "Array overflow, check MAXMAPENTRIES"
}

// Messages of failed memory reads: fmt formats taking the faulting address.
const (
	// RaiseError is raise()'s when the signal cannot be sent, with the
	// kernel's (negative) error number.
	RaiseError = "raise/send_sig error %d"
	// UserStringFault is user_string's (-EFAULT is the error stap shows).
	UserStringFault = "user string copy fault -14 at 0x%x [man error::fault]"
	// KernelReadFault is a context expression's ($p->a->b).
	KernelReadFault = "kernel read fault at 0x%x [man error::fault]"
)

// DelayTooLong is the error of a kernel probe's mdelay or udelay longer
// than the kernel lets a BPF program spin (bpfgen/delay.go).
const DelayTooLong = "delay longer than the kernel lets a BPF program spin (about 250 ms)"

// BufferReadFault is the message of kernel_buffer_quoted_error's failed
// read (user_buffer_quoted_error's, user).
func BufferReadFault(user bool) string {
	space := "kernel"
	if user {
		space = "user"
	}
	return "Unable to access " + space + " space data at 0x%x"
}

// KernelCopyFault is the message of kernel_WHAT's failed read ("long",
// "string", ...): a fmt format taking the faulting address.
func KernelCopyFault(what string) string {
	return "kernel " + what + " copy fault at 0x%x [man error::fault]"
}

// NumberRead is how a reader of a number in memory reads it: Size bytes,
// sign-extended to a long unless Unsigned, as stap's C casts extend them.
// Fault is the error a failed read raises (a fmt format taking the
// address), "" for a reader that returns 0 instead.
type NumberRead struct {
	Size     int
	Unsigned bool
	Fault    string
}

// UserWriteFault is the error of set_user_WHAT's failed write: a fmt
// format taking WHAT, then the address (stap's says "copy fault").
const UserWriteFault = "user %s copy fault at 0x%%x [man error::fault]"

// UserWrites are guru mode's writers of a number to the current process's
// memory, set_user_WHAT, by builtin name: the bytes written and WHAT.
var UserWrites = map[string]struct {
	Size int
	What string
}{
	"set_user_long": {8, "long"}, "set_user_int": {4, "int"}, "set_user_short": {2, "short"},
	"set_user_char": {1, "char"}, "set_user_pointer": {8, "pointer"},
}

// UserReadFault is the error of user_WHAT_error's failed read.
const UserReadFault = DerefFault

// DerefFault is stap's error of a failed read of its compiled code's
// (@kderef, @uderef), a fmt format taking the address.
const DerefFault = "read fault [man error::fault] at 0x%x"

// DerefSizes are the sizes @kderef and @uderef read.
var DerefSizes = []int64{1, 2, 4, 8}

// NumberReads are the readers of numbers in memory, by builtin name:
// kernel_WHAT, whose fault is stap's error (KernelCopyFault(WHAT)); and
// user_WHAT, which read the current process's memory and return 0 where
// it cannot be read, as stap's tapset wraps them (uconversions.stp), with
// user_WHAT_error beside each, which raises UserReadFault instead.
var NumberReads = numberReads()

func numberReads() map[string]NumberRead {
	reads := map[string]NumberRead{}
	for what, size := range map[string]int{"long": 8, "int": 4, "short": 2, "char": 1, "pointer": 8} {
		reads["kernel_"+what] = NumberRead{Size: size, Fault: KernelCopyFault(what)}
	}
	for what, r := range map[string]NumberRead{"long": {8, false, ""}, "ulong": {8, true, ""}, "int": {4, false, ""},
		"short": {2, false, ""}, "ushort": {2, true, ""}, "char": {1, false, ""},
		"int8": {1, false, ""}, "uint8": {1, true, ""}, "int16": {2, false, ""}, "uint16": {2, true, ""},
		"int32": {4, false, ""}, "uint32": {4, true, ""}, "int64": {8, false, ""}, "uint64": {8, true, ""}} {
		reads["user_"+what] = r
		r.Fault = UserReadFault
		reads["user_"+what+"_error"] = r
	}
	return reads
}

// Messages of the register readers (int_arg(), register(), returnval()),
// where a probe has no registers: stap's, from its tapset
// (registers.stp, errno.stp).
const (
	MsgNoArgs      = "cannot access function args in this context"
	MsgNoRegisters = "cannot access CPU registers in this context"
	// MsgRegisterFault is @kregister's and @uregister's, where the probe
	// has no such registers or the number names none.
	MsgRegisterFault = "register access fault [man error::fault]"
	// MsgBadArgnum is a fmt format taking the argument's number.
	MsgBadArgnum = "cannot access arg(%d)"
)

// NoReturnval is returnval()'s message in a probe (pp) without registers.
func NoReturnval(pp string) string { return "returnval() not defined in this context " + pp }

// UnknownRegister is register()'s message for a name it does not know.
func UnknownRegister(name string) string { return "Unknown register: " + name }

// ArgReaders are the readers of a function's arguments, each with how it
// treats the register: truncated to 32 bits (int_arg, uint_arg), and
// sign-extended from there (int_arg), as stap's tapset reads them on
// x86-64. Word readers read a C long or a pointer, 32 bits in a 32-bit
// program (sign-extended for long_arg); the others without Truncate read
// a 64-bit value, two words of a 32-bit program's stack.
var ArgReaders = map[string]struct{ Truncate, SignExtend, Word bool }{
	"int_arg": {true, true, false}, "s32_arg": {true, true, false},
	"uint_arg": {true, false, false}, "u32_arg": {true, false, false},
	"long_arg": {false, true, true}, "ulong_arg": {Word: true}, "pointer_arg": {Word: true},
	"s64_arg": {}, "u64_arg": {}, "longlong_arg": {}, "ulonglong_arg": {},
}
