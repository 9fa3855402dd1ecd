package tapset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// System call names by number, the facts behind syscall_name() and the
// syscall_any probes. The table of each architecture is transcribed from the
// kernel's uapi headers (syscalls_x86_64.go, syscalls_aarch64.go);
// architectures without a table name no system call.

// SyscallName returns the name of system call nr on arch (stap's names:
// "x86_64", "arm64", ...), or "" when nr is unknown, as stap's syscall_name
// returns for a number missing from its table.
func SyscallName(arch string, nr int64) string {
	if table := syscallTables.of(arch); nr >= 0 && nr < int64(len(table)) {
		return table[nr]
	}
	return ""
}

// SyscallNames returns arch's table as a slice indexed by number, "" in the
// gaps, for a BPF array map; nil when bpftap has no table for arch.
func SyscallNames(arch string) []string { return slices.Clone(syscallTables.of(arch)) }

// syscallTables are the native tables by architecture, each made when
// first asked for, not when the program starts: most runs name no system
// call by number, and those that do, the host's calls alone. Each is a
// slice indexed by number, as transcribed: no map to build (four maps of
// 450 names were a millisecond and a half).
var syscallTables = byArch[[]string]{
	"x86_64": func() []string { return withCommon(syscallsX8664()) },
	"arm64":  func() []string { return withCommon(syscallsARM64()) },
}.once()

// byArch makes a table of each architecture bpftap has tables for.
type byArch[T any] map[string]func() T

// once has each architecture's table made once, when first asked for.
func (b byArch[T]) once() byArch[T] {
	for arch, build := range b {
		b[arch] = sync.OnceValue(build)
	}
	return b
}

// of is arch's table; the zero T where bpftap has none for arch.
func (b byArch[T]) of(arch string) T {
	if build := b[arch]; build != nil {
		return build()
	}
	var none T
	return none
}

// withCommon adds to table the calls numbered alike on every architecture
// (syscallsSince424), but those of the numbers in except, and returns it,
// its last element a name.
func withCommon(table []string, except ...int) []string {
	common := syscallsSince424()
	if len(table) < len(common) {
		table = append(table, make([]string, len(common)-len(table))...)
	}
	for nr, name := range common {
		if name != "" && !slices.Contains(except, nr) {
			table[nr] = name
		}
	}
	for len(table) > 0 && table[len(table)-1] == "" {
		table = table[:len(table)-1]
	}
	return table
}

// Compat system calls. A 64-bit kernel that runs 32-bit code numbers the
// calls of 32-bit processes, and those made through the 32-bit entry
// (int $0x80 on x86_64), by the 32-bit architecture's table: x86_64's
// execve is 59, i386's 11 (x86_64's munmap); arm64's is 221, 32-bit
// ARM's 11 (arm64's listxattr). The syscall probes name such
// a call by that table and give it the probes of the native call of the
// same name.

// compatTables are the compat tables by architecture, each made when
// first asked for.
var compatTables = byArch[[]string]{
	"x86_64": func() []string { return withCommon(syscallsI386(), 453) }, // map_shadow_stack: 64-bit only
	"arm64":  func() []string { return withCommon(syscallsARM(), 453) },
}.once()

// compatAs are the compat calls that are the native call of another name
// (fcntl64 is fcntl with a 32-bit process's struct flock64), and those
// that only share a native call's name: i386's mmap (90) and select (82)
// take one pointer to their arguments (old_mmap, old_select), so the
// native call's decoding would misread them.
var compatAs = map[string]string{"fcntl64": "fcntl", "mmap": "", "select": ""}

// CompatSyscallNames returns arch's table of compat calls as SyscallNames
// returns its native one; nil where bpftap knows of none.
func CompatSyscallNames(arch string) []string { return slices.Clone(compatTables.of(arch)) }

// NativeSyscallNumbers returns, indexed by compat number, the number of
// the native call each compat call is (the same name, or compatAs's), -1
// where there is none (i386's waitpid, socketcall); nil where arch has no
// compat calls. The table is made once and shared: callers do not modify
// it (syscall.*'s merges ask for it at each of their calls).
func NativeSyscallNumbers(arch string) []int32 { return nativeNumbers.of(arch) }

