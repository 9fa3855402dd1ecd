package probes

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Compat calls that no native call is (x86_64 has no statfs64: only its
// 32-bit processes make it) have no trace event and no native number, so
// neither a call's own event, nor its compat twin (sema's compatTwins),
// nor the merged programs of syscall.* see them. syscall.NAME and
// syscall.NAME.return of such a call (tapset.CompatOnlySyscalls) are
// served by a program of their own on raw_syscalls:sys_enter (sys_exit)
// behind a test of the call's compat number and of the compat bit, the
// arguments read from the compat registers, as a twin reads them; where
// the kernel makes no compat calls the point is absent, as a call the
// kernel lacks is. A wildcard (syscall.*) leaves them out: it costs what it
// did, one program for many calls.
//
// __compat_syscall.NAME is the same entry under a name of its own, for
// the tapset's aliases of those calls (syscall.statfs64, with stap's
// locals), which shadow syscall.NAME.

func compatSyscallFamily(k KernelInfo) *Family {
	return &Family{Name: "__compat_syscall", Paths: []string{"__compat_syscall.*"}, Kernel: true,
		Names: func() ([]string, error) { return slices.Sorted(maps.Keys(compatOnlyCalls())), nil },
		Expand: func(p *Point) ([]*Point, error) {
			q, err := compatOnlyPoint(k, p, p.Names[0], false, "")
			return []*Point{q}, err
		}}
}

// compatOnlyCalls are the compat calls of the host's architecture that no
// native call is, by name: made once (a millisecond: syscall.*'s aliases
// ask for each of their calls). Callers do not modify it.
var compatOnlyCalls = sync.OnceValue(func() map[string]tapset.CompatOnly {
	return tapset.CompatOnlySyscalls(syntax.HostArch())
})

// CompatOnlyPoint tells whether script names the entry or return of a
// compat call no native call is (syscall.statfs64, nd_syscall.mmap2.return).
func CompatOnlyPoint(script string) bool {
	name, ok := syscallPointName(script)
	_, compat := compatOnlyCalls()[name]
	return ok && compat
}

// withCompatOnly adds the compat calls no native call is to the names of
// a kernel's calls, sorted, when it makes compat calls (where it makes
// none they are as absent as any call it lacks; twins load its BTF anyway).
func withCompatOnly(names []string, err error, compat bool) ([]string, error) {
	if err != nil || !compat {
		return names, err
	}
	for name := range compatOnlyCalls() {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// splitCompatOnly takes out of names, matched by pattern, the compat
// calls no native call is: none is left for a wildcard, and a pattern
// naming one of them returns it as compat.
func splitCompatOnly(names []string, pattern string) (native []string, compat string) {
	calls := compatOnlyCalls()
	for _, name := range names {
		if _, ok := calls[name]; !ok {
			native = append(native, name)
		} else if name == pattern {
			compat = name
		}
	}
	return native, compat
}

// compatOnlySyscall is syscall.NAME[.return] of the compat call name,
// with the generic locals.
func compatOnlySyscall(k KernelInfo, p *Point, name string, ret bool) (*Point, error) {
	locals := returnLocals
	if !ret {
		locals = fmt.Sprintf("name = %q\n%s\n", name, argstrOf(compatArgs(compatOnlyCalls()[name].Args)))
	} else {
		locals = fmt.Sprintf("name = %q\n%s", name, locals)
	}
	return compatOnlyPoint(k, p, name, ret, locals)
}

// compatOnlyPoint is the entry of the compat call name on
// raw_syscalls:sys_enter (its return on sys_exit with ret), its prologue
// a test of the call's number and of the compat bit, then locals.
func compatOnlyPoint(k KernelInfo, p *Point, name string, ret bool, locals string) (*Point, error) {
	c := &Context{kernel: k, aliases: syscallReturnAliases}
	if !c.CompatSyscalls() {
		return nil, &Error{Msg: "no match", Absence: fmt.Sprintf("this kernel makes no 32-bit (compat) system calls, and %s is one", name)}
	}
	wide, event, script := c.SyscallReturns(), "sys_exit", "syscall."+name+".return"
	if !ret {
		wide, event, script = c.CompatSyscallEntries(), "sys_enter", "syscall."+name
	}
	if wide == nil {
		return nil, &Error{Msg: "no match", Absence: "this kernel has no raw_syscalls:" + event + " to serve the compat call " + name + " on"}
	}
	call := compatOnlyCalls()[name]
	q := *p
	q.Names, q.Script, q.Context = nil, script, wide
	q.Components = traceComponents(p.Components[0], wide.Attach.Target())
	text := fmt.Sprintf("if (%s != %d || !__syscall_compat()) next\n%s", syscallNrOf(ret), call.Nr, locals)
	prologue, err := parsePrologue(script, text)
	q.Prologue = prologue
	q.Plan = fmt.Sprintf("%s: the compat call %s (%d) alone, on %s", p.Name(), name, call.Nr, wide.Attach.Target())
	return &q, err
}

// compatArgs are the arguments compatOnlyArgs's letters describe, 32 bits each.
func compatArgs(kinds string) []attach.Arg {
	var args []attach.Arg
	for i, k := range kinds {
		args = append(args, attach.Arg{Name: fmt.Sprint("arg", i+1), Pointer: k == 'p', Loc: attach.Loc{Size: 4, Signed: k == 'd'}})
	}
	return args
}
