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

// element is one element of an array: its keys and its value (a long or a
// string), or its statistic for arrays of statistics.
type element struct {
	key  Key
	val  Value
	stat *format.Stat
	node *list.Element
	enc  string // the key's encoding, its index in the array's map
}

// value is the element's value; a missing element (nil) reads as zero.
func (e *element) value() Value {
	if e == nil {
		return Value{}
	}
	return e.val
}

// Array is the storage of a global array. The in-memory implementation keeps
// stap's element list; a later storage (BPF maps shared with kernel probes)
// implements the same operations.
type Array interface {
	// Get returns the element with key k, or nil.
	Get(k Key) *element
	// Put returns the element with key k, creating it when absent; it fails
	// when the array is full and does not wrap.
	Put(k Key) (*element, bool)
	Delete(k Key)
	Clear()
	Len() int
	// Elements returns the elements in iteration order.
	Elements() []*element
	// Reorder makes the given permutation of Elements the iteration order.
	Reorder([]*element)
}

// memArray is an in-memory array: a hash index over a list in insertion order.
// Keys are looked up by their encoding, built in a buffer the array reuses so
// that a lookup allocates nothing.
type memArray struct {
	index    map[string]*element
	order    *list.List
	capacity int
	wrap     bool
	newStat  func() *format.Stat // nil unless the array holds statistics
	scratch  []byte              // the encoding of the key looked up last
}

func newMemArray(capacity int, wrap bool, newStat func() *format.Stat) *memArray {
	return &memArray{index: map[string]*element{}, order: list.New(), capacity: capacity, wrap: wrap, newStat: newStat}
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

// lookup finds the element with key k, leaving k's encoding in a.scratch.
func (a *memArray) lookup(k Key) *element {
	a.scratch = k.appendEncoding(a.scratch[:0])
	return a.index[string(a.scratch)]
}

func (a *memArray) Get(k Key) *element { return a.lookup(k) }

func (a *memArray) Put(k Key) (*element, bool) {
	if e := a.lookup(k); e != nil {
		return e, true
	}
	if a.order.Len() >= a.capacity {
		if !a.wrap || a.order.Len() == 0 {
			return nil, false
		}
		a.remove(a.order.Front().Value.(*element))
	}
	e := &element{key: append(Key(nil), k...), enc: string(a.scratch)}
	if a.newStat != nil {
		e.stat = a.newStat()
	}
	e.node = a.order.PushBack(e)
	a.index[e.enc] = e
	return e, true
}

func (a *memArray) remove(e *element) {
	a.order.Remove(e.node)
	delete(a.index, e.enc)
}

func (a *memArray) Delete(k Key) {
	if e := a.lookup(k); e != nil {
		a.remove(e)
	}
}

func (a *memArray) Clear() {
	a.index = map[string]*element{}
	a.order.Init()
}

func (a *memArray) Len() int { return a.order.Len() }

func (a *memArray) Elements() []*element {
	list := make([]*element, 0, a.order.Len())
	for n := a.order.Front(); n != nil; n = n.Next() {
		list = append(list, n.Value.(*element))
	}
	return list
}

func (a *memArray) Reorder(elems []*element) {
	a.order.Init()
	for _, e := range elems {
		e.node = a.order.PushBack(e)
	}
}