// nativeNumbers are NativeSyscallNumbers's tables by architecture.
var nativeNumbers = byArch[[]int32]{
	"x86_64": func() []int32 { return nativeNumbersOf("x86_64") },
	"arm64":  func() []int32 { return nativeNumbersOf("arm64") },
}.once()

// nativeNumbersOf makes arch's table of NativeSyscallNumbers.
func nativeNumbersOf(arch string) []int32 {
	compat := CompatSyscallNames(arch)
	if compat == nil {
		return nil
	}
	native := map[string]int32{}
	for nr, name := range syscallTables.of(arch) {
		if name != "" {
			native[name] = int32(nr)
		}
	}
	out := make([]int32, len(compat))
	for nr, name := range compat {
		if as, ok := compatAs[name]; ok {
			name = as
		}
		if n, ok := native[name]; ok && name != "" {
			out[nr] = n
		} else {
			out[nr] = -1
		}
	}
	return out
}

// compatOnlyArgs are the compat calls that no native call is (x86_64 has
// no statfs64, arm64 no mmap2) and that bpftap serves under their own
// names (syscall.statfs64), each with its arguments as __syscall_argstr
// prints them: p a pointer (%p), d signed (%d), u unsigned (%u), 32 bits
// each. Left out: calls that pass a 64-bit value in two registers
// (truncate64, _llseek), and those that are a native call under another
// name (getuid32, clock_gettime64), which would need compatAs.
var compatOnlyArgs = map[string]string{
	"statfs64": "pup", "fstatfs64": "uup", "stat64": "pp", "lstat64": "pp", "fstat64": "up",
	"fstatat64": "dppd", "mmap2": "uuuuuu", "sigreturn": "", "nice": "d", "waitpid": "dpd",
	"sigaction": "dpp", "sigprocmask": "dpp", "sigpending": "p", "sigsuspend": "ddu", "stime": "p",
}

// A CompatOnly is a compat call that no native call is: its compat
// number and its arguments (compatOnlyArgs).
type CompatOnly struct {
	Nr   int
	Args string
}

// CompatOnlySyscalls returns by name arch's compat calls of
// compatOnlyArgs that no native call is; nil where arch has none.
func CompatOnlySyscalls(arch string) map[string]CompatOnly {
	native := NativeSyscallNumbers(arch)
	calls := map[string]CompatOnly{}
	for nr, name := range CompatSyscallNames(arch) {
		if args, ok := compatOnlyArgs[name]; ok && native[nr] < 0 {
			calls[name] = CompatOnly{Nr: nr, Args: args}
		}
	}
	return calls
}

// SyscallSetBits bounds the numbers of a set of __syscall_in (a bitmap
// of as many bits): every call of x86-64's and arm64's tables, and of
// their compat tables, is below it.
const SyscallSetBits = 1024

// ParseSyscallSet reads a set of __syscall_in: numbers and ranges
// ("0-133,135,140-155"), ascending, each below SyscallSetBits.
func ParseSyscallSet(set string) ([]int, error) {
	var nrs []int
	for _, term := range strings.Split(set, ",") {
		from, to, isRange := strings.Cut(term, "-")
		lo, err := strconv.Atoi(from)
		hi := lo
		if err == nil && isRange {
			hi, err = strconv.Atoi(to)
		}
		if err != nil {
			return nil, fmt.Errorf("%q is not an ascending set of numbers below %d", set, SyscallSetBits)
		}
		if lo < 0 || hi < lo || hi >= SyscallSetBits || len(nrs) > 0 && lo <= nrs[len(nrs)-1] {
			return nil, fmt.Errorf("%q is not an ascending set of numbers below %d", set, SyscallSetBits)
		}
		for nr := lo; nr <= hi; nr++ {
			nrs = append(nrs, nr)
		}
	}
	return nrs, nil
}
