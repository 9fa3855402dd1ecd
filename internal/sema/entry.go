package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// @entry(X) in a return probe: X is evaluated when the call is entered
// and its value used when it returns. Right after derivation, each return
// probe with @entry gets a companion probe on the entries it pairs with
// (probes.Context.EntryOf, which the point's family answers: sys_enter_NAME
// for sys_exit_NAME, the same calls on raw_syscalls:sys_enter for
// syscall.*.return, a uprobe on the function of a uretprobe) that saves
// each X in a global array keyed by thread, and by the call's stack frame
// where the family gives one (Entry.Frame: a user function's nested and
// recursive calls each get their own values); the return probe takes the value out
// (reads and deletes it) before its own body runs, and @entry(X) becomes
// that value:
//
//	entry:   __entry_N_k[tid()] = X
//	return:  __entry_N_k_v = __entry_N_k[tid()]; delete __entry_N_k[tid()]
//	         ... __entry_N_k_v ...
//
// The returns of one attach.Set (a wildcard's functions on one
// kretprobe_multi link) share their arrays, keyed by thread and function
// (addr(), the function's address in both), and so do their entries (on a
// kprobe_multi link of their own): their bodies stay the same text, which
// settleSets needs to keep each set one program, and a call nested in
// another of the set's functions does not take its value.
//
// A return whose entry was not seen (the call began before the probes
// were attached) does not run the probe, as a return probe in stap fires
// only for the calls whose entry it saw. The body's @defined are decided
// before (pruneBeforePairing), so that only the @entry of the branches
// kept are saved, @defined(@entry(X)) at the entries. A probe on an event
// that fires as a call returns, with the call's arguments (the sock
// tracepoints serving tcp.recvmsg.return), reads @entry($sk) as the
// event's $sk (entryAtEvent). Other probes whose point has no entry keep
// their @entry, which type checking reports as stap does.

// entryParams makes each parameter a return probe reads where its
// registers no longer hold it (probes.Context.ParamsAtEntry: a kretprobe)
// an @entry, as stap reads every $var of a return probe at entry; those
// in an @entry or @defined already are left alone.
func (e *elab) entryParams() {
	for _, p := range e.prog.Probes {
		if p.context == nil {
			continue
		}
		inside := map[syntax.Expr]bool{}
		syntax.Any(p.Body, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Entry:
				markTargets(n.X, inside)
			case *syntax.Defined:
				markTargets(n.X, inside)
			}
			return false
		})
		atEntry := func(x syntax.Node) bool {
			v, ok := x.(*syntax.TargetVar)
			return ok && !inside[v] && v.Name != "$return" && v.Name != "$$return"
		}
		// asked only of a probe that reads such a parameter: a user
		// function's context reads its DWARF to answer
		if !syntax.Any(p.Body, atEntry) || !p.context.ParamsAtEntry() {
			continue
		}
		syntax.RewriteExprs(p.Body, func(x syntax.Expr) syntax.Expr {
			if !atEntry(x) {
				return nil
			}
			return &syntax.Entry{Typed: syntax.Typed{Pos: x.Position()}, X: x}
		})
	}
}

// markTargets marks the context variables of x.
func markTargets(x syntax.Expr, marked map[syntax.Expr]bool) {
	syntax.Any(x, func(n syntax.Node) bool {
		if v, ok := n.(*syntax.TargetVar); ok {
			marked[v] = true
		}
		return false
	})
}

func (e *elab) pairEntries() {
	firstOfSet := map[*attach.Set]int{} // a set's arrays are named by its first probe
	n := len(e.prog.Probes)
	for i := 0; i < n; i++ {
		p := e.prog.Probes[i]
		if p.context == nil || !hasEntry(p.Body) {
			continue
		}
		at := p.Point.Pos
		named, byFunction := i, false
		if set := p.Attach.Set; set != nil {
			if first, ok := firstOfSet[set]; ok {
				named = first
			} else {
				firstOfSet[set] = i
			}
			byFunction = true
		}
		pair := p.context.EntryOf()
		if pair == nil {
			if p.context.ArgsOfCall() {
				entryAtEvent(p.Body)
			}
			continue
		}
		if !syntax.Any(p.Body, entryReadsVars) {
			pair.Context.ReadsNoVars()
		}
		e.pruneBeforePairing(p, pair.Context)
		if !hasEntry(p.Body) { // its @entry were in branches a @defined ruled out
			continue
		}
		keys := entryKeys(pair, byFunction, at)
		entry := &Probe{Point: p.Point, User: p.User, Name: pair.Name,
			Family: p.Family, Args: map[string]syntax.Expr{}, Decl: p.Decl, Kernel: true,
			Attach: pair.Context.Attach, context: pair.Context, origin: p.origin, userText: p.userText,
			Body: &syntax.Block{Pos: at}}
		if pair.Guard != nil {
			entry.Body.Stmts = append(entry.Body.Stmts, pair.Guard)
		}
		var takes []syntax.Stmt
		k := 0
		early := prologueHasEntry(p.Body)
		syntax.RewriteExprs(p.Body, func(x syntax.Expr) syntax.Expr {
			en, ok := x.(*syntax.Entry)
			if !ok {
				return nil
			}
			saved := e.entryGlobal(fmt.Sprintf("__entry_%d_%d", named, k), at)
			value := fmt.Sprintf("%s_v", saved)
			if k == 0 { // a return whose entry was not seen does not run
				takes = append(takes, &syntax.IfStmt{Pos: at, Then: &syntax.NextStmt{Pos: at},
					Cond: &syntax.Unary{Typed: syntax.Typed{Pos: at}, Op: "!", X: &syntax.In{Typed: syntax.Typed{Pos: at},
						Keys: keys(true), Array: ident(saved, at)}}})
			}
			entry.Body.Stmts = append(entry.Body.Stmts, exprStmt(&syntax.Assign{Typed: syntax.Typed{Pos: at}, Op: "=",
				LHS: element(saved, keys(false), at), RHS: en.X}))
			takes = append(takes,
				exprStmt(&syntax.Assign{Typed: syntax.Typed{Pos: at}, Op: "=", LHS: ident(value, at), RHS: element(saved, keys(true), at)}),
				&syntax.DeleteStmt{Pos: at, Target: element(saved, keys(true), at)})
			k++
			return ident(value, at)
		})
		if early { // the alias's own body reads @entry values
			p.Body = &syntax.Block{Pos: p.Body.Pos, Stmts: append(takes, p.Body)}
		} else {
			p.Body = beforeUserBody(p.Body, takes)
		}
		e.prog.Probes = append(e.prog.Probes, entry)
	}
}

