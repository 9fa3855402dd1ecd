package probes

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
)

// SyscallNrInto is the statement that stores the number of the call in
// local, in a probe on raw_syscalls:sys_enter (SyscallEntries), or on
// sys_exit with ret (SyscallReturns, whose tracepoint has no number: the
// register the architecture keeps it in).
func SyscallNrInto(local string, ret bool) syntax.Stmt {
	nr := "$id"
	if ret {
		nr = "$regs->" + syscallNrRegister()
	}
	b, err := parsePrologue("syscall number", fmt.Sprintf("%s = %s\n", local, nr))
	if err != nil {
		panic(err) // the text is bpftap's own
	}
	return b.Stmts[0]
}

// NativeSyscallEntries is SyscallEntries for a probe that leaves compat
// calls (the user's own syscalls:* events, which never see one): its
// arguments are read from the native registers alone, so the program
// needs no prologue that copies them from the compat ones.
func (c *Context) NativeSyscallEntries() *Context {
	wide := c.SyscallEntries()
	if wide == nil {
		return nil
	}
	for i := range wide.Attach.Args {
		wide.Attach.Args[i].Loc.Compat, wide.Attach.Args[i].Loc.CompatOffset = false, 0
	}
	return wide
}
