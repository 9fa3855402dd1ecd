package sema

import (
	"fmt"
	"strings"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// The probes of one attach.Set share one program, compiled from the first
// one's body (bpfgen's compileSet): the functions a wildcard matched, on
// one uprobe_multi or kprobe_multi link. A body that reads context
// variables reads each where its own function keeps it, and two functions
// may keep $count in different registers, or one may have no $count at
// all (its @defined($count) then folded to 0, its body no longer the
// same). So settleSets splits a Set into groups of probes whose bodies,
// elaborated, are the same text and read the same context the same way,
// each group a Set of its own; a probe alone in its group takes the
// single kind of its kind (a kprobe for a kprobe_multi).

func (e *elab) settleSets() {
	type group struct {
		keys   []string
		probes map[string][]*Probe
	}
	groups := map[*attach.Set]*group{}
	var order []*attach.Set
	for _, p := range e.prog.Probes {
		if p.Attach == nil || p.Attach.Set == nil {
			continue
		}
		g := groups[p.Attach.Set]
		if g == nil {
			g = &group{probes: map[string][]*Probe{}}
			groups[p.Attach.Set] = g
			order = append(order, p.Attach.Set)
		}
		key := e.contextReads(p)
		if g.probes[key] == nil {
			g.keys = append(g.keys, key)
		}
		g.probes[key] = append(g.probes[key], p)
	}
	for _, set := range order {
		if g := groups[set]; len(g.keys) > 1 {
			for _, key := range g.keys {
				regroup(g.probes[key])
			}
		}
	}
}

// regroup makes ps a Set of their own, or, alone, a probe of the single
// kind.
func regroup(ps []*Probe) {
	next := &attach.Set{}
	for _, p := range ps {
		a := *p.Attach
		a.Set = next
		if len(ps) == 1 {
			a.Set, a.Kind = nil, a.Kind.Single()
		}
		p.Attach = &a
	}
}

// contextReads describes p's elaborated body and where it reads its
// context expressions, in order: two probes can share code only when it is
// the same.
func (e *elab) contextReads(p *Probe) string {
	var b strings.Builder
	b.WriteString(syntax.StmtString(p.Body))
	syntax.Any(p.Body, func(n syntax.Node) bool {
		if x, ok := n.(syntax.Expr); ok {
			if a := e.prog.Targets[x]; a != nil {
				writeAccess(&b, a, p.Attach)
			}
		}
		return false
	})
	return b.String()
}

func writeAccess(b *strings.Builder, a *probes.Access, at *attach.Point) {
	if a.Param >= 0 && a.Param < len(at.Args) {
		arg := at.Args[a.Param]
		fmt.Fprintf(b, "arg %+v %v %d;", arg.Loc, arg.Pointer, arg.Type)
	}
	if a.Path != nil {
		fmt.Fprintf(b, "path %+v;", *a.Path)
	}
	fmt.Fprintf(b, "%v %q %q %v %d;", a.Address, a.Name, a.Format, a.Type, a.Pointee)
	for _, x := range a.Args {
		writeAccess(b, x, at)
	}
	b.WriteString("|")
}