// entryKeys gives the keys of the arrays that carry the @entry values
// of a return probe paired with entry pair, new nodes for each use, at
// the entry (ret false) or the return: the thread, the function where
// the returns of a set share the arrays (byFunction), the call's frame
// where the family tells a thread's calls in progress apart.
func entryKeys(pair *probes.Entry, byFunction bool, at syntax.Pos) func(ret bool) []syntax.Expr {
	return func(ret bool) []syntax.Expr {
		k := []syntax.Expr{tidCall(at)}
		if byFunction {
			k = append(k, &syntax.Call{Typed: syntax.Typed{Pos: at}, Name: "__func_addr"})
		}
		if pair.Frame != nil {
			k = append(k, pair.Frame(ret, at))
		}
		return k
	}
}

// entryAtEvent makes each @entry(X) of a probe on an event that fires as a
// call returns, with the call's arguments (probes.Context.ArgsOfCall), X
// itself when X reads only those arguments: their values at the event
// are those at entry. Another @entry is left for type checking to report.
func entryAtEvent(b *syntax.Block) {
	syntax.RewriteExprs(b, func(x syntax.Expr) syntax.Expr {
		en, ok := x.(*syntax.Entry)
		if !ok || syntax.Any(en.X, readsState) {
			return nil
		}
		return en.X
	})
}

// readsState tells whether n reads something an event's arguments do not
// fix: a variable, an array, a function's value.
func readsState(n syntax.Node) bool {
	switch n.(type) {
	case *syntax.Ident, *syntax.Index, *syntax.Call:
		return true
	}
	return false
}

// pruneBeforePairing decides the @defined of a return probe's body before
// its @entry are paired, so that only the @entry of the branches kept are
// saved at entry: tcpipstat's @defined(@entry($sk)) ? @entry($sk) :
// @entry($sock->sk) saves $sk. @defined(@entry(X)) tells whether X
// resolves at the entries (entry).
func (e *elab) pruneBeforePairing(p *Probe, entry *probes.Context) {
	s := e.newScope(e.fileOf[p.Decl], nil)
	s.ctx, s.probe, s.entryCtx = p.context, p, entry
	s.contextVars = contextVarDefs(p.Body)
	s.pruneDefined(p.Body)
}

func hasEntry(b *syntax.Block) bool {
	return syntax.Any(b, func(n syntax.Node) bool {
		_, isEntry := n.(*syntax.Entry)
		return isEntry
	})
}

// entryReadsVars tells whether n is an @entry whose value reads a $var
// or an @var, which a user function's entry reads from its DWARF.
func entryReadsVars(n syntax.Node) bool {
	en, ok := n.(*syntax.Entry)
	return ok && syntax.Any(en.X, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.TargetVar, *syntax.AtVar:
			return true
		}
		return false
	})
}

// prologueHasEntry tells whether a derived body's prologue (a tapset
// alias's block, as beforeUserBody finds it) holds @entry: vfs.read.return's
// file = @entry($file), socket.create.return's family = @entry($family).
// Its values must then be taken before it runs.
func prologueHasEntry(b *syntax.Block) bool {
	if len(b.Stmts) == 2 {
		if pro, ok := b.Stmts[0].(*syntax.Block); ok && inTapset(pro) {
			return hasEntry(pro)
		}
	}
	return false
}

// entryGlobal declares the global array that carries one @entry value.
func (e *elab) entryGlobal(name string, at syntax.Pos) string {
	e.globals[name] = []*syntax.GlobalDecl{{Pos: at, Name: name}}
	return name
}

// beforeUserBody puts stmts after a derived body's prologue (a tapset
// block first), so that they run only for the calls the prologue keeps.
func beforeUserBody(b *syntax.Block, stmts []syntax.Stmt) *syntax.Block {
	if len(b.Stmts) == 2 {
		if pro, ok := b.Stmts[0].(*syntax.Block); ok && inTapset(pro) {
			return &syntax.Block{Pos: b.Pos, Stmts: []syntax.Stmt{pro, &syntax.Block{Pos: b.Pos, Stmts: stmts}, b.Stmts[1]}}
		}
	}
	return &syntax.Block{Pos: b.Pos, Stmts: append(stmts, b)}
}

func element(array string, keys []syntax.Expr, at syntax.Pos) syntax.Expr {
	return &syntax.Index{Typed: syntax.Typed{Pos: at}, Array: ident(array, at), Keys: keys}
}

func tidCall(at syntax.Pos) syntax.Expr {
	return &syntax.Call{Typed: syntax.Typed{Pos: at}, Name: "tid"}
}

func ident(name string, at syntax.Pos) *syntax.Ident {
	return &syntax.Ident{Typed: syntax.Typed{Pos: at}, Name: name}
}

func exprStmt(x syntax.Expr) *syntax.ExprStmt { return &syntax.ExprStmt{X: x} }
