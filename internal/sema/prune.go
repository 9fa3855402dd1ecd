package sema

import (
	"maps"
	"slices"

	"github.com/bpftap/bpftap/internal/syntax"
)

// Pruning the tapset's alias prologues before a derived probe's body is
// copied. The elision (elide.go) drops an assignment to a local that
// nothing reads, but only after every derived probe has been copied,
// merged, resolved and typed: a script that reads only `name` from
// syscall.* derives 360 probes whose prologues each set a dozen locals
// (fd, flags, argstr, ...), resolves the 80 formatting functions their
// argstrs call, and then elides nearly all of it. pruneTapsetLocals
// leaves those assignments out of the body before the copy, so no later
// pass sees them.
//
// It drops only what the elision would drop, so the program that comes
// out is the same. A derived probe's body nests the blocks of the aliases
// it went through, each beside the body it wraps (wrapBody), and the
// family's prologue before them all (withPrologue). A candidate is an
// assignment `x = E` that is a statement of one of those blocks written
// in the library (the tapset, or a -I directory); it is dropped when x is
// a name nothing else in the body, in the point's condition or in a
// candidate kept mentions, when no global visible from the block has that
// name, and when E has no effect by the elision's measure
// (sideEffectFree) judged before symbols are resolved: E is made of
// literals, names of no global, context variables, arithmetic,
// comparisons, conditionals, the s* print calls and calls of builtins
// without effects or of functions that name no global, print nothing and
// call only such functions. What the elision drops for a reason this cannot see is left
// to it. No warning is lost: stap and bpftap warn about elided code of
// the user's script only. A listing keeps every local (-L lists them),
// and -u keeps all code.
//
// It returns the body and the names the dropped statements mentioned,
// which were locals of the probe: the warning about a local never
// assigned suggests them still (Probe.prunedLocals).
func (e *elab) pruneTapsetLocals(body *syntax.Block, cond syntax.Expr) (*syntax.Block, []string) {
	record := e.opts.pruning
	if e.opts.Listing || e.opts.Unoptimized || record != nil && record.off {
		return body, nil
	}
	candidates := map[syntax.Stmt]bool{}
	tapsetAssignments(body, candidates)
	if len(candidates) == 0 {
		return body, nil
	}
	needed, users := map[string]bool{}, map[string]bool{}
	mentionedOutside(body, candidates, needed, users)
	if cond != nil {
		mentionedIn(cond, needed)
	}
	for s := range candidates { // what does not depend on the others
		if !e.effectlessAssignment(s, users) {
			delete(candidates, s)
			mentionedIn(s, needed)
		}
	}
	for changed := true; changed; {
		changed = false
		for s := range candidates {
			if id, _, _ := localAssignment(s); needed[id.Name] {
				delete(candidates, s)
				mentionedIn(s, needed)
				changed = true
			}
		}
	}
	if len(candidates) == 0 {
		return body, nil
	}
	dropped := map[string]bool{}
	for s := range candidates {
		mentionedIn(s, dropped)
		if record != nil {
			record.dropped = append(record.dropped, syntax.StmtString(s))
		}
	}
	return without(body, candidates), slices.Collect(maps.Keys(dropped))
}

// pruneRecord is the tests' view of the pruning (Options.pruning).
type pruneRecord struct {
	off     bool
	dropped []string // the statements dropped, as written
}

// tapsetAssignments adds to into the assignments of locals that are
// statements of the library blocks b nests (itself, or a block among its
// statements, recursively).
func tapsetAssignments(b *syntax.Block, into map[syntax.Stmt]bool) {
	library := b.Pos.Src != nil && b.Pos.Src.Library
	for _, s := range b.Stmts {
		if inner, ok := s.(*syntax.Block); ok {
			tapsetAssignments(inner, into)
		} else if _, _, ok := localAssignment(s); ok && library {
			into[s] = true
		}
	}
}

