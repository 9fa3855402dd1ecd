package bpfrt

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
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

// EmitLookup emits R0 = bpf_map_lookup_elem(map, R10+keySlot), the key
// stored at stack offset keySlot, then a jump to miss when the element is
// absent (none when miss is ""). mapRef names the map in ProgramSpec.Maps.
// Clobbers R0-R5.
func EmitLookup(mapRef string, keySlot int16, miss string) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapRef),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(keySlot)),
		asm.FnMapLookupElem.Call(),
	}
	if miss != "" {
		insns = append(insns, asm.JEq.Imm(asm.R0, 0, miss))
	}
	return insns
}

// EmitLookupIndex is EmitLookup of element index of an array map: it
// stores the u32 key at keySlot first.
func EmitLookupIndex(mapRef string, keySlot int16, index int32, miss string) asm.Instructions {
	return append(asm.Instructions{asm.StoreImm(asm.R10, keySlot, int64(index), asm.Word)},
		EmitLookup(mapRef, keySlot, miss)...)
}
