package bpfrt

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// SumPerCPU adds up the uint64 counter at key over every CPU of a per-CPU map.
func SumPerCPU(m *ebpf.Map, key uint32) (uint64, error) {
	var perCPU []uint64
	if err := m.Lookup(key, &perCPU); err != nil {
		return 0, fmt.Errorf("read per-CPU counter %d of %s: %w", key, m, err)
	}
	var sum uint64
	for _, v := range perCPU {
		sum += v
	}
	return sum, nil
}

// LookupValues returns the value of key as one byte slice per value copy:
// one per possible CPU in a per-CPU map, else one. It returns nil, nil
// when the key is absent.
func LookupValues(m *ebpf.Map, key any) ([][]byte, error) {
	raw, err := m.LookupBytes(key)
	if err != nil || raw == nil {
		return nil, err
	}
	size := int(m.ValueSize())
	stride := (size + 7) &^ 7
	if len(raw) <= stride {
		return [][]byte{raw[:size]}, nil
	}
	return appendCopies(make([][]byte, 0, len(raw)/stride), raw, size, stride), nil
}

// appendCopies appends to dst the copies of size bytes of raw, whose
// copies are stride bytes apart.
func appendCopies(dst [][]byte, raw []byte, size, stride int) [][]byte {
	for i := 0; i+stride <= len(raw); i += stride {
		dst = append(dst, raw[i:i+size])
	}
	return dst
}

// firstBatch is how many elements a Drainer asks for per system call at
// first; a hash bucket holding more makes the kernel refuse (ENOSPC), and
// the batch doubles.
const firstBatch = 1024

// A Drainer empties hash maps a batch of elements per system call
// (BPF_MAP_LOOKUP_AND_DELETE_BATCH) instead of a next-key, a lookup and
// a delete per element, or lists them so (BPF_MAP_LOOKUP_BATCH) instead
// of a next-key and a lookup. It keeps its buffers from one call to the
// next: a table drained on every scrape is read into the same memory
// each time.
type Drainer struct {
	keys    [][]byte
	values  [][][]byte
	batches []batchBuffer // one per system call of the largest drain yet
}

// batchBuffer is what one system call of a drain fills.
type batchBuffer struct {
	keys, values []byte
	copies       [][]byte // values cut into value copies
}

// Drain looks up and deletes every element of hash map m and returns
// their keys and value copies (as LookupValues gives them) in the map's
// order, valid until the next Drain. Elements that programs add meanwhile
// may be missed: m should be one no program updates.
func (d *Drainer) Drain(m *ebpf.Map) (keys [][]byte, values [][][]byte, err error) {
	return d.drain(m, min(firstBatch, int(m.MaxEntries())), m.BatchLookupAndDelete)
}

// List returns the keys and value copies of every element of hash map
// m, as Drain does, leaving them in the map. Elements that programs add
// or delete meanwhile may be missed or listed, as by a walk of next-keys;
// none is listed twice.
func (d *Drainer) List(m *ebpf.Map) (keys [][]byte, values [][][]byte, err error) {
	return d.drain(m, min(firstBatch, int(m.MaxEntries())), m.BatchLookup)
}

// batchOp is a batch call of cilium/ebpf's Map.
type batchOp func(cursor *ebpf.MapBatchCursor, keys, values any, opts *ebpf.BatchOptions) (int, error)

// drain reads m with op, asking for batch elements at first.
func (d *Drainer) drain(m *ebpf.Map, batch int, op batchOp) (keys [][]byte, values [][][]byte, err error) {
	keySize, size := int(m.KeySize()), int(m.ValueSize())
	stride, copies := size, 1
	if m.Type() == ebpf.PerCPUHash || m.Type() == ebpf.LRUCPUHash {
		possible, err := ebpf.PossibleCPU()
		if err != nil {
			return nil, nil, err
		}
		stride, copies = (size+7)&^7, possible
	}
	d.keys, d.values = d.keys[:0], d.values[:0]
	var cursor ebpf.MapBatchCursor
	for i := 0; ; i++ {
		b := d.buffer(i, batch*keySize, batch*copies*stride)
		n, err := op(&cursor, sliceOf(b.keys, keySize), sliceOf(b.values, stride), nil)
		b.copies = appendCopies(b.copies[:0], b.values[:n*copies*stride], size, stride)
		for j := range n {
			d.keys = append(d.keys, b.keys[j*keySize:(j+1)*keySize])
			d.values = append(d.values, b.copies[j*copies:(j+1)*copies])
		}
		switch {
		case errors.Is(err, ebpf.ErrKeyNotExist):
			return d.keys, d.values, nil
		case errors.Is(err, unix.ENOSPC) && n == 0:
			batch *= 2
			i-- // the same buffer, larger
		case err != nil:
			return nil, nil, fmt.Errorf("read %s in batches: %w", m, err)
		}
	}
}

// buffer returns the buffer of system call i of a drain, with room for
// keyBytes of keys and valueBytes of values.
func (d *Drainer) buffer(i, keyBytes, valueBytes int) *batchBuffer {
	if i == len(d.batches) {
		d.batches = append(d.batches, batchBuffer{})
	}
	b := &d.batches[i]
	b.keys = resize(b.keys, keyBytes)
	b.values = resize(b.values, valueBytes)
	return b
}

// resize returns buf with length n, in its own memory if it has room.
func resize(buf []byte, n int) []byte {
	if cap(buf) < n {
		return make([]byte, n)
	}
	return buf[:n]
}

// sliceOf is buf seen as a slice of arrays of size bytes: cilium/ebpf's
// batch calls count keys (and a plain map's values) by slice length, and
// fill a slice whose memory is as long as the kernel's output in place.
func sliceOf(buf []byte, size int) any {
	typ := reflect.ArrayOf(size, reflect.TypeFor[byte]())
	return reflect.SliceAt(typ, unsafe.Pointer(unsafe.SliceData(buf)), len(buf)/size).Interface()
}
