package probes

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
)

// SyscallNrInto is the statement that stores the number of the call in
// local, in a probe on raw_syscalls:sys_enter (SyscallEntries), or on
// sys_exit with ret (SyscallReturns): syscallNrOf.
func SyscallNrInto(local string, ret bool) syntax.Stmt {
	b, err := parsePrologue("syscall number", fmt.Sprintf("%s = %s\n", local, syscallNrOf(ret)))
	if err != nil {
		panic(err) // the text is bpftap's own
	}
	return b.Stmts[0]
}

// NativeSyscallEntries is SyscallEntries for a probe that leaves compat
// calls (the user's own syscalls:* events, which never see one): its
// arguments are read from the native registers alone, so the program
// needs no prologue that copies them from the compat ones.
func (c *Context) NativeSyscallEntries() *Context { return c.syscallEntries(nativeRegisters) }
