package interp

import (
	"math/rand/v2"
	"testing"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// hashStorage keeps globals the way BPF maps shared with kernel probes do,
// to check that the interpreter relies only on the storage contract: arrays
// are hash maps that iterate in a different random order every time, longs
// and statistics are split over two CPUs and combined on read, and a full
// array overflows without wrapping.
func hashStorage(seed uint64) func(g Global) Storage {
	rng := rand.New(rand.NewPCG(seed, 1))
	return func(g Global) Storage {
		switch {
		case g.Var.IsArray:
			return Storage{Array: &hashArray{elems: map[string]*hashElem{}, capacity: int(g.Capacity), newStat: g.NewStat, rng: rng}}
		case g.NewStat != nil:
			return Storage{Statistic: &perCPUStat{parts: []*format.Stat{g.NewStat(), g.NewStat()}}}
		}
		return Storage{Scalar: &perCPUScalar{}}
	}
}

// cpus is the number of CPUs the fake storage simulates.
const cpus = 2

// perCPUScalar is a promoted long: a slot per CPU, summed on read.
type perCPUScalar struct{ slots [cpus]Value }

func (s *perCPUScalar) Load() Value {
	v := s.slots[0]
	for _, o := range s.slots[1:] {
		v.Int += o.Int
	}
	return v
}

func (s *perCPUScalar) Store(v Value) { s.slots = [cpus]Value{v} }

// perCPUStat is a per-CPU statistic; values go to the CPUs in turn.
type perCPUStat struct {
	parts []*format.Stat
	next  int
}

func (s *perCPUStat) Add(v int64) {
	s.parts[s.next].Add(v)
	s.next = (s.next + 1) % len(s.parts)
}

func (s *perCPUStat) Total() *format.Stat { return format.Total(s.parts...) }

func (s *perCPUStat) Reset() {
	for _, p := range s.parts {
		p.Reset()
	}
}

type hashElem struct {
	key   Key
	val   Value
	stats *perCPUStat
}

type hashArray struct {
	elems    map[string]*hashElem
	capacity int
	newStat  func() *format.Stat
	rng      *rand.Rand
}

func (a *hashArray) find(k Key) *hashElem { return a.elems[string(k.appendEncoding(nil))] }

func (a *hashArray) Get(k Key) (Value, bool) {
	if e := a.find(k); e != nil {
		return e.val, true
	}
	return Value{}, false
}

func (a *hashArray) put(k Key) (*hashElem, error) {
	if e := a.find(k); e != nil {
		return e, nil
	}
	if len(a.elems) >= a.capacity {
		return nil, ErrOverflow
	}
	e := &hashElem{key: append(Key(nil), k...)}
	if a.newStat != nil {
		e.stats = &perCPUStat{parts: []*format.Stat{a.newStat(), a.newStat()}}
	}
	a.elems[string(k.appendEncoding(nil))] = e
	return e, nil
}

func (a *hashArray) Set(k Key, v Value) error {
	e, err := a.put(k)
	if err == nil {
		e.val = v
	}
	return err
}

func (a *hashArray) Add(k Key, v int64) error {
	e, err := a.put(k)
	if err == nil {
		e.stats.Add(v)
	}
	return err
}

// merged folds an element's partials in CPU order, as for array elements.
func (a *hashArray) merged(e *hashElem) *format.Stat {
	s := a.newStat()
	for _, p := range e.stats.parts {
		s.Merge(p)
	}
	return s
}

func (a *hashArray) Stat(k Key) *format.Stat {
	if e := a.find(k); e != nil {
		return a.merged(e)
	}
	return nil
}

func (a *hashArray) Delete(k Key) { delete(a.elems, string(k.appendEncoding(nil))) }
func (a *hashArray) Clear()       { clear(a.elems) }
func (a *hashArray) Len() int     { return len(a.elems) }

func (a *hashArray) Elements() []*Element {
	var list []*Element
	for _, e := range a.elems {
		el := &Element{Key: e.key, Value: e.val}
		if e.stats != nil {
			el.Stat = a.merged(e)
		}
		list = append(list, el)
	}
	a.rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	return list
}

func TestStorageMustMatchKind(t *testing.T) {
	f, err := syntax.Parse(syntax.NewSource("<input>", "global a; probe begin { a[1] = 1 }"), syntax.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prog, err := sema.Elaborate([]*syntax.File{f}, sema.Options{Library: libraryFiles(t), NoWarnings: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(prog, Config{Storage: func(Global) Storage { return Storage{Scalar: &perCPUScalar{}} }})
	if err == nil || err.Error() != "storage of global a does not match its kind" {
		t.Errorf("got error %v", err)
	}
}