// without is a copy of b, and of the blocks it nests, without the
// statements of drop; the other statements are shared.
func without(b *syntax.Block, drop map[syntax.Stmt]bool) *syntax.Block {
	kept := &syntax.Block{Pos: b.Pos, Stmts: make([]syntax.Stmt, 0, len(b.Stmts))}
	for _, s := range b.Stmts {
		if inner, ok := s.(*syntax.Block); ok {
			kept.Stmts = append(kept.Stmts, without(inner, drop))
		} else if !drop[s] {
			kept.Stmts = append(kept.Stmts, s)
		}
	}
	return kept
}

// effectlessAssignment tells whether the assignment s, a candidate, sets
// a local that is no global to a value without effects that reads no
// name the user's code has (users).
func (e *elab) effectlessAssignment(s syntax.Stmt, users map[string]bool) bool {
	id, value, _ := localAssignment(s)
	src := id.Pos.Src
	return e.findGlobal(id.Name, src) == nil && e.effectless(value, src) && !mentionsAny(value, users)
}

// mentionsAny tells whether n mentions one of names.
func mentionsAny(n syntax.Node, names map[string]bool) bool {
	return syntax.Any(n, func(c syntax.Node) bool {
		id, ok := c.(*syntax.Ident)
		return ok && names[id.Name]
	})
}

// mentionedOutside adds to names the names n mentions outside the
// statements of skip, and to users those of them the user's code (not the
// library's) mentions; users may be nil.
func mentionedOutside(n syntax.Node, skip map[syntax.Stmt]bool, names, users map[string]bool) {
	syntax.Walk(n, func(c syntax.Node) bool {
		switch c := c.(type) {
		case *syntax.Ident:
			names[c.Name] = true
			if users != nil && (c.Pos.Src == nil || !c.Pos.Src.Library) {
				users[c.Name] = true
			}
		case syntax.Stmt:
			return !skip[c]
		}
		return true
	})
}

// mentionedIn adds the names n mentions to names.
func mentionedIn(n syntax.Node, names map[string]bool) {
	mentionedOutside(n, nil, names, nil)
}

// effectless tells whether evaluating x, code of src, can have no effect
// but its value, judged from names alone (see pruneTapsetLocals): a
// global it reads would be resolved, and listed, only for its sake.
func (e *elab) effectless(x syntax.Node, src *syntax.Source) bool {
	free := true
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.NumberLit, *syntax.StringLit, *syntax.Unary, *syntax.Ternary, *syntax.TargetVar:
		case *syntax.Ident:
			free = e.findGlobal(n.Name, src) == nil
		case *syntax.Binary:
			free = n.Op != "=~" && n.Op != "!~"
		case *syntax.PrintCall:
			free = toString(n)
		case *syntax.Call:
			free = e.effectlessCall(n.Name, len(n.Args), src)
		default:
			free = false
		}
		return free
	})
	return free
}

// effectlessCall tells whether calling the function name with nargs
// arguments from code of src has no effect: a builtin without effects,
// or a script function that names no global, prints nothing and calls
// only such functions.
func (e *elab) effectlessCall(name string, nargs int, src *syntax.Source) bool {
	d, builtin := e.findFunc(name, nargs, src)
	if builtin != nil {
		return !builtin.SideEffects
	}
	if d == nil || d.Body == nil {
		return false
	}
	if free, ok := e.effectlessFuncs[d]; ok {
		return free
	}
	e.effectlessFuncs[d] = false // a recursive call is not assumed free
	free := true
	fsrc := d.Pos.Src
	syntax.Walk(d.Body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Ident:
			free = slices.ContainsFunc(d.Params, func(p *syntax.Param) bool { return p.Name == n.Name }) || e.findGlobal(n.Name, fsrc) == nil
		case *syntax.PrintCall:
			free = toString(n)
		case *syntax.DeleteStmt, *syntax.EmbeddedExpr, *syntax.NextStmt:
			free = false
		case *syntax.Call:
			free = e.effectlessCall(n.Name, len(n.Args), fsrc)
		}
		return free
	})
	e.effectlessFuncs[d] = free
	return free
}
