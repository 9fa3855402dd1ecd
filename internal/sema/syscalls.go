package sema

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/bpftap/bpftap/internal/parallel"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Merging the entries of many system calls into one probe. A user's
// syscall.* derives one probe per tapset alias, each on the call's own
// trace event with its own prologue (the tapset's locals, the call's
// argstr) before a copy of the user's body, and one for the calls of the
// generic layer, which stands for each of them (genericEntries). Hundreds
// of programs take seconds to load, and as long again to detach (each
// classic tracepoint waits for an RCU grace period, under a lock). So
// when one user probe reaches the entries of more than mergeCalls calls,
// its probes become one, on raw_syscalls:sys_enter
// (probes.Context.SyscallEntries):
//
//	if ($id < 60) { if ($id == 0) { name = "read"; __syscall_layout = 3 } else ... }
//	else { ... if ($id == 257) { name = "openat"; __syscall_layout = 7 } else next }
//	if (__syscall_layout < 12) { ... if (__syscall_layout == 3) { REST OF read's PROLOGUE } ... }
//	USER BODY
//
// two balanced trees of comparisons (a few per event, whatever the number
// of calls): the first, on the call's number, runs the call's own part of
// its prologue (its name, the generic argstr's per-call number) and picks
// its layout (which the code generator makes a lookup in a table when
// each call's part only stores constants: bpfgen's calltable.go); the
// second runs the rest of the prologue, which calls with the same
// argument layout share (shareShapes), each reading its arguments from
// the entry's registers. The merge happens right after derivation, before
// symbols are resolved, so every later pass sees one ordinary probe, the
// first dispatch stood in for by its first case until the types are
// inferred (standin.go). Probes whose body reads context variables itself,
// has a guard, or whose calls have no known number keep their own events.

// mergeCalls is the most entries a user probe keeps on their own events.
const mergeCalls = 4

// syscallEntry is one derived probe of a call's entry, split.
type syscallEntry struct {
	probe    *Probe
	nr       int
	prologue *syntax.Block
	body     syntax.Stmt // the user's, after the prologue
	// own: the user's own kernel.trace("syscalls:sys_enter_NAME"), which
	// has no prologue (a tapset alias's may be empty: prune.go).
	own bool
}

func (e *elab) mergeSyscallEntries() {
	groups := map[*syntax.ProbeDecl][]*syscallEntry{}
	var order []*syntax.ProbeDecl
	for _, p := range e.prog.Probes {
		entries := genericEntries(p)
		if s := splitEntry(p); s != nil {
			entries = []*syscallEntry{s}
		}
		if len(entries) > 0 && groups[p.Decl] == nil {
			order = append(order, p.Decl)
		}
		groups[p.Decl] = append(groups[p.Decl], entries...)
	}
	leader := e.mergeSyscallTraces()
	for _, decl := range order {
		if g := groups[decl]; len(g) > mergeCalls {
			if merged := e.mergeGroup(g); leader == nil {
				leader = merged
			}
		}
	}
	if leader != nil {
		e.joinSyscallEntries(leader)
	}
}

// mergeGroup merges the entries of g (mergeEntries), or when they cannot
// be, those of the calls the generic layer serves together (a probe that
// stands for many calls: genericEntries), which always can: they are
// cases of a program, never probes of their own.
func (e *elab) mergeGroup(g []*syscallEntry) *Probe {
	if merged := e.mergeEntries(g); merged != nil {
		return merged
	}
	generic := slices.DeleteFunc(slices.Clone(g), func(s *syscallEntry) bool { return s.probe.entries == nil })
	if len(generic) == 0 {
		return nil
	}
	return e.mergeEntries(generic)
}

// genericEntries splits a probe that stands for the entries of many calls
// (probes.Point.Entries) into one entry a call, each prologue the call's
// name and kinds, then the part they share.
func genericEntries(p *Probe) []*syscallEntry {
	if p.entries == nil {
		return nil
	}
	prologue, body, _, ok := entryParts(p)
	if !ok {
		return nil
	}
	at := prologue.Pos
	var entries []*syscallEntry
	for _, c := range p.entries {
		own := []syntax.Stmt{setLocal("name", &syntax.StringLit{Typed: syntax.Typed{Pos: at}, Value: c.Name, Raw: c.Name}, at),
			setLocal("__syscall_kinds", &syntax.NumberLit{Typed: syntax.Typed{Pos: at}, Value: int64(c.Kinds), Text: fmt.Sprintf("%#x", c.Kinds)}, at)}
		entries = append(entries, &syscallEntry{probe: p, nr: c.Nr, prologue: &syntax.Block{Pos: at, Stmts: append(own, prologue.Stmts...)}, body: body})
	}
	return entries
}

