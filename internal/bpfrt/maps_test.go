package bpfrt

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"
)

// TestDrainer fills real hash maps, plain and per-CPU, lists them, then
// drains them, and checks that every element came back once with its
// values each time, in batches larger and smaller than the map (a batch
// of 1 meets buckets of two keys, which the kernel refuses until the
// batch grows), and that the maps are full after the list and empty
// after the drain; twice, the second time in the first's buffers.
func TestDrainer(t *testing.T) {
	requireBPF(t)
	cases := []struct {
		name    string
		typ     ebpf.MapType
		entries uint32
		batch   int
	}{
		{"hash", ebpf.Hash, 3000, firstBatch},
		{"percpu", ebpf.PerCPUHash, 3000, firstBatch},
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
			var d Drainer
			for round := range uint64(2) {
				copies := fillHash(t, m, round)
				keys, values, err := d.drain(m, c.batch, m.BatchLookup)
				if err != nil {
					t.Fatal(err)
				}
				checkDrained(t, keys, values, int(c.entries), copies, round)
				if next, err := m.NextKeyBytes(nil); err != nil || next == nil {
					t.Fatalf("the list emptied the map (%v)", err)
				}
				keys, values, err = d.drain(m, c.batch, m.BatchLookupAndDelete)
				if err != nil {
					t.Fatal(err)
				}
				checkDrained(t, keys, values, int(c.entries), copies, round)
				if next, err := m.NextKeyBytes(nil); err != nil || next != nil {
					t.Fatalf("the map still holds %x after the drain (%v)", next, err)
				}
			}
		})
	}
}

// fillHash fills m with keys 0 to MaxEntries-1, the copies of each
// valueOf(key+round), and returns how many copies a value has.
func fillHash(t *testing.T, m *ebpf.Map, round uint64) int {
	copies := 1
	if m.Type() == ebpf.PerCPUHash {
		cpus, err := ebpf.PossibleCPU()
		if err != nil {
			t.Fatal(err)
		}
		copies = cpus
	}
	for k := range uint64(m.MaxEntries()) {
		vs := make([][]byte, copies)
		for cpu := range vs {
			vs[cpu] = valueOf(k+round, cpu)
		}
		var v any = vs
		if copies == 1 {
			v = vs[0]
		}
		if err := m.Update(k, v, ebpf.UpdateNoExist); err != nil {
			t.Fatal(err)
		}
	}
	return copies
}

// checkDrained checks that a drain returned keys 0 to n-1 once each, with
// the values fillHash stored.
func checkDrained(t *testing.T, keys [][]byte, values [][][]byte, n, copies int, round uint64) {
	t.Helper()
	if len(keys) != n || len(values) != n {
		t.Fatalf("round %d: drained %d keys, %d values, want %d", round, len(keys), len(values), n)
	}
	seen := map[uint64]bool{}
	for i, key := range keys {
		k := binary.NativeEndian.Uint64(key)
		if seen[k] || k >= uint64(n) {
			t.Fatalf("round %d: key %d drained twice or never added", round, k)
		}
		seen[k] = true
		if len(values[i]) != copies {
			t.Fatalf("round %d: key %d: %d value copies, want %d", round, k, len(values[i]), copies)
		}
		for cpu, v := range values[i] {
			if want := valueOf(k+round, cpu); string(v) != string(want) {
				t.Fatalf("round %d: key %d, copy %d: % x, want % x", round, k, cpu, v, want)
			}
		}
	}
}

// valueOf is the 12-byte value fillHash stores for key k on cpu.
func valueOf(k uint64, cpu int) []byte {
	v := binary.NativeEndian.AppendUint64(nil, k*1000+uint64(cpu))
	return binary.NativeEndian.AppendUint32(v, uint32(^k))
}
