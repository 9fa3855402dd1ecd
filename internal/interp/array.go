package interp

import (
	"container/list"
	"encoding/binary"
	"strings"

	"github.com/bpftap/bpftap/internal/format"
)

// value is a script value: a long or a string (the type decides which field
// is meaningful).
type value struct {
	i int64
	s string
}

// key is the tuple of keys of an array element.
type key []value

// element is one element of an array: its keys and its value (a long or a
// string), or its statistic for arrays of statistics.
type element struct {
	key  key
	val  value
	stat *format.Stat
	node *list.Element
}

// Array is the storage of a global array. The in-memory implementation keeps
// stap's element list; a later storage (BPF maps shared with kernel probes)
// implements the same operations.
type Array interface {
	// Get returns the element with key k, or nil.
	Get(k key) *element
	// Put returns the element with key k, creating it when absent; it fails
	// when the array is full and does not wrap.
	Put(k key) (*element, bool)
	Delete(k key)
	Clear()
	Len() int
	// Elements returns the elements in iteration order.
	Elements() []*element
	// Reorder makes the given permutation of Elements the iteration order.
	Reorder([]*element)
}

// memArray is an in-memory array: a hash index over a list in insertion order.
type memArray struct {
	index    map[string]*element
	order    *list.List
	capacity int
	wrap     bool
	newStat  func() *format.Stat // nil unless the array holds statistics
}

func newMemArray(capacity int, wrap bool, newStat func() *format.Stat) *memArray {
	return &memArray{index: map[string]*element{}, order: list.New(), capacity: capacity, wrap: wrap, newStat: newStat}
}

// encode makes a map key of a tuple; strings are length-prefixed so that
// tuples never collide.
func (k key) encode() string {
	var b strings.Builder
	var buf [binary.MaxVarintLen64]byte
	for _, v := range k {
		n := binary.PutVarint(buf[:], v.i)
		b.Write(buf[:n])
		n = binary.PutUvarint(buf[:], uint64(len(v.s)))
		b.Write(buf[:n])
		b.WriteString(v.s)
	}
	return b.String()
}

func (a *memArray) Get(k key) *element { return a.index[k.encode()] }

func (a *memArray) Put(k key) (*element, bool) {
	enc := k.encode()
	if e := a.index[enc]; e != nil {
		return e, true
	}
	if a.order.Len() >= a.capacity {
		if !a.wrap || a.order.Len() == 0 {
			return nil, false
		}
		a.remove(a.order.Front().Value.(*element))
	}
	e := &element{key: append(key(nil), k...)}
	if a.newStat != nil {
		e.stat = a.newStat()
	}
	e.node = a.order.PushBack(e)
	a.index[enc] = e
	return e, true
}

func (a *memArray) remove(e *element) {
	a.order.Remove(e.node)
	delete(a.index, e.key.encode())
}

func (a *memArray) Delete(k key) {
	if e := a.index[k.encode()]; e != nil {
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
