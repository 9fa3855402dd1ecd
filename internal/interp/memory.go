package interp

import (
	"encoding/binary"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Value is a script value: a long or a string (the type decides which field
// is meaningful). Strings are valid script strings: at most MAXSTRINGLEN-1
// bytes and no NUL byte. It converts to format.Arg.
type Value struct {
	Int int64
	Str string
}

// Key is the tuple of keys of an array element.
type Key []Value

// equal reports whether k and o are the same tuple.
func (k Key) equal(o Key) bool {
	if len(k) != len(o) {
		return false
	}
	for i := range k {
		if k[i] != o[i] {
			return false
		}
	}
	return true
}

// appendEncoding appends the map key of a tuple; strings are length-prefixed
// so that tuples never collide.
func (k Key) appendEncoding(b []byte) []byte {
	for _, v := range k {
		b = binary.AppendVarint(b, v.Int)
		b = binary.AppendUvarint(b, uint64(len(v.Str)))
		b = append(b, v.Str...)
	}
	return b
}

// memScalar is a scalar global kept in memory.
type memScalar struct{ v Value }

func (s *memScalar) Load() Value   { return s.v }
func (s *memScalar) Store(v Value) { s.v = v }

func (s *memScalar) Fold(_ Key, n int64, _ *format.Stat) { s.v.Int += n }

// memStatistic is a scalar statistic kept in memory: a single partial.
type memStatistic struct{ s *format.Stat }

func (s memStatistic) Add(v int64)         { s.s.Add(v) }
func (s memStatistic) Total() *format.Stat { return format.Total(s.s) }
func (s memStatistic) Reset()              { s.s.Reset() }

func (s memStatistic) Fold(_ Key, _ int64, p *format.Stat) { s.s.Merge(p) }

// memArray is an in-memory array: a hash index over a list in insertion order,
// as stap's runtime keeps its maps (the list runs through the elements'
// prev and next). An array whose key is one long is indexed by it; other
// keys are looked up by their encoding, built in a buffer the array
// reuses so that a lookup allocates nothing. The element found last is
// tried first (see has). Clear keeps the index's room: a script that
// fills and deletes an array on every scrape grows it once.
type memArray struct {
	index       map[string]*Element // by the keys' encoding, unless longs is set
	longs       map[int64]*Element  // by the one long of the key
	first, last *Element            // the order's ends
	n           int
	capacity    int
	wrap        bool
	newStat     func() *format.Stat // nil unless the array holds statistics
	scratch     []byte              // the encoding of the key looked up last
	found       *Element            // the element looked up last, if any
}

// newMemArray makes an array of at most capacity elements whose key has
// the types keys.
func newMemArray(keys []syntax.Type, capacity int, wrap bool, newStat func() *format.Stat) *memArray {
	a := &memArray{capacity: capacity, wrap: wrap, newStat: newStat}
	if len(keys) == 1 && keys[0] == syntax.TypeLong {
		a.longs = map[int64]*Element{}
	} else {
		a.index = map[string]*Element{}
	}
	return a
}

// find returns the element with key k, nil if none, and remembers it in
// a.found. A lookup in the index by encoding leaves it in a.scratch.
func (a *memArray) find(k Key) *Element {
	switch {
	case a.found.has(k):
	case a.longs != nil:
		a.found = a.longs[k[0].Int]
	default:
		a.scratch = k.appendEncoding(a.scratch[:0])
		a.found = a.index[string(a.scratch)]
	}
	return a.found
}

func (a *memArray) Get(k Key) (Value, bool) {
	if e := a.find(k); e != nil {
		return e.Value, true
	}
	return Value{}, false
}

func (a *memArray) Stat(k Key) *format.Stat {
	if e := a.find(k); e != nil {
		return e.Stat
	}
	return nil
}

func (a *memArray) Set(k Key, v Value) error {
	e, err := a.put(k)
	if err == nil {
		e.Value = v
	}
	return err
}

func (a *memArray) Add(k Key, v int64) error {
	e, err := a.put(k)
	if err == nil {
		e.Stat.Add(v)
	}
	return err
}

// has reports whether e is an element with key k. find tries the element
// found last first, which spares the store of a read-modify-write
// (a[k] += v), or a second read of a[k], another hash lookup.
func (e *Element) has(k Key) bool { return e != nil && e.Key.equal(k) }

// put returns the element with key k, creating it when absent.
func (a *memArray) put(k Key) (*Element, error) {
	if e := a.find(k); e != nil {
		return e, nil
	}
	return a.insert(k)
}

// insert adds an element with key k after a lookup of k failed (leaving
// its encoding in a.scratch if it has one); a full array evicts its
// oldest element when it wraps and fails otherwise.
func (a *memArray) insert(k Key) (*Element, error) {
	if a.n >= a.capacity {
		if !a.wrap || a.n == 0 {
			return nil, ErrOverflow
		}
		a.remove(a.first)
	}
	e := newElement(k)
	if a.newStat != nil {
		e.Stat = a.newStat()
	}
	a.pushBack(e)
	if a.longs != nil {
		a.longs[k[0].Int] = e
	} else {
		e.enc = string(a.scratch)
		a.index[e.enc] = e
	}
	a.found = e
	return e, nil
}

// newElement returns an element with a copy of key k; a key of one
// column is allocated with the element.
func newElement(k Key) *Element {
	if len(k) != 1 {
		return &Element{Key: append(Key(nil), k...)}
	}
	ek := &struct {
		e Element
		k [1]Value
	}{k: [1]Value{k[0]}}
	ek.e.Key = ek.k[:]
	return &ek.e
}

// pushBack puts e at the end of the order.
func (a *memArray) pushBack(e *Element) {
	e.prev, e.next = a.last, nil
	if a.last == nil {
		a.first = e
	} else {
		a.last.next = e
	}
	a.last = e
	a.n++
}

// Fold adds n to element k, or merges p into it (Folder); the element is
// created when absent, beyond the capacity of an array that does not wrap.
func (a *memArray) Fold(k Key, n int64, p *format.Stat) {
	e, err := a.put(k)
	if err != nil {
		capacity := a.capacity
		a.capacity = a.n + 1
		e, _ = a.insert(k)
		a.capacity = capacity
	}
	if p != nil {
		e.Stat.Merge(p)
		return
	}
	e.Value.Int += n
}

func (a *memArray) remove(e *Element) {
	if e.prev == nil {
		a.first = e.next
	} else {
		e.prev.next = e.next
	}
	if e.next == nil {
		a.last = e.prev
	} else {
		e.next.prev = e.prev
	}
	a.n--
	if a.longs != nil {
		delete(a.longs, e.Key[0].Int)
	} else {
		delete(a.index, e.enc)
	}
	a.found = nil
}

func (a *memArray) Delete(k Key) {
	if e := a.find(k); e != nil {
		a.remove(e)
	}
}

func (a *memArray) Clear() {
	clear(a.index)
	clear(a.longs)
	a.first, a.last, a.n, a.found = nil, nil, 0, nil
}

func (a *memArray) Len() int { return a.n }

func (a *memArray) Elements() []*Element {
	list := make([]*Element, 0, a.n)
	for e := a.first; e != nil; e = e.next {
		list = append(list, e)
	}
	return list
}

func (a *memArray) Reorder(elems []*Element) {
	a.first, a.last, a.n = nil, nil, 0
	for _, e := range elems {
		a.pushBack(e)
	}
}
