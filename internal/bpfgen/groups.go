package bpfgen

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/cilium/ebpf/asm"

	"github.com/bpftap/bpftap/internal/parallel"
	"github.com/bpftap/bpftap/internal/regexdfa"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// The programs of a script are compiled at once, each group on a shard:
// a module of its own that shares what compiling only reads (the
// configuration, the program, the kernel's facts, the globals kernel code
// uses whole) and collects what a program adds to its module (print
// records, error sites, sets of system calls, call tables, regular
// expressions' tables, the globals' layouts, the maps used). The shards
// are then merged into the module in group order, as CompileGroup one
// group after the other would have filled it; the numbers a shard gave
// out from zero (records, error sites, sets, tables' offsets, call
// tables' names) are renumbered in its program's instructions, which
// carry a relocKey mark where they hold one. syscall.*'s two programs
// took 10 and 5.5 ms one after the other; strace.stp's three 26, 38 and
// 5 ms.

// relocKey marks, in an instruction's metadata, a constant numbered in
// its shard: its relocKind.
type relocKey struct{}

type relocKind int

const (
	relocOutput relocKind = iota + 1 // an index of Outputs (an immediate)
	relocError                       // an index of Errors (an immediate)
	relocSet                         // an index of the sets of SyscallSetMap (an immediate)
	relocRegex                       // an offset in RegexMap (LoadMapValue's)
)

// numbered marks in as holding a constant of kind.
func numbered(in asm.Instruction, kind relocKind) asm.Instruction {
	in.Metadata.Set(relocKey{}, kind)
	return in
}

// regexEntry is a pattern whose tables a module holds, in the order they
// were added.
type regexEntry struct {
	pattern string
	dfa     *regexdfa.DFA
}

// CompileGroups compiles each group of probes into its program, as
// CompileGroup does, the groups at once: the programs, the module and the
// error (the first in group order) are those of compiling them one after
// the other. compiled, if set, is called with each program as soon as it
// is compiled (from the goroutine that compiled it, before its constants
// are renumbered).
func (m *Module) CompileGroups(groups [][]*sema.Probe, compiled func(*Program)) ([]*Program, error) {
	compile := func(m *Module, ps []*sema.Probe) (*Program, error) {
		prog, err := m.CompileGroup(ps)
		if err == nil && compiled != nil {
			compiled(prog)
		}
		return prog, err
	}
	switch len(groups) {
	case 0:
		return nil, nil
	case 1:
		prog, err := compile(m, groups[0])
		if err != nil {
			return nil, err
		}
		return []*Program{prog}, nil
	}
	m.shareShapes()
	shards := make([]*Module, len(groups))
	for i, g := range groups {
		shards[i] = m.shard()
		m.programs += len(g)
	}
	progs, err := parallel.Map(len(groups), func(i int) (*Program, error) { return compile(shards[i], groups[i]) })
	if err != nil {
		return nil, err
	}
	for i, s := range shards {
		m.merge(s, progs[i])
	}
	return progs, nil
}

// shard returns a module for the next group, its timing entries from
// m's next.
func (m *Module) shard() *Module {
	return &Module{cfg: m.cfg, maxStr: m.maxStr, prog: m.prog, globals: map[*syntax.Var]*Global{}, programs: m.programs,
		uses: m.uses, facts: m.facts}
}

// shareShapes has the shapes of the symbol, module and code maps asked of
// the driver once for m and its shards (each read of /proc/kallsyms could
// differ), or taken from m where it asked already.
func (m *Module) shareShapes() {
	m.cfg.KernelSymbols = sharedShape(m.symbols, m.symtab, m.cfg.KernelSymbols)
	m.cfg.KernelModules = sharedShape(m.modules, m.modtab, m.cfg.KernelModules)
	m.cfg.KernelCode = sharedShape(m.code, m.codetab, m.cfg.KernelCode)
}

func sharedShape(asked bool, shape RangeTable, ask func() RangeTable) func() RangeTable {
	switch {
	case asked:
		return func() RangeTable { return shape }
	case ask == nil:
		return nil
	}
	return sync.OnceValue(ask)
}

// merge adds to m what shard s collected compiling prog, renumbering
// prog's constants from s's numbers to m's.
func (m *Module) merge(s *Module, prog *Program) {
	outputs, errs := len(m.Outputs), len(m.Errors)
	m.Outputs = append(m.Outputs, s.Outputs...)
	m.Errors = append(m.Errors, s.Errors...)
	sets := make([]int, len(s.syscallSets))
	for i, set := range s.syscallSets {
		sets[i] = m.syscallSet(set)
	}
	regexBases := map[int]int{}
	for _, r := range s.regexOrder {
		regexBases[s.regexBase[r.pattern]] = m.regexTables(r.pattern, r.dfa)
	}
	tables := map[string]string{} // s's names of call tables to m's
	for _, t := range s.callTables {
		ref := m.callTableRef()
		tables[t.Ref], t.Ref = ref, ref
		m.callTables = append(m.callTables, t)
	}
	for _, gl := range s.order {
		if _, ok := m.globals[gl.Var]; !ok {
			m.globals[gl.Var] = gl
			m.order = append(m.order, gl)
		}
	}
	m.mergeUses(s)
	for i, in := range prog.Instructions {
		if ref, ok := tables[in.Reference()]; ok {
			in = in.WithReference(ref)
		}
		switch kind, _ := in.Metadata.Get(relocKey{}).(relocKind); kind {
		case relocOutput:
			in.Constant += int64(outputs)
		case relocError:
			in.Constant += int64(errs)
		case relocSet:
			in.Constant = int64(sets[in.Constant])
		case relocRegex:
			in.Constant = int64(uint64(regexBases[int(uint64(in.Constant)>>32)])<<32 | uint64(uint32(in.Constant)))
		}
		prog.Instructions[i] = in
	}
}

// mergeUses adds to m's the maps and helpers' data s's program uses.
func (m *Module) mergeUses(s *Module) {
	m.zeroSize = max(m.zeroSize, s.zeroSize)
	for _, f := range []struct{ to, from *bool }{
		{&m.syscalls, &s.syscalls}, {&m.syscallNative, &s.syscallNative}, {&m.stacks, &s.stacks},
		{&m.userStacks, &s.userStacks}, {&m.taskStacks, &s.taskStacks}, {&m.symTokens, &s.symTokens},
		{&m.perfCounters, &s.perfCounters}, {&m.guards, &s.guards}, {&m.skips, &s.skips},
		{&m.unread, &s.unread}, {&m.together, &s.together}, {&m.gens, &s.gens},
	} {
		*f.to = *f.to || *f.from
	}
	if s.symbols {
		m.symbols, m.symtab = true, s.symtab
	}
	if s.modules {
		m.modules, m.modtab = true, s.modtab
	}
	if s.code {
		m.code, m.codetab = true, s.codetab
	}
	for _, ref := range slices.Sorted(maps.Keys(s.syscallTextMaps)) {
		m.useSyscallTexts(ref)
	}
}

// callTableRef names the next call table of m.
func (m *Module) callTableRef() string { return fmt.Sprintf("%s_%d", callTableMap, len(m.callTables)) }
