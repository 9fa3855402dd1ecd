package sema

import (
	"slices"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// finish drops the globals nothing uses (stap elides them silently), adds the
// end probes that display the script's globals written and whose value
// nothing uses (display.go; stap prints them at exit, unless
// --no-global-var-display; a tapset's own, such as argv, never), numbers the
// globals and records the -G overrides.
func (e *elab) finish() {
	var display []*syntax.Var
	var used map[*syntax.Var]bool
	if len(e.prog.Globals) > 0 { // a walk of every body, for nothing without globals (syscall.*: 20,000 nodes)
		used = usedGlobals(e.bodies())
	}
	kept := e.prog.Globals[:0]
	for _, g := range e.prog.Globals {
		if !g.Read && !g.Written && !e.opts.Unoptimized {
			continue
		}
		if g.Written && !(g.Read && used[g]) && !e.opts.NoGlobalDisplay && !e.inTapset(g) {
			display = append(display, g)
		}
		g.Index = len(kept)
		if g.IsArray && g.MaxEntries == 0 {
			g.MaxEntries = tapset.DefaultLimits().MaxMapEntries
		}
		kept = append(kept, g)
	}
	e.prog.Globals = kept
	for _, g := range display {
		e.prog.Probes = append(e.prog.Probes, displayProbe(g))
	}
	e.overrides()
}

// anyGlobal tells whether some global of the program matches. The checks
// and promotions of globals (foreach.go, stats.go, kernelctx.go,
// bythread.go) ask it first, to walk no body of a program whose globals
// cannot concern them: arrays and statistics are globals only (pass 2
// refuses a local one), and the merged entry of syscall.* is some 20,000
// nodes to walk.
func (e *elab) anyGlobal(match func(*syntax.Var) bool) bool {
	return slices.ContainsFunc(e.prog.Globals, match)
}

// statistic tells whether v is a statistic (or an array of them).
func statistic(v *syntax.Var) bool { return v.Type == syntax.TypeStats }

// inTapset tells whether global g is declared in a tapset file.
func (e *elab) inTapset(g *syntax.Var) bool {
	if g.Decl == nil {
		return false
	}
	f := e.fileOf[g.Decl]
	return f != nil && f.Tapset
}

func (e *elab) overrides() {
	for _, o := range e.opts.Overrides {
		name, value, _ := strings.Cut(o, "=")
		for _, g := range e.prog.Globals {
			if g.Name == name {
				if e.prog.Overrides == nil {
					e.prog.Overrides = map[*syntax.Var]string{}
				}
				e.prog.Overrides[g] = value
			}
		}
	}
}

// displayProbe builds the end probe that displays a global written and
// never read, as stap synthesizes `probe end { print g }` for it. The
// interpreter displays the global itself (output.Writer's Global), so the
// body is empty. The probe keeps its place among the end probes, which
// decides when the display runs, and the locals of stap's display code (a
// foreach over an array into __idx0, __idx1, ... and, but for statistics,
// __val), which -p2 lists.
func displayProbe(g *syntax.Var) *Probe {
	pos := g.Pos
	p := &Probe{
		Point:   &syntax.ProbePoint{Pos: pos, Components: []*syntax.Component{{Pos: pos, Name: "end"}}},
		Name:    "end",
		Family:  "end",
		Args:    map[string]syntax.Expr{},
		Body:    &syntax.Block{Pos: pos},
		Display: g,
	}
	p.User = p.Point
	if !g.IsArray {
		return p
	}
	for i, kt := range g.Keys {
		p.addLocal("__idx"+strconv.Itoa(i), kt)
	}
	if g.Type != tStats {
		p.addLocal("__val", g.Type)
	}
	return p
}

// addLocal adds a local variable to p.
func (p *Probe) addLocal(name string, t syntax.Type) {
	p.Locals = append(p.Locals, &syntax.Var{Name: name, Kind: syntax.VarLocal, Pos: p.Body.Pos, Type: t, Index: len(p.Locals)})
}
