package kernelside

import (
	"errors"

	"github.com/bpftap/bpftap/internal/interp"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Wrapping arrays keep the order their keys were added in, in a ring of
// key slots and a count per generation (bpfgen's wrap.go). User space adds
// keys as the programs do: a new key claims the next slot, and one that
// finds the map full first deletes the key the slot holds, the oldest.
// Its claim is a read and a write of the count, not the programs' atomic
// add: a program claiming at the same instant may take the same slot, and
// one of the two keys then leaves the order.

// putInOrder stores value copies under key in a wrapping array's map.
func (g *mapGlobal) putInOrder(key []byte, vs [][]byte) error {
	err := g.update(key, vs, ebpf.UpdateNoExist)
	switch {
	case err == nil:
		return g.claim(key, false)
	case errors.Is(err, ebpf.ErrKeyExist):
		return g.update(key, vs, ebpf.UpdateAny)
	case errors.Is(err, interp.ErrOverflow):
		if err := g.claim(nil, true); err != nil {
			return err
		}
		if err := g.update(key, vs, ebpf.UpdateNoExist); err != nil {
			return err
		}
		return g.claim(key, false)
	}
	return err
}

// claim takes the next slot of the ring (generation 0: only globals
// outside generations are written from user space) and puts key there;
// with evict it deletes the key the slot holds instead and leaves the
// count for the key that takes its place.
func (g *mapGlobal) claim(key []byte, evict bool) error {
	var count uint64
	if err := g.heads.Lookup(uint32(0), &count); err != nil {
		return err
	}
	slot := uint32(count % uint64(g.gl.Spec.MaxEntries))
	if evict {
		oldest, err := g.ring.LookupBytes(slot)
		if err != nil {
			return err
		}
		g.m.Delete(oldest)
		return nil
	}
	if err := g.ring.Update(slot, key, ebpf.UpdateAny); err != nil {
		return err
	}
	return g.heads.Update(uint32(0), count+1, ebpf.UpdateAny)
}

// ringOrder is the order to fold a wrapping array's generation gen's
// drained keys in (as indexes into keys): the order they were added in,
// read from its ring, whose count it then resets. A ring's slot may name
// a key evicted since, or one a later slot names again: the first slot
// counts.
func (g *genGlobal) ringOrder(gen uint32, keys [][]byte) ([]int, error) {
	order := make([]int, 0, len(keys))
	var count uint64
	if err := g.heads.Lookup(gen, &count); err != nil {
		return nil, err
	}
	index := make(map[string]int, len(keys))
	for i, key := range keys {
		index[string(key)] = i
	}
	n := uint64(g.gl.Spec.MaxEntries)
	placed := make([]bool, len(keys))
	for i := count - min(count, n); i < count; i++ {
		key, err := g.ring.LookupBytes(uint32(uint64(gen)*n + i%n))
		if err != nil {
			return nil, err
		}
		if j, ok := index[string(key)]; ok && !placed[j] {
			placed[j] = true
			order = append(order, j)
		}
	}
	for j := range keys {
		if !placed[j] {
			order = append(order, j)
		}
	}
	return order, g.heads.Update(gen, uint64(0), ebpf.UpdateAny)
}

// update stores value copies under key with flags; a full map is
// interp.ErrOverflow.
func (g *mapGlobal) update(key []byte, vs [][]byte, flags ebpf.MapUpdateFlags) error {
	var err error
	if g.gl.PerCPU {
		err = g.m.Update(key, vs, flags)
	} else {
		err = g.m.Update(key, vs[0], flags)
	}
	if errors.Is(err, unix.E2BIG) || errors.Is(err, unix.ENOSPC) {
		return interp.ErrOverflow
	}
	return err
}
