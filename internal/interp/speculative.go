package interp

import (
	"slices"

	"github.com/bpftap/bpftap/internal/format"
)

// Speculative output (stap's speculative tapset): speculate(id, text)
// sets text aside under an id that speculation() gave; commit(id) prints
// what was set aside under it, in order, and discard(id) drops it. The
// texts are kept here, in user space: in a kernel probe the three calls
// are Deferred (tapset.Deferred), sent in records that arrive in order
// with the probe's other output, so a kernel probe needs no map of texts
// and no loop over one. As in stap, where they are the elements of a
// wrapping array, at most MAXMAPENTRIES texts are held: a new one pushes
// out the oldest of any id.
type speculations struct {
	held map[int64][]heldText
	// order is the held texts, oldest first, as id and sequence number;
	// those committed or discarded since are skipped when it is read.
	order []heldRef
	count int
	seq   uint64
}

type heldText struct {
	seq  uint64
	text string
}

type heldRef struct {
	id  int64
	seq uint64
}

var speculativeBuiltins = map[string]builtinFunc{
	"speculate": func(cc *callContext, args []Value) Value {
		cc.in.spec.add(args[0].Int, args[1].Str, cc.in.limits.MaxMapEntries)
		return Value{}
	},
	"commit": func(cc *callContext, args []Value) Value {
		for _, t := range cc.in.spec.take(args[0].Int) {
			if err := cc.in.out.Print(printString, []format.Arg{{Str: t.text}}, nil); err != nil {
				cc.fail(err.Error())
			}
		}
		return Value{}
	},
	"discard": func(cc *callContext, args []Value) Value {
		cc.in.spec.take(args[0].Int)
		return Value{}
	},
}

// printString is print(s)'s format.
var printString = format.Print([]format.Kind{format.KindString}, "", false)

// add holds text under id, pushing out the oldest text held where limit
// are.
func (s *speculations) add(id int64, text string, limit int64) {
	if s.held == nil {
		s.held = map[int64][]heldText{}
	}
	for int64(s.count) >= limit && s.count > 0 {
		s.dropOldest()
	}
	s.seq++
	s.held[id] = append(s.held[id], heldText{s.seq, text})
	s.order = append(s.order, heldRef{id, s.seq})
	s.count++
}

// dropOldest drops the oldest text held.
func (s *speculations) dropOldest() {
	for len(s.order) > 0 {
		ref := s.order[0]
		s.order = s.order[1:]
		texts := s.held[ref.id]
		if len(texts) > 0 && texts[0].seq == ref.seq {
			s.held[ref.id] = texts[1:]
			if len(texts) == 1 {
				delete(s.held, ref.id)
			}
			s.count--
			return
		}
	}
}

// take removes and returns the texts held under id, in order.
func (s *speculations) take(id int64) []heldText {
	texts := s.held[id]
	delete(s.held, id)
	s.count -= len(texts)
	if len(s.order) > 2*max(s.count, 64) { // forget the references taken
		s.order = slices.DeleteFunc(s.order, func(r heldRef) bool {
			ts := s.held[r.id]
			return len(ts) == 0 || r.seq < ts[0].seq
		})
	}
	return texts
}
