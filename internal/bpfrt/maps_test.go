package bpfrt

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"
)

// TestDrainHash fills real hash maps, plain and per-CPU, drains them and
// checks that every element came back once with its values, in batches
// larger and smaller than the map (a batch of 1 meets buckets of two
// keys, which the kernel refuses until the batch grows), and that the
// maps are empty after.
func TestDrainHash(t *testing.T) {
	requireBPF(t)
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		typ     ebpf.MapType
		entries uint32
		batch   int
	}{
		{"hash", ebpf.Hash, 3000, drainBatch},
		{"percpu", ebpf.PerCPUHash, 3000, drainBatch},
		{"percpu-batch-1", ebpf.PerCPUHash, 64, 1},
		{"hash-batch-1", ebpf.Hash, 64, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// 12-byte values: per-CPU copies are padded to 16 in the kernel's output
			m, err := ebpf.NewMap(&ebpf.MapSpec{Type: c.typ, KeySize: 8, ValueSize: 12, MaxEntries: c.entries})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			copies := 1
			if c.typ == ebpf.PerCPUHash {
				copies = cpus
			}
			for k := range uint64(c.entries) {
				vs := make([][]byte, copies)
				for cpu := range vs {
					vs[cpu] = valueOf(k, cpu)
				}
				var v any = vs
				if copies == 1 {
					v = vs[0]
				}
				if err := m.Update(k, v, ebpf.UpdateNoExist); err != nil {
					t.Fatal(err)
				}
			}
			keys, values, err := drainHash(m, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != int(c.entries) || len(values) != len(keys) {
				t.Fatalf("drained %d keys, %d values, want %d", len(keys), len(values), c.entries)
			}
			seen := map[uint64]bool{}
			for i, key := range keys {
				k := binary.NativeEndian.Uint64(key)
				if seen[k] || k >= uint64(c.entries) {
					t.Fatalf("key %d drained twice or never added", k)
				}
				seen[k] = true
				if len(values[i]) != copies {
					t.Fatalf("key %d: %d value copies, want %d", k, len(values[i]), copies)
				}
				for cpu, v := range values[i] {
					if string(v) != string(valueOf(k, cpu)) {
						t.Fatalf("key %d, copy %d: % x, want % x", k, cpu, v, valueOf(k, cpu))
					}
				}
			}
			if next, err := m.NextKeyBytes(nil); err != nil || next != nil {
				t.Errorf("the map still holds %x after the drain (%v)", next, err)
			}
		})
	}
}

// valueOf is the 12-byte value TestDrainHash stores for key k on cpu.
func valueOf(k uint64, cpu int) []byte {
	v := binary.NativeEndian.AppendUint64(nil, k*1000+uint64(cpu))
	return binary.NativeEndian.AppendUint32(v, uint32(^k))
}
