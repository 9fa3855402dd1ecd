package sema

import (
	"maps"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
)

// The listing of stap's -l and -L, made from a program elaborated with
// Options.Listing in one pass over its probes. The probes derived from the
// user's point (not those of -E scripts, nor those the elaborator adds)
// are grouped by the name the script knows them by (Probe.Script: an
// alias expanded from a wildcard is one name, however many probes it
// made), one line per name, in byte order. -L follows each name with the
// variables every probe of its group has: the locals (their types
// inferred; the arguments a body reads first, as -p2 lists them), in
// order of first appearance, then the context variables of the points
// ($prev:struct task_struct*). With -v, -L gives every probe a line of its
// own, its concrete point followed by all its variables.

// Listing renders the listing: names only, or with vars (-L) their
// variables, each probe on its own line with each (-L -v); and how many
// names there are: none when the user's point matched nothing.
func (p *Program) Listing(vars, each bool) (string, int, error) {
	groups := p.listedProbes()
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		switch {
		case !vars:
			b.WriteString(name + "\n")
		case each:
			for _, pr := range groups[name] {
				locals, context, err := pr.variables()
				if err != nil {
					return "", 0, err
				}
				writeListed(&b, pointString(pr.Point, true), locals, context)
			}
		default:
			var locals, context [][]string
			for _, pr := range groups[name] {
				l, c, err := pr.variables()
				if err != nil {
					return "", 0, err
				}
				locals, context = append(locals, l), append(context, c)
			}
			writeListed(&b, name, common(locals), common(context))
		}
	}
	return b.String(), len(groups), nil
}

// listedProbes groups the probes derived from the user's main script by
// their Script names, each group in derivation order.
func (p *Program) listedProbes() map[string][]*Probe {
	own := map[syntax.Decl]bool{}
	if len(p.Files) > 0 {
		for _, d := range p.Files[0].Decls {
			own[d] = true
		}
	}
	groups := map[string][]*Probe{}
	for _, pr := range p.Probes {
		if pr.Script != "" && own[pr.Decl] {
			groups[pr.Script] = append(groups[pr.Script], pr)
		}
	}
	return groups
}

// variables are a probe's locals and its point's context variables as -L
// lists them: "name:type", "$name:C type". The arguments a probe reads
// (paramLocals, -p2's __tracepoint_arg_NAME) are left out: stap lists them,
// first, but a script can name them only as $NAME, which the context
// variables list.
func (p *Probe) variables() (locals, context []string, err error) {
	for _, v := range p.Locals {
		if strings.HasPrefix(v.Name, "__entry_") && strings.HasSuffix(v.Name, "_v") {
			continue // an @entry value the elaborator carries (entry.go)
		}
		locals = append(locals, varSig(v))
	}
	if p.context != nil {
		context, err = p.context.Vars()
	}
	return locals, context, err
}

// common keeps the entries that every one of lists holds, in order of
// first appearance.
func common(lists [][]string) []string {
	count := map[string]int{}
	var order, kept []string
	for _, list := range lists {
		for _, s := range list {
			if count[s] == 0 {
				order = append(order, s)
			}
			count[s]++
		}
	}
	for _, s := range order {
		if count[s] == len(lists) {
			kept = append(kept, s)
		}
	}
	return kept
}

func writeListed(b *strings.Builder, head string, lists ...[]string) {
	b.WriteString(head)
	for _, list := range lists {
		for _, s := range list {
			b.WriteString(" " + s)
		}
	}
	b.WriteString("\n")
}
