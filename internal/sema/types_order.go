package sema

import (
	"container/heap"

	"github.com/bpftap/bpftap/internal/syntax"
)

// Which bodies a type pass visits.
//
// stap's pass visits every function (by name), then every probe. A visit
// reads the types of its body's expressions and locals and of the symbols
// it mentions (globals, the functions it calls: their results and
// parameters) and settles some of them; visited again with none of those
// changed, it settles nothing. So a pass here visits only the bodies due:
// one whose last visit settled something, and one that mentions a symbol
// settled since its last visit. A body made due by a body before it in the
// order is visited in the same pass, as stap's pass reaches it after; one
// made due by a body after it waits for the next pass. The passes see the
// types stap's passes see, in the same order, and settle the same. When no
// body is due, a pass over every body counts what is left unresolved, as
// stap's pass without progress does (and would settle what a missed
// dependency left behind: the passes then go on).

// typedBody is a function's body (fn) or a probe's.
type typedBody struct {
	fn    *syntax.Func
	probe *Probe
}

// schedule is the order of the bodies and which of them are due.
type schedule struct {
	bodies []typedBody
	// readers are the bodies that mention each symbol (*syntax.Var,
	// *syntax.Func), by index in bodies.
	readers map[any][]int
	// nodes counts the nodes of the bodies, which bounds the passes.
	nodes int
	all   bool // the running pass visits every body
	cur   int  // the body being visited
	now   dueHeap
	inNow []bool
	// later are the bodies due in the next pass.
	later   []int
	inLater []bool
}

// newSchedule orders prog's bodies as stap's passes visit them and indexes
// the symbols each mentions. On the way, it gives literals their types
// before inference starts, as stap's parser does (a walk of its own was a
// fourteenth of the nodes pass 2 visits for syscall.*).
func newSchedule(prog *Program, byName []*syntax.Func) *schedule {
	s := &schedule{readers: map[any][]int{}}
	for _, f := range byName {
		if f.Decl != nil && f.Decl.Body != nil {
			s.add(typedBody{fn: f}, f.Decl.Body)
			s.read(f) // its return statements settle its result
		}
	}
	for _, p := range prog.Probes {
		s.add(typedBody{probe: p}, p.Body)
		if p.Cond != nil {
			s.index(p.Cond)
		}
	}
	s.inNow, s.inLater = make([]bool, len(s.bodies)), make([]bool, len(s.bodies))
	return s
}

// add appends a body and indexes what it mentions.
func (s *schedule) add(b typedBody, body syntax.Node) {
	s.bodies = append(s.bodies, b)
	s.index(body)
}

// index records the symbols n mentions as read by the last body.
func (s *schedule) index(n syntax.Node) {
	syntax.Walk(n, func(n syntax.Node) bool {
		s.nodes++
		switch n := n.(type) {
		case *syntax.NumberLit:
			n.SetType(tLong)
		case *syntax.StringLit:
			n.SetType(tString)
		case *syntax.Ident:
			if n.Var != nil {
				s.read(n.Var)
			}
		case *syntax.Call:
			if f := n.Func; f != nil {
				s.read(f)
				for _, p := range f.Params {
					s.read(p)
				}
			}
		}
		return true
	})
}

// read records the last body as a reader of symbol.
func (s *schedule) read(symbol any) {
	i := len(s.bodies) - 1
	if r := s.readers[symbol]; len(r) == 0 || r[len(r)-1] != i {
		s.readers[symbol] = append(r, i)
	}
}

// passes bounds the passes of a run: every pass that settles something
// but the last is followed by at most one that visits every body, and
// a type settles at most once in each node.
func (s *schedule) passes() int { return 2*s.nodes + 4 }

// start begins a pass over every body (all) or over those due.
func (s *schedule) start(all bool) {
	s.all, s.cur = all, -1
	for _, i := range s.later {
		s.inLater[i] = false
		if !all {
			s.inNow[i] = true
			heap.Push(&s.now, i)
		}
	}
	s.later = s.later[:0]
}

// next returns the next body of the pass to visit.
func (s *schedule) next() (int, bool) {
	if s.all {
		s.cur++
		return s.cur, s.cur < len(s.bodies)
	}
	if s.now.Len() == 0 {
		return 0, false
	}
	s.cur = heap.Pop(&s.now).(int)
	s.inNow[s.cur] = false
	return s.cur, true
}

// due makes body i due: in this pass when it comes after the body being
// visited, else in the next.
func (s *schedule) due(i int) {
	switch {
	case i <= s.cur:
		if !s.inLater[i] {
			s.inLater[i] = true
			s.later = append(s.later, i)
		}
	case !s.all && !s.inNow[i]:
		s.inNow[i] = true
		heap.Push(&s.now, i)
	}
}

// changed makes the readers of a symbol whose type was settled due.
func (s *schedule) changed(symbol any) {
	for _, i := range s.readers[symbol] {
		s.due(i)
	}
}

// dueHeap holds body indexes, least first.
type dueHeap []int

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
