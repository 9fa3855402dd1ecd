package sema

import (
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Expansions ahead of the derivation.
//
// A point of a family whose expansion only reads kernel facts
// (probes.Family.Concurrent: kernel.function's, a search of the BTF's
// strings and trial loads of its attach kinds, one or two milliseconds a
// point) is expanded in a goroutine of its own as the derivation starts,
// for every such point the user's probes reach, through aliases too:
// syscall.*.return reaches syscall.ni_syscall.return, on
// kernel.function("sys_ni_syscall").return, which is then expanded while
// the syscall family lists the kernel's calls. The derivation, point by
// point as before, finds the expansion made or waits for it. One made
// ahead is used once: the same point reached again is expanded again, its
// kernel facts found in their caches by then.

// aheadExpansion is a point's expansion under way in a goroutine.
type aheadExpansion struct {
	done chan struct{}
	pts  []*probes.Point
	err  error
}

// expandAhead starts the expansions of the concurrent points the probes
// of user reach. It matches without families' lists of names
// (Registry.MatchUnlisted): the expansions start while the derivation
// waits for the list of the kernel's calls that syscall.*.return reads.
func (e *elab) expandAhead(user []*syntax.File) {
	for _, f := range user {
		for _, d := range f.Decls {
			if pd, ok := d.(*syntax.ProbeDecl); ok {
				for _, pp := range pd.Points {
					e.aheadOf(e.reg.MatchUnlisted(pp.Components), 0)
				}
			}
		}
	}
}

// aheadOf starts the expansions of the concurrent points pts are or
// reach, depth aliases down.
func (e *elab) aheadOf(pts []*probes.Point, depth int) {
	if depth >= maxAliasDepth {
		return
	}
	for _, pt := range pts {
		if set, alias := pt.Family.Payload.(*aliasSet); alias {
			for _, a := range set.decls {
				for _, target := range a.Points {
					e.aheadOf(e.reg.MatchUnlisted(e.withSuffix(target.Components, pt.Suffix)), depth+1)
				}
			}
			continue
		}
		key := aheadKey(pt)
		if !pt.Family.Concurrent || e.ahead[key] != nil {
			continue
		}
		x := &aheadExpansion{done: make(chan struct{})}
		e.ahead[key] = x
		go func() {
			defer close(x.done)
			x.pts, x.err = pt.Family.Expand(pt)
		}()
	}
}

// expandPoint is pt's expansion: the one made ahead, once, else its
// family's own.
func (e *elab) expandPoint(pt *probes.Point) ([]*probes.Point, error) {
	key := aheadKey(pt)
	if x := e.ahead[key]; x != nil {
		delete(e.ahead, key)
		<-x.done
		return x.pts, x.err
	}
	return pt.Family.Expand(pt)
}

// aheadKey names the point pt of its family.
func aheadKey(pt *probes.Point) string {
	return pt.Family.Name + " " + probes.ComponentsString(append(append([]*syntax.Component(nil), pt.Components...), pt.Suffix...))
}
