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
