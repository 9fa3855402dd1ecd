package bpfrt

import (
	"fmt"

	"github.com/cilium/ebpf"
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
	vs := make([][]byte, len(raw)/stride)
	for i := range vs {
		vs[i] = raw[i*stride : i*stride+size]
	}
	return vs, nil
}
