package probes

import (
	"errors"
	"strings"

	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// kernelGlobal resolves a global of the kernel or of one of its modules
// with its chain, from their DWARF where the kernel's debug package is
// installed: @var("NAME@FILE", "MODULE") in any kernel probe (MODULE
// "kernel", or by default the probe's own), or $NAME where the probed
// function has no such parameter (own). The variable is one a
// compilation unit defines or declares at file scope (the kernel's
// jiffies is only declared: the symbol table places it). As stap, $NAME
// looks only in the probed function's unit, @var("NAME") there first and
// then in every unit, @var("NAME@FILE") in the units FILE matches. It is
// read where the running kernel holds it (File.Loaded: the link-time
// address moved by KASLR, or a module's section's place), with
// bpf_probe_read_kernel.
func (c *Context) kernelGlobal(ref, module string, comps []*syntax.TargetComponent, addrOf bool, pos syntax.Pos, own bool) (*Access, *ContextError) {
	switch module {
	case "":
		module = c.Attach.Module
	case "kernel":
		module = ""
	}
	dbg, err := c.kernel.Debuginfo(module)
	if err != nil {
		return nil, noGlobal("unable to find global '%s': %v", ref, err)
	}
	name, file, _ := strings.Cut(ref, "@")
	g, err := (*debuginfo.Global)(nil), debuginfo.ErrNoVariable
	c.settleArgs() // the probed function's address, where its DWARF gives it
	if pc := c.probedAddr(module, dbg); pc != 0 && file == "" {
		g, err = dbg.GlobalAt(name, pc)
	}
	if errors.Is(err, debuginfo.ErrNoVariable) && !own {
		g, err = dbg.Global(name, file)
	}
	switch {
	case errors.Is(err, debuginfo.ErrNoVariable):
		return nil, noGlobal("unable to find global '%s' in %s's DWARF (%s)", ref, dbg.Path, dbg.DebugPath)
	case err != nil:
		return nil, noGlobal("unable to find global '%s': %v", ref, err)
	case g.PerCPU:
		return nil, ctxErr(-1, "unable to read global '%s': it is a per-CPU variable, whose address is each CPU's own (bpftap does not read them)", ref)
	}
	if dbg.Loaded == nil {
		return nil, ctxErr(-1, "unable to read global '%s': %s is not the running kernel's DWARF", ref, dbg.DebugPath)
	}
	addr, err := dbg.Loaded(g.Addr)
	if err != nil {
		return nil, ctxErr(-1, "unable to read global '%s': %v", ref, err)
	}
	types, ids, err := dwarfBTF(dbg, false, g.Type)
	if err != nil {
		return nil, ctxErr(-1, "unable to read global '%s': %v", ref, err)
	}
	at := attach.Loc{Size: 8, Address: true, User: &attach.UserAddr{Disp: int64(addr), Kernel: true}}
	return c.globalAccess("@var:"+ref, at, types, ids[0], comps, addrOf, pos)
}

// probedAddr is the link-time address, in dbg, the DWARF of the kernel
// or of its module module, of the function the probe is on, 0 when the
// probe is not in that object or its function's name is not one
// function's (a static function of several files).
func (c *Context) probedAddr(module string, dbg *debuginfo.File) uint64 {
	switch {
	case module != c.Attach.Module:
		return 0
	case c.user != nil:
		return c.user.fn.Addr
	case c.Attach.Func == nil:
		return 0
	}
	if addrs := dbg.FunctionSymbols(c.Attach.Func.Name); len(addrs) == 1 {
		return addrs[0]
	}
	return 0
}

// inLibrary tells whether at is in the tapset library, whose $names are
// parameters only: a miss there (@defined($x) of another kernel's
// parameter) reads no DWARF.
func inLibrary(at syntax.Pos) bool { return at.Src != nil && at.Src.Library }

// ownGlobal resolves $NAME in a function probe whose function has no
// parameter (or local) NAME: a global of the function's file, as stap
// reads it, from the program's DWARF, or the kernel's where its debug
// package is installed. Else the message is that of an unknown
// parameter, with why no global was found.
func (c *Context) ownGlobal(x *syntax.TargetVar) (*Access, *ContextError) {
	name := strings.TrimPrefix(x.Name, "$")
	var a *Access
	var cerr *ContextError
	if c.Attach.User {
		a, cerr = c.userGlobal(name, x.Components, x.AddrOf, x.Pos, true)
	} else {
		a, cerr = c.kernelGlobal(name, "", x.Components, x.AddrOf, x.Pos, true)
	}
	if cerr == nil || !cerr.noGlobal {
		return a, cerr
	}
	why := "; nor is it a global of its file"
	if !c.Attach.User && !c.hasKernelDebuginfo() {
		why = "; a global of its file is read only where the kernel's debug package is installed"
	}
	return nil, c.noParam(x, why)
}

// noParam is the error of a function's parameter not found: why the
// function has none where the BTF that would describe them is missing (a
// module's before Linux 5.11), else the names it has, and why (a global
// of its file) where not "".
func (c *Context) noParam(x *syntax.TargetVar, why string) *ContextError {
	if _, err := c.btf(); err != nil && c.debug.types == nil {
		return ctxErr(-1, "unable to find parameter '%s' of %s: %v", x.Name, c.Attach.Func.Name, err)
	}
	return ctxErr(-1, "unable to find parameter '%s' of %s (alternatives: %s%s)", x.Name, c.Attach.Func.Name, strings.Join(c.names(), ", "), why)
}

func (c *Context) hasKernelDebuginfo() bool {
	_, err := c.kernel.Debuginfo(c.Attach.Module)
	return err == nil
}

// noGlobal is the error of a global not found.
func noGlobal(format string, args ...any) *ContextError {
	e := ctxErr(-1, format, args...)
	e.noGlobal = true
	return e
}