// joinSyscallEntries moves the script's other entry probes of single
// calls (syscall.read beside a syscall.*) from their own events to the
// raw tracepoint the merged probe leader sits on, each behind a test of
// the call's number, and marks them to share leader's program
// (Probe.Joins): every system call already runs leader's program, so the
// others cost a comparison each instead of the classic event's own path
// (~600 ns per call), and the script detaches in milliseconds (each
// classic syscall event waits for RCU grace periods when it is detached,
// ~60 ms, one after another).
func (e *elab) joinSyscallEntries(leader *Probe) {
	for _, p := range e.prog.Probes {
		s := joinableEntry(p)
		if p == leader || s == nil || !toRegisters(s, p.Body) {
			continue
		}
		at := p.Point.Pos
		e.prog.Plans = append(e.prog.Plans, fmt.Sprintf("%s: joins the program of %s on %s, behind a test of the call's number",
			syntax.ProbePointString(p.User), syntax.ProbePointString(leader.User), leader.Attach.Target()))
		p.context, p.Attach, p.Joins, p.joinedCall = leader.context, leader.Attach, leader, s.nr
		var skip syntax.Expr = &syntax.Binary{Typed: syntax.Typed{Pos: at}, Op: "!=", X: nativeNrOf(at), Y: numberAt(s.nr, at)}
		if s.own {
			skip = orCompat(skip, at) // the user's own event, which sees no compat call
		}
		p.Body.Stmts = append([]syntax.Stmt{&syntax.IfStmt{Pos: at, Cond: skip, Then: &syntax.NextStmt{Pos: at}}}, p.Body.Stmts...)
	}
}

// twinsPerProgram is the most compat twins that share one program.
const twinsPerProgram = 16

// compatTwins gives each probe of one call's entry or return on the
// call's own event a twin on raw_syscalls:sys_enter or sys_exit for its
// compat calls, which the syscalls:* events never see (x86_64's int
// $0x80, 32-bit processes): a process could otherwise hide an execve from
// syscall.execve. The twin runs behind a test of the compat numbers, an
// entry's reading the arguments from the compat registers
// (probes.Context.CompatSyscallEntries). Twins on one tracepoint share
// programs (Probe.Joins), twinsPerProgram each (a program of every tapset
// alias's twin would outgrow what a BPF jump reaches). None where the kernel makes no compat
// calls, or for a probe that reads what the raw tracepoint does not give
// (a return's @entry, an entry's argument through a pointer).
func (e *elab) compatTwins() {
	leaders := map[string]*Probe{}
	joined := map[string]int{} // twins in each leader's program
	for _, p := range slices.Clone(e.prog.Probes) {
		twin, nr := e.compatTwin(p)
		if twin == nil {
			continue
		}
		target := twin.Attach.Target()
		if leader := leaders[target]; leader != nil && joined[target] < twinsPerProgram {
			twin.Joins = leader
			joined[target]++
		} else {
			leaders[target], joined[target] = twin, 1
		}
		e.prog.Plans = append(e.prog.Plans, fmt.Sprintf("%s: its compat calls (%v) on %s, behind a test of their numbers",
			syntax.ProbePointString(p.User), probes.CompatSyscallNumbers(nr), target))
		e.prog.Probes = append(e.prog.Probes, twin)
	}
}

// compatTwin is p's compat twin and the call's native number; nil when p
// has none.
func (e *elab) compatTwin(p *Probe) (*Probe, int) {
	a := p.Attach
	if a == nil || a.Kind != attach.Tracepoint || a.System != "syscalls" || p.Cond != nil || p.context == nil || p.Joins != nil {
		return nil, 0
	}
	nr, ok := probes.SyscallNumber(a.Event)
	ret := strings.HasPrefix(a.Event, "sys_exit_")
	if !ok || !syscallFamily(p) || ret && (hasEntry(p.Body) || readsContextBut(p.Body, "$ret", "$return")) {
		return nil, 0
	}
	wide := p.context.SyscallReturns()
	if !ret {
		wide = p.context.CompatSyscallEntries()
	}
	guard := probes.CompatGuard(nr, ret)
	if guard == nil || wide == nil || !wide.CompatSyscalls() {
		return nil, 0
	}
	twin := *p
	twin.Body = syntax.Clone(p.Body)
	if !ret {
		s := joinableEntry(&twin)
		if s == nil || !toRegisters(s, twin.Body) {
			return nil, 0
		}
	}
	twin.Body.Stmts = append([]syntax.Stmt{guard}, twin.Body.Stmts...)
	twin.context, twin.Attach = wide, wide.Attach
	return &twin, nr
}

