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

// SyscallSetGuard is the statement that leaves a probe unless local (the
// call's number) is one of nrs (sorted): a few range comparisons.
func SyscallSetGuard(nrs []int, local string) syntax.Stmt {
	b, err := parsePrologue("syscall set", fmt.Sprintf("if (!(%s)) next\n", syscallSet(nrs, local)))
	if err != nil {
		panic(err) // the text is bpftap's own
	}
	return b.Stmts[0]
}
