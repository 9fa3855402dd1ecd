package kernel

import (
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestBitfieldsAgainstCilium resolves every named bitfield of a few
// structs that scripts read (task_struct's in_iowait, sk_buff's flags) and
// checks its first bit and width against cilium/ebpf's decoding, and that
// the bytes the path loads hold all its bits.
func TestBitfieldsAgainstCilium(t *testing.T) {
	b := kernelOrSkip(t)
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, name := range []string{"task_struct", "sk_buff", "sched_dl_entity"} {
		var s *btf.Struct
		if err := spec.TypeByName(name, &s); err != nil {
			t.Fatal(err)
		}
		id, _ := spec.TypeID(s)
		ptr := b.pointerTo(t, TypeID(id))
		for _, m := range s.Members {
			if m.BitfieldSize == 0 || m.Name == "" {
				continue
			}
			seen++
			p, err := b.Resolve(ptr, []Step{{Member: m.Name}})
			if err != nil {
				t.Errorf("%s.%s: %v", name, m.Name, err)
				continue
			}
			first := uint32(p.Offsets[0])*8 + uint32(p.BitShift)
			if first != uint32(m.Offset) || uint32(p.BitSize) != uint32(m.BitfieldSize) {
				t.Errorf("%s.%s: bits %d+%d, cilium says %d+%d", name, m.Name, first, p.BitSize, m.Offset, m.BitfieldSize)
			}
			if uint32(p.BitShift)+uint32(p.BitSize) > p.Size*8 || p.Kind != ValueInt {
				t.Errorf("%s.%s: %d bits from bit %d do not fit the %d bytes read", name, m.Name, p.BitSize, p.BitShift, p.Size)
			}
		}
	}
	if seen < 5 {
		t.Fatalf("only %d bitfields found", seen)
	}
}

// TestBitfieldValue extracts fields from loaded bytes: the bits above
// BitShift, BitSize of them, sign-extended for a signed field.
func TestBitfieldValue(t *testing.T) {
	for _, c := range []struct {
		shift, size uint8
		signed      bool
		loaded      uint64
		want        int64
	}{
		{0, 1, false, 0b1, 1},
		{3, 1, false, 0b1000, 1},
		{3, 1, false, 0b0111, 0},
		{2, 3, false, 0b11100, 7},
		{2, 3, true, 0b11100, -1},
		{2, 3, true, 0b01100, 3},
		{4, 12, true, 0x8000, -2048},
		{6, 58, false, 0xffffffffffffffc0, 1<<58 - 1},
	} {
		p := &Path{BitShift: c.shift, BitSize: c.size, Signed: c.signed}
		if got := p.Bitfield(c.loaded); got != c.want {
			t.Errorf("%d bits from %d (signed %v) of %#x: %d, want %d", c.size, c.shift, c.signed, c.loaded, got, c.want)
		}
	}
}