// syscallFamily tells whether p is a syscall probe (the tapset's prologue
// before the user's body), not a kernel.trace of a syscalls:* event,
// which sees what the event sees, as in stap.
func syscallFamily(p *Probe) bool {
	if len(p.Body.Stmts) != 2 {
		return false
	}
	prologue, ok := p.Body.Stmts[0].(*syntax.Block)
	return ok && inTapset(prologue)
}

// readsContextBut tells whether n reads a context variable other than names.
func readsContextBut(n syntax.Node, names ...string) bool {
	return syntax.Any(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.TargetVar:
			return !slices.Contains(names, n.Name) || len(n.Components) > 0
		case *syntax.Cast:
			return true
		}
		return false
	})
}

// takeSelectors moves the test joinSyscallEntries put first in each
// joined probe's body to Probe.Skip, once the body is resolved and typed.
// A probe whose body no longer starts with it keeps its own program (on
// the raw tracepoint, the test in its body).
func (e *elab) takeSelectors() {
	for _, p := range e.prog.Probes {
		if p.Joins == nil {
			continue
		}
		guard, ok := nextIf(p.Body.Stmts[0])
		if !ok {
			p.Joins = nil
			continue
		}
		p.Skip, p.Body = guard.Cond, &syntax.Block{Pos: p.Body.Pos, Stmts: p.Body.Stmts[1:]}
	}
}

// joinableEntry is splitEntry for a probe that may join a merged one: its
// body may read the call's arguments.
func joinableEntry(p *Probe) *syscallEntry {
	a := p.Attach
	if a == nil || a.Kind != attach.Tracepoint || a.System != "syscalls" || p.Cond != nil || p.context == nil ||
		!strings.HasPrefix(a.Event, "sys_enter_") {
		return nil
	}
	prologue, body, own, ok := entryParts(p)
	if !ok {
		return nil
	}
	nr, ok := probes.SyscallNumber(a.Event)
	if !ok {
		return nil
	}
	return &syscallEntry{probe: p, nr: nr, prologue: prologue, body: body, own: own}
}

// entryParts splits the body of a call's entry probe: the syscall
// tapset's prologue and the user's body after it, or, for the user's own
// kernel.trace("syscalls:sys_enter_NAME") (own), no prologue (an empty
// one) and the body.
func entryParts(p *Probe) (prologue *syntax.Block, body syntax.Stmt, own, ok bool) {
	if len(p.Body.Stmts) == 2 {
		if prologue, ok := p.Body.Stmts[0].(*syntax.Block); ok && inTapset(prologue) {
			return prologue, p.Body.Stmts[1], false, true
		}
	}
	if p.Family == "kernel.trace" && p.Script == p.Name {
		return &syntax.Block{Pos: p.Body.Pos}, p.Body, true, true
	}
	return nil, nil, false, false
}

// splitEntry returns p as a call's entry, prologue and user body apart, or
// nil when p is not one that can be merged: its body reads the context,
// or it is the user's own trace event, which mergeSyscallTraces serves
// (syscalltrace.go).
func splitEntry(p *Probe) *syscallEntry {
	s := joinableEntry(p)
	if s == nil || readsContext(s.body) || s.own {
		return nil
	}
	return s
}

// inTapset tells whether a block is tapset code (a prologue), not the
// user's body.
func inTapset(b *syntax.Block) bool {
	src := b.Pos.Src
	return src != nil && strings.HasPrefix(src.Name, "tapset/")
}

func readsContext(s syntax.Node) bool {
	return syntax.Any(s, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.TargetVar, *syntax.Cast:
			return true
		}
		return false
	})
}

