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
// point) is expanded beside the derivation, as it starts, for every such
// point the user's probes reach, through aliases too:
// syscall.*.return reaches syscall.ni_syscall.return, on
// kernel.function("sys_ni_syscall").return, which is then expanded while
// the syscall family lists the kernel's calls. The expansions run one
// after the other in one goroutine, in the order the derivation meets
// their points: the first trial of an attach kind, whose refusal the
// messages of the later points quote ("loading a fentry program on
// n_tty_receive_buf gives EPERM"), is the first point's, as when the
// derivation expands them itself. A family whose own expansion the
// derivation makes but whose kernel facts can be read beside it
// (probes.Family.Prefetch: the raw syscall tracepoint syscall.*.return's
// program attaches to) has them read in that goroutine, in turn, and
// nothing waits for that. The derivation, point by point as before,
// finds the expansion made or waits for it. One made ahead is
// used once: the same point reached again is expanded again, its kernel
// facts found in their caches by then. When the derivation ends, the
// expansions it never asked for (points past a `!` point that matched, or
// after the error that stopped it) are dropped and the one under way is
// waited for: nothing outlives the elaboration (a fuzzer's process
// elaborates `probe **` over and over).

// aheadExpansion is a point's expansion, made ahead once done is closed;
// or, for prefetch, its family's Prefetch, which nothing waits for (done
// nil).
type aheadExpansion struct {
	pt       *probes.Point
	prefetch bool
	done     chan struct{}
	pts      []*probes.Point
	err      error
}

// expandAhead starts the expansions of the concurrent points the probes
// of user reach, and returns what stops them. It matches without
// families' lists of names (Registry.MatchUnlisted): the expansions start
// while the derivation waits for the list of the kernel's calls that
// syscall.*.return reads.
func (e *elab) expandAhead(user []*syntax.File) (stop func()) {
	w := &aheadWalk{e: e, seen: map[aliasUse]bool{}, active: map[*syntax.AliasDecl]bool{}, prefetched: map[string]bool{}}
	for _, f := range user {
		for _, d := range f.Decls {
			if pd, ok := d.(*syntax.ProbeDecl); ok {
				for _, pp := range pd.Points {
					w.walk(e.reg.MatchUnlisted(pp.Components), 0)
				}
			}
		}
	}
	queue := w.queue
	if len(queue) == 0 {
		return func() {}
	}
	stopped, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for _, x := range queue {
			select {
			case <-stopped:
				return
			default:
			}
			if x.prefetch {
				x.pt.Family.Prefetch(x.pt)
				continue
			}
			x.pts, x.err = x.pt.Family.Expand(x.pt)
			close(x.done)
		}
	}()
	return func() {
		close(stopped)
		<-finished
		clear(e.ahead) // a later expandPoint expands for itself
	}
}

// aheadWalk finds the concurrent points the user's points reach, in the
// derivation's order. It walks an alias once for each suffix it is
// reached with (its points are then queued already), and not inside
// itself: that loop is the derivation's error to report, and walking it
// took time exponential in the depth (`probe a = a.A.return = *, ...`
// with `probe a.*.return` hung pass 2).
type aheadWalk struct {
	e          *elab
	queue      []*aheadExpansion
	seen       map[aliasUse]bool
	active     map[*syntax.AliasDecl]bool // the aliases on the way down
	prefetched map[string]bool            // the points whose family's Prefetch is queued
}

// aliasUse is an alias reached with a suffix.
type aliasUse struct {
	decl   *syntax.AliasDecl
	suffix string
}

// walk queues the expansions of the concurrent points pts are or reach,
// depth aliases down.
func (w *aheadWalk) walk(pts []*probes.Point, depth int) {
	if depth >= maxAliasDepth {
		return
	}
	for _, pt := range pts {
		if set, alias := pt.Family.Payload.(*aliasSet); alias {
			w.walkAliases(set, pt.Suffix, depth)
			continue
		}
		if pt.Family.Prefetch == nil && !pt.Family.Concurrent {
			continue // its name is not worth making (syscall.*: 167 aliases' points)
		}
		key := aheadKey(pt)
		if pt.Family.Prefetch != nil && !w.prefetched[key] {
			w.prefetched[key] = true
			w.queue = append(w.queue, &aheadExpansion{pt: pt, prefetch: true})
		}
		if !pt.Family.Concurrent || w.e.ahead[key] != nil {
			continue
		}
		x := &aheadExpansion{pt: pt, done: make(chan struct{})}
		w.e.ahead[key] = x
		w.queue = append(w.queue, x)
	}
}

// walkAliases walks the points of the aliases of set, reached with suffix.
func (w *aheadWalk) walkAliases(set *aliasSet, suffix []*syntax.Component, depth int) {
	reached := probes.ComponentsString(suffix)
	for _, a := range set.decls {
		use := aliasUse{a, reached}
		if w.seen[use] || w.active[a] {
			continue
		}
		w.seen[use], w.active[a] = true, true
		for _, target := range a.Points {
			w.walk(w.e.reg.MatchUnlisted(w.e.withSuffix(target.Components, suffix)), depth+1)
		}
		delete(w.active, a)
	}
}

// expandPoint is pt's expansion: the one made ahead, once, else its
// family's own.
func (e *elab) expandPoint(pt *probes.Point) ([]*probes.Point, error) {
	if !pt.Family.Concurrent || len(e.ahead) == 0 {
		return pt.Family.Expand(pt) // none is made ahead: no name to make and look up
	}
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
