package bpfrt

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// NewPerCPUArray creates a per-CPU array of n slots of valueSize bytes.
func NewPerCPUArray(name string, valueSize, n uint32) (*ebpf.Map, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: sanitizeName(name), Type: ebpf.PerCPUArray,
		KeySize: 4, ValueSize: valueSize, MaxEntries: n})
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", name, err)
	}
	return m, nil
}

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