// mergeEntries replaces the probes of g by one, when every prologue's
// context variables can be read from the registers, and returns it (nil
// when they cannot).
func (e *elab) mergeEntries(g []*syscallEntry) *Probe {
	first := g[0].probe
	wide := first.context.SyscallEntries()
	if wide == nil {
		return nil
	}
	loadCallArgs(g)
	for _, s := range g {
		if !canUseRegisters(s, s.prologue) {
			return nil
		}
	}
	for _, s := range g {
		toRegisters(s, s.prologue)
	}
	sort.Slice(g, func(i, j int) bool { return g[i].nr < g[j].nr })
	at := first.Point.Pos
	calls, shapes := shareShapes(g, at)
	guards, body := splitGuards(g[0].body, shapes)
	stand := standIn(calls, at)
	stmts := []syntax.Stmt{nativeNumber(at), stand}
	stmts = append(stmts, guards...)
	stmts = append(stmts, dispatch(shapes, SyscallLayoutVar, at), body)
	merged := mergedProbe(first, wide, stmts)
	merged.prunedLocals = nil
	for _, s := range g {
		merged.prunedLocals = append(merged.prunedLocals, s.probe.prunedLocals...)
	}
	users := userPointsOf(g)
	e.merges = append(e.merges, mergedEntry{probe: merged, plan: len(e.prog.Plans), users: users, calls: len(g), layouts: len(shapes),
		cases: calls, standIn: stand})
	e.prog.Plans = append(e.prog.Plans, fmt.Sprintf("%s: the entries of %d system calls share one program on %s (%d argument layouts)",
		users, len(g), wide.Attach.Target(), len(shapes)))
	e.replaceProbes(g, merged)
	return merged
}

// mergedProbe is first moved to wide, the raw syscall tracepoint, as
// kernel.trace("raw_syscalls:…") written where first's point was, running
// stmts: the probe that serves first and the calls merged with it.
func mergedProbe(first *Probe, wide *probes.Context, stmts []syntax.Stmt) *Probe {
	at := first.Point.Pos
	merged := *first
	merged.context, merged.Attach, merged.entries = wide, wide.Attach, nil
	merged.Name = fmt.Sprintf("kernel.trace(%q)", wide.Attach.Target())
	merged.Point = &syntax.ProbePoint{Pos: at, Components: []*syntax.Component{{Pos: at, Name: "kernel"},
		{Pos: at, Name: "trace", Arg: &syntax.StringLit{Typed: syntax.Typed{Pos: at}, Value: wide.Attach.Target()}}}}
	merged.Body = &syntax.Block{Pos: first.Body.Pos, Stmts: stmts}
	return &merged
}

// SyscallNrVar is the local that holds the number of the native call the
// entry is: a compat call (int $0x80, a 32-bit process) is numbered by
// the compat table, and is served as the native call of its name.
const SyscallNrVar = "__syscall_nr"

// nativeNumber is `__syscall_nr = __syscall_native_nr($id)`.
func nativeNumber(at syntax.Pos) syntax.Stmt {
	return &syntax.ExprStmt{X: &syntax.Assign{Typed: syntax.Typed{Pos: at}, Op: "=",
		LHS: &syntax.Ident{Typed: syntax.Typed{Pos: at}, Name: SyscallNrVar}, RHS: nativeNrOf(at)}}
}

// nativeNrOf is `__syscall_native_nr($id)`.
func nativeNrOf(at syntax.Pos) syntax.Expr {
	return &syntax.Call{Typed: syntax.Typed{Pos: at}, Name: "__syscall_native_nr",
		Args: []syntax.Expr{&syntax.TargetVar{Typed: syntax.Typed{Pos: at}, Name: "$id"}}}
}

// splitGuards separates the leading `if (COND) next` statements of the
// user's body that read none of the locals the layouts' prologues set
// (`if (pid() != target()) next`, a test of name): the merged probe runs
// them right after the first dispatch, so a call the body skips does not
// compute its argstr first. The prologues only set locals, so nothing
// else changes.
func splitGuards(body syntax.Stmt, shapes []dispatchCase) (guards []syntax.Stmt, rest syntax.Stmt) {
	b, ok := body.(*syntax.Block)
	if !ok {
		return nil, body
	}
	set := map[string]bool{}
	for _, c := range shapes {
		syntax.Walk(c.body, func(n syntax.Node) bool {
			if a, ok := n.(*syntax.Assign); ok {
				if id, ok := a.LHS.(*syntax.Ident); ok {
					set[id.Name] = true
				}
			}
			return true
		})
	}
	n := 0
	for n < len(b.Stmts) && isGuard(b.Stmts[n], set) {
		n++
	}
	return b.Stmts[:n], &syntax.Block{Pos: b.Pos, Stmts: b.Stmts[n:]}
}

// isGuard tells whether s is `if (COND) next` with a COND that reads none
// of the locals in set.
func isGuard(s syntax.Stmt, set map[string]bool) bool {
	i, ok := nextIf(s)
	return ok && !syntax.Any(i.Cond, func(n syntax.Node) bool {
		id, ok := n.(*syntax.Ident)
		return ok && set[id.Name]
	})
}

