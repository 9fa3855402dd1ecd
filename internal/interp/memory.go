package interp

import (
	"container/list"
	"encoding/binary"

	"github.com/bpftap/bpftap/internal/format"
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

// memStatistic is a scalar statistic kept in memory: a single partial.
type memStatistic struct{ s *format.Stat }

func (s memStatistic) Add(v int64)         { s.s.Add(v) }
func (s memStatistic) Total() *format.Stat { return format.Total(s.s) }
func (s memStatistic) Reset()              { s.s.Reset() }

// memArray is an in-memory array: a hash index over a list in insertion order,
// as stap's runtime keeps its maps. Keys are looked up by their encoding,
// built in a buffer the array reuses so that a lookup allocates nothing; the
// element found last is remembered, so that the Set of a read-modify-write
// finds it again without hashing.
type memArray struct {
	index    map[string]*Element
	order    *list.List
	capacity int
	wrap     bool
	newStat  func() *format.Stat // nil unless the array holds statistics
	scratch  []byte              // the encoding of the key looked up last
	last     *Element            // the element looked up last, if any
}

func newMemArray(capacity int, wrap bool, newStat func() *format.Stat) *memArray {
	return &memArray{index: map[string]*Element{}, order: list.New(), capacity: capacity, wrap: wrap, newStat: newStat}
}

// lookup finds the element with key k.
func (a *memArray) lookup(k Key) *Element {
	if a.last != nil && a.last.Key.equal(k) {
		return a.last
	}
	return a.find(k)
}

// find looks k up in the index, leaving its encoding in a.scratch.
func (a *memArray) find(k Key) *Element {
	a.scratch = k.appendEncoding(a.scratch[:0])
	a.last = a.index[string(a.scratch)]
	return a.last
}

func (a *memArray) Get(k Key) (Value, bool) {
	if e := a.lookup(k); e != nil {
		return e.Value, true
	}
	return Value{}, false
}

func (a *memArray) Stat(k Key) *format.Stat {
	if e := a.lookup(k); e != nil {
		return e.Stat
	}
	return nil
}

func (a *memArray) Set(k Key, v Value) error {
	if e := a.last; e != nil && e.Key.equal(k) {
		e.Value = v
		return nil
	}
	e := a.find(k)
	if e == nil {
		var err error
		if e, err = a.insert(k); err != nil {
			return err
		}
	}
	e.Value = v
	return nil
}

func (a *memArray) Add(k Key, v int64) error {
	e := a.lookup(k)
	if e == nil {
		var err error
		if e, err = a.insert(k); err != nil {
			return err
		}
	}
	e.Stat.Add(v)
	return nil
}

// insert adds an element with key k after a lookup of k failed (leaving
// its encoding in a.scratch); a full array evicts its oldest element when it
// wraps and fails otherwise.
func (a *memArray) insert(k Key) (*Element, error) {
	if a.order.Len() >= a.capacity {
		if !a.wrap || a.order.Len() == 0 {
			return nil, ErrOverflow
		}
		a.remove(a.order.Front().Value.(*Element))
	}
	e := &Element{Key: append(Key(nil), k...), enc: string(a.scratch)}
	if a.newStat != nil {
		e.Stat = a.newStat()
	}
	e.node = a.order.PushBack(e)
	a.index[e.enc] = e
	a.last = e
	return e, nil
}

func (a *memArray) remove(e *Element) {
	a.order.Remove(e.node)
	delete(a.index, e.enc)
	a.last = nil
}

func (a *memArray) Delete(k Key) {
	if e := a.lookup(k); e != nil {
		a.remove(e)
	}
}

func (a *memArray) Clear() {
	a.index = map[string]*Element{}
	a.order.Init()
	a.last = nil
}

func (a *memArray) Len() int { return a.order.Len() }

func (a *memArray) Elements() []*Element {
	list := make([]*Element, 0, a.order.Len())
	for n := a.order.Front(); n != nil; n = n.Next() {
		list = append(list, n.Value.(*Element))
	}
	return list
}

func (a *memArray) Reorder(elems []*Element) {
	a.order.Init()
	for _, e := range elems {
		e.node = a.order.PushBack(e)
	}
}
