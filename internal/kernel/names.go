package kernel

import (
	"hash/maphash"
	"math/bits"
	"slices"
)

// Looking types up by name: the string table is searched for a name in
// 1-3 ms (2.3 MB of vmlinux's strings, where "task_struct" begins
// thousands of longer names), and a syscall.* script looks up 350 names
// (each alias's tracepoint prototype and iterator). So on the first
// lookup the blob's named types are put in a hash table keyed by their
// names' bytes (one pass over the 75,000 names, ~2 ms for vmlinux, 512
// KiB), and each lookup then reads a few slots.

// nameIndex is an open-addressing table with linear probing: a slot
// holds 1 + the index of a named type among the blob's own records, 0
// when empty. Types sharing a name each have a slot.
type nameIndex struct {
	seed  maphash.Seed
	slots []uint32
}

// indexNames builds b's nameIndex.
func (b *BTF) indexNames() nameIndex {
	named := 0
	for _, off := range b.names {
		if off != 0 {
			named++
		}
	}
	size := 1 << bits.Len(uint(named+named/2)) // a power of two, at most 3/4 full
	ix := nameIndex{seed: maphash.MakeSeed(), slots: make([]uint32, size)}
	mask := uint64(size - 1)
	for i, off := range b.names {
		if off == 0 {
			continue
		}
		h := maphash.Bytes(ix.seed, b.strBytes(off)) & mask
		for ix.slots[h] != 0 {
			h = (h + 1) & mask
		}
		ix.slots[h] = uint32(i) + 1
	}
	return ix
}

// lookup returns the IDs of b's own types called name, ascending.
func (ix nameIndex) lookup(b *BTF, name string) []TypeID {
	if name == "" || len(ix.slots) == 0 {
		return nil
	}
	var ids []TypeID
	mask := uint64(len(ix.slots) - 1)
	for h := maphash.String(ix.seed, name) & mask; ix.slots[h] != 0; h = (h + 1) & mask {
		i := ix.slots[h] - 1
		if string(b.strBytes(b.names[i])) == name {
			ids = append(ids, b.first+TypeID(i))
		}
	}
	slices.Sort(ids)
	return ids
}