// nextIf returns s as `if (COND) next` (the next alone or in a block).
func nextIf(s syntax.Stmt) (*syntax.IfStmt, bool) {
	i, ok := s.(*syntax.IfStmt)
	if !ok || i.Else != nil {
		return nil, false
	}
	then := i.Then
	if b, ok := then.(*syntax.Block); ok && len(b.Stmts) == 1 {
		then = b.Stmts[0]
	}
	_, next := then.(*syntax.NextStmt)
	return i, next
}

// userPointsOf names the points of g as the user wrote them.
func userPointsOf(g []*syscallEntry) string {
	var names []string
	seen := map[*syntax.ProbePoint]bool{}
	for _, s := range g {
		if u := s.probe.User; !seen[u] {
			seen[u] = true
			names = append(names, syntax.ProbePointString(u))
		}
	}
	return strings.Join(names, ", ")
}

// toRegisters renames the context variables of n (a part of s's probe)
// to the registers SyscallEntries reads them from, when each is a bare
// argument of the call; false, and nothing renamed, when one is not.
func toRegisters(s *syscallEntry, n syntax.Node) bool {
	if !canUseRegisters(s, n) {
		return false
	}
	args, _ := s.probe.context.CallArgs()
	syntax.Walk(n, func(n syntax.Node) bool {
		if v, ok := n.(*syntax.TargetVar); ok && !strings.HasPrefix(v.Name, "$__syscall_arg") {
			i := argIndex(args, v.Name)
			v.Name = probes.EntryArg(i, args[i].Loc.Size, args[i].Loc.Signed)
		}
		return true
	})
	return true
}

// canUseRegisters tells whether every context variable of n is a bare
// argument of s's call (or already a register, as the generic argstr's).
func canUseRegisters(s *syscallEntry, n syntax.Node) bool {
	args, err := s.probe.context.CallArgs()
	if err != nil {
		return false
	}
	return !syntax.Any(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.TargetVar:
			if strings.HasPrefix(n.Name, "$__syscall_arg") {
				return false
			}
			i := argIndex(args, n.Name)
			return i < 0 || len(n.Components) > 0 || n.AddrOf || n.Pretty > 0 || i >= 6
		case *syntax.Cast:
			return true
		}
		return false
	})
}

// loadCallArgs reads the arguments of g's calls, in parallel: each
// tapset alias on its call's event reads the event's format from tracefs,
// about 50 µs of the kernel's time each, 9 ms for syscall.*'s 170 aliases
// one after another.
func loadCallArgs(g []*syscallEntry) {
	seen := map[*probes.Context]bool{}
	var contexts []*probes.Context
	for _, s := range g {
		if c := s.probe.context; !seen[c] {
			seen[c] = true
			contexts = append(contexts, c)
		}
	}
	parallel.Each(len(contexts), func(i int) { contexts[i].CallArgs() })
}

func argIndex(args []attach.Arg, name string) int {
	for i, a := range args {
		if "$"+a.Name == name {
			return i
		}
	}
	return -1
}

// SyscallLayoutVar is the local that carries a call's layout from the
// first dispatch of a merged syscall.* entry to the second (`if
// (__syscall_layout < 12) ... if (__syscall_layout == 3) ...`): the code
// generator compiles the second dispatch's subtrees as subprograms
// (bpfgen's outline.go).
const SyscallLayoutVar = "__syscall_layout"

// callCase is the case of call nr in the first dispatch of a merged
// probe: own, the statements of that call alone, then the number of its
// layout (k) into SyscallLayoutVar.
func callCase(nr int, own []syntax.Stmt, k int, at syntax.Pos) dispatchCase {
	return dispatchCase{key: nr, body: &syntax.Block{Pos: at, Stmts: append(own, setLocal(SyscallLayoutVar, numberAt(k, at), at))}}
}

// A case of a dispatch: the statements to run when its key matches.
type dispatchCase struct {
	key  int
	body *syntax.Block
}

// shareShapes splits each prologue into the call's own name and the rest,
// whose text many calls share once their arguments are registers (the
// generic "%d, %p, %u" argstr of dozens of calls): the first dispatch, on
// the call's number, sets the name and the layout; the second, on the
// layout, runs the shared rest. A program of a few dozen layouts instead
// of hundreds of prologues stays within what a BPF jump reaches.
func shareShapes(g []*syscallEntry, at syntax.Pos) (calls, shapes []dispatchCase) {
	var layouts layoutTable
	for _, s := range g {
		own, rest := splitName(s.prologue)
		k := layouts.number(rest)
		calls = append(calls, callCase(s.nr, own, k, at))
	}
	return calls, layouts.shapes
}

