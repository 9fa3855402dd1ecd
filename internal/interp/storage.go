package interp

import (
	"errors"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Global storage.
//
// Every access of the interpreter to a global goes through one of three
// interfaces: Scalar (a long or a string), Statistic (a scalar statistic) and
// Array (an array of longs, strings or statistics). By default globals live in
// memory (insertion-ordered arrays, wrapping, overflow, as stap's runtime).
// A driver that shares a global with kernel probes supplies its own storage
// through Config.Storage, typically over a BPF map. Such an implementation
// must honour this contract:
//
//   - Life: Config.Storage is called once per global by New, which then
//     stores initialisers and -G values through Scalar.Store: the maps exist
//     before New, and kernel probes may run from then on.
//   - Concurrency: calls come from one goroutine at a time (the interpreter
//     serialises its handlers), but kernel probes update the same maps
//     meanwhile. stap's locks make a handler's reads and writes atomic
//     against them; a storage gives that by taking, at a handler's first
//     touch, what the kernel counted into a copy the handler then owns
//     (kernelside's generations), or a read-modify-write (x += 1, a[k]++)
//     is a Load then a Store that may lose kernel updates made in between.
//     An implementation may keep what it learnt of a map during one handler
//     (how its keys group, say) until Config.HandlerStart says that the
//     next one starts.
//   - Values: a long global or element holds Value.Int, a string one
//     Value.Str (at most MAXSTRINGLEN-1 bytes, no NUL byte; a map slot is
//     NUL-padded and read back up to its first NUL). The other field is zero.
//   - Keys: a Key has one Value per index column of the variable (1 to 9, as
//     syntax.Var.Keys gives their types), each a long or a string as above.
//     The interpreter reuses the tuples it passes: an implementation copies a
//     Key it keeps. The interpreter never modifies a Key, Element or
//     format.Stat it is given.
//   - Capacity: an array holds Global.Capacity elements. Set and Add on a
//     new key of a full array return ErrOverflow (the interpreter reports
//     stap's "Array overflow, check ..." near the indexed array). Other
//     errors become run-time errors with their text. Wrapping arrays
//     (`global a%[N]`) evict their oldest element instead, so their storage
//     must know the order elements were added in (kernelside keeps it in a
//     ring of keys beside the map).
//   - Absence: Get reports whether the element exists; `in` is exactly that
//     test. A missing element reads as 0 or "" and is not created by a read.
//     Delete of a missing key does nothing; Clear empties the array; Len
//     counts the keys present.
//   - Statistics: a map-backed statistic keeps one format.Stat partial per
//     CPU (count, sum, min, max, Welford terms, histogram buckets), each
//     shaped as Global.NewStat makes them. Reads combine the partials as the
//     runtime does: Statistic.Total with format.Total(parts...) for a global;
//     Array.Stat and the Stat of Elements by folding an element's partials in
//     CPU order into an empty NewStat() with format.Stat.Merge. A global
//     statistic with no value reads as empty (Count 0); an array element
//     exists when some CPU holds its key.
//   - Per-CPU longs (a global the kernel only updates and user space only
//     reads): Load, Get and Elements return the sum over CPUs; Store and Set
//     write the value to one CPU's slot and zero the others.
//   - Order: Elements returns the elements in a new slice, which the caller
//     may reorder and keep walking while it changes the array; the elements
//     may be copies or live. An array that keeps stap's insertion order (and
//     the order a sorted foreach leaves, which stap keeps until the next
//     sort) implements OrderedArray. Any other array is taken to iterate in
//     hash order, which changes from run to run: the interpreter then walks it
//     in ascending key order (all columns, longs numerically, strings
//     bytewise) in a foreach without sort, and breaks the ties of a sorted
//     foreach the same way, so output is reproducible. (stap's module runtime
//     walks its maps in insertion order, its BPF runtime in the kernel's hash
//     order.) Such an array may implement KeyOrderKeeper, and then walks
//     in key order the next time, which spares that sort.

// Scalar stores a global long or string.
type Scalar interface {
	Load() Value
	Store(Value)
}

// Statistic stores a global statistic (`s <<< v`).
type Statistic interface {
	Add(v int64)
	// Total returns the combined aggregate, which the caller only reads.
	Total() *format.Stat
	// Reset empties the statistic (`delete s`).
	Reset()
}

// Array stores a global array of longs, strings or statistics.
type Array interface {
	// Get returns the value of element k and whether it exists.
	Get(k Key) (Value, bool)
	// Set stores the value of element k, creating it.
	Set(k Key, v Value) error
	// Add records v in the statistic of element k (`a[k] <<< v`), creating it.
	Add(k Key, v int64) error
	// Stat returns the aggregate of element k, or nil if it does not exist.
	Stat(k Key) *format.Stat
	Delete(k Key)
	Clear()
	Len() int
	// Elements returns the elements, in a slice the caller owns.
	Elements() []*Element
}

// OrderedArray is an array that keeps an iteration order: insertion order,
// until Reorder sets another.
type OrderedArray interface {
	Array
	// Reorder makes elems, a permutation of the array's Elements, its order.
	Reorder(elems []*Element)
}

// KeyOrderKeeper is an array without an order of its own (no
// OrderedArray) that can keep the key order the interpreter sorts it in.
type KeyOrderKeeper interface {
	Array
	// KeepKeyOrder makes elems, the array's Elements in key order, the
	// order its next Elements returns, as far as it can.
	KeepKeyOrder(elems []*Element)
}

// Element is one element of an array: its key and its value, or its
// aggregate in an array of statistics.
type Element struct {
	Key   Key
	Value Value
	Stat  *format.Stat
	// in-memory arrays: the element's neighbours in their order, and the
	// encoding of its key, their index
	prev, next *Element
	enc        string
}

// ErrOverflow is the error of Set and Add on a full array.
var ErrOverflow = errors.New("array overflow")

// Storage is the storage of one global: the field matching its kind (array,
// statistic, or scalar) is set.
type Storage struct {
	Scalar    Scalar
	Statistic Statistic
	Array     Array
}

// Global describes a global to the driver's Config.Storage.
type Global struct {
	Var *syntax.Var
	// Capacity is the number of elements an array holds: its declared size,
	// or MAXMAPENTRIES.
	Capacity int64
	// NewStat returns an empty aggregate with the statistic's histogram
	// layout and @variance bit shift, the shape of every partial (nil unless
	// the global holds statistics).
	NewStat func() *format.Stat
}

// describe returns the description of global v.
func (in *Interp) describe(v *syntax.Var) Global {
	g := Global{Var: v, Capacity: in.limits.MaxMapEntries}
	if v.Decl != nil && v.Decl.Size > 0 {
		g.Capacity = v.Decl.Size
	}
	if v.Type == syntax.TypeStats {
		g.NewStat = in.prog.StatShape(v).NewStat
	}
	return g
}

// Folder adds to a global what happened elsewhere: the storage of
// MemoryStorage is one, so that a driver can keep a global in memory and
// fold in the counts that kernel programs made meanwhile (kernelside's
// generations). The key is nil for a scalar or a scalar statistic. A
// folded element is created when absent, even in a full array (it exists
// already where it was counted); a wrapping array evicts its oldest
// element instead.
type Folder interface {
	// Fold adds n to a long, or merges partial p into a statistic (p is
	// nil for a long). It keeps neither k nor p: the caller reuses them.
	Fold(k Key, n int64, p *format.Stat)
}
