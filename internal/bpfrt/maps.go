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
	return splitCopies(raw, size, stride), nil
}

// splitCopies cuts raw, value copies stride bytes apart, into copies of
// size bytes.
func splitCopies(raw []byte, size, stride int) [][]byte {
	vs := make([][]byte, len(raw)/stride)
	for i := range vs {
		vs[i] = raw[i*stride : i*stride+size]
	}
	return vs
}

// drainBatch is how many elements DrainHash asks for per system call at
// first; a hash bucket holding more makes the kernel refuse (ENOSPC), and
// the batch doubles.
const drainBatch = 1024

// DrainHash looks up and deletes every element of hash map m, a batch of
// elements per system call (BPF_MAP_LOOKUP_AND_DELETE_BATCH) instead of a
// next-key, a lookup and a delete per element, and returns their keys and
// value copies (as LookupValues gives them) in the map's order. Elements
// that programs add meanwhile may be missed: m should be one no program
// updates.
func DrainHash(m *ebpf.Map) (keys [][]byte, values [][][]byte, err error) {
	return drainHash(m, min(drainBatch, int(m.MaxEntries())))
}

// drainHash is DrainHash asking for batch elements at first.
func drainHash(m *ebpf.Map, batch int) (keys [][]byte, values [][][]byte, err error) {
	keySize, size := int(m.KeySize()), int(m.ValueSize())
	stride, copies := size, 1
	if m.Type() == ebpf.PerCPUHash || m.Type() == ebpf.LRUCPUHash {
		possible, err := ebpf.PossibleCPU()
		if err != nil {
			return nil, nil, err
		}
		stride, copies = (size+7)&^7, possible
	}
	var cursor ebpf.MapBatchCursor
	for {
		keyBuf, valueBuf := make([]byte, batch*keySize), make([]byte, batch*copies*stride)
		n, err := m.BatchLookupAndDelete(&cursor, sliceOf(keyBuf, keySize), sliceOf(valueBuf, stride), nil)
		all := splitCopies(valueBuf[:n*copies*stride], size, stride)
		for i := range n {
			keys = append(keys, keyBuf[i*keySize:(i+1)*keySize])
			values = append(values, all[i*copies:(i+1)*copies])
		}
		switch {
		case errors.Is(err, ebpf.ErrKeyNotExist):
			return keys, values, nil
		case errors.Is(err, unix.ENOSPC) && n == 0:
			batch *= 2
		case err != nil:
			return nil, nil, fmt.Errorf("drain %s: %w", m, err)
		}
	}
}

// sliceOf is buf seen as a slice of arrays of size bytes: cilium/ebpf's
// batch calls count keys (and a plain map's values) by slice length, and
// fill a slice whose memory is as long as the kernel's output in place.
func sliceOf(buf []byte, size int) any {
	typ := reflect.ArrayOf(size, reflect.TypeFor[byte]())
	return reflect.SliceAt(typ, unsafe.Pointer(unsafe.SliceData(buf)), len(buf)/size).Interface()
}