// splitName separates a prologue's leading assignments of literals to
// locals (`name = "read"`, the generic argstr's `__syscall_kinds = 0x...`),
// the call's own part, from the rest.
func splitName(b *syntax.Block) (own []syntax.Stmt, rest *syntax.Block) {
	n := 0
	for n < len(b.Stmts) && assignsLiteral(b.Stmts[n]) {
		n++
	}
	return append([]syntax.Stmt(nil), b.Stmts[:n]...), &syntax.Block{Pos: b.Pos, Stmts: b.Stmts[n:]}
}

func assignsLiteral(s syntax.Stmt) bool {
	_, value, ok := localAssignment(s)
	switch value.(type) {
	case *syntax.StringLit, *syntax.NumberLit:
		return ok
	}
	return false
}

func numberAt(v int, at syntax.Pos) syntax.Expr {
	return &syntax.NumberLit{Typed: syntax.Typed{Pos: at}, Value: int64(v), Text: fmt.Sprint(v)}
}

// dispatch is a balanced tree of comparisons that runs the case whose key
// (sorted) is the value of on: the call's number ($id) when on is empty,
// else the local on. A key no case has leaves the probe.
func dispatch(cases []dispatchCase, on string, at syntax.Pos) syntax.Stmt {
	subject := func() syntax.Expr {
		if on == "" {
			return &syntax.TargetVar{Typed: syntax.Typed{Pos: at}, Name: "$id"}
		}
		return &syntax.Ident{Typed: syntax.Typed{Pos: at}, Name: on}
	}
	if len(cases) == 1 {
		return &syntax.IfStmt{Pos: at, Cond: &syntax.Binary{Typed: syntax.Typed{Pos: at}, Op: "==", X: subject(), Y: numberAt(cases[0].key, at)},
			Then: cases[0].body, Else: &syntax.NextStmt{Pos: at}}
	}
	mid := len(cases) / 2
	return &syntax.IfStmt{Pos: at, Cond: &syntax.Binary{Typed: syntax.Typed{Pos: at}, Op: "<", X: subject(), Y: numberAt(cases[mid].key, at)},
		Then: dispatch(cases[:mid], on, at), Else: dispatch(cases[mid:], on, at)}
}

// tightenDispatches drops the comparison of each leaf of the dispatches
// (`if (X == K) CASE else next`) that the comparisons above it leave no
// other value: the leaf of 1 under X >= 1 and X < 2 runs CASE. The
// verifier knows X there as well and never takes the `next`, and it
// removes what it never takes one region at a time, each removal
// adjusting every jump of the program: for the 360 calls of syscall.*,
// most of its load. It runs last, once the merged entries are split
// (syscallsplit.go), whose dispatches it keeps the shape of until then.
func (e *elab) tightenDispatches() {
	for _, p := range e.prog.Probes {
		for i, s := range p.Body.Stmts {
			p.Body.Stmts[i] = tighten(s, math.MinInt64, math.MaxInt64)
		}
	}
}

// tighten is s, a statement of a probe's body, with the leaves of the
// dispatch it is (if it is one) tightened, knowing that the dispatch's
// subject is in [lo, hi).
func tighten(s syntax.Stmt, lo, hi int64) syntax.Stmt {
	d, ok := AsDispatchNode(s)
	if !ok || !slices.Contains([]string{SyscallNrVar, SyscallLayoutVar, traceNrVar}, d.Subject) {
		return s
	}
	switch _, next := d.Else.(*syntax.NextStmt); {
	case d.Op == "<":
		d.Then, d.Else = tighten(d.Then, lo, min(hi, d.Key)), tighten(d.Else, max(lo, d.Key), hi)
	case next && lo == d.Key && hi-1 == d.Key:
		return d.Then
	}
	return s
}

// replaceProbes puts merged where the first probe of g was and drops the
// others.
func (e *elab) replaceProbes(g []*syscallEntry, merged *Probe) {
	gone := map[*Probe]bool{}
	for _, s := range g {
		gone[s.probe] = true
	}
	var kept []*Probe
	placed := false
	for _, p := range e.prog.Probes {
		switch {
		case !gone[p]:
			kept = append(kept, p)
		case !placed:
			kept, placed = append(kept, merged), true
		}
	}
	e.prog.Probes = kept
}
