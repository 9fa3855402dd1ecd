package kernelside

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
)

// TestArrayContents creates arrays with contents, put in one batch (where
// the kernel has target.BatchMapUpdate) and one element at a time (its
// fallback), and reads every element back: both ways fill the same
// elements with the same bytes, values of fixed-size numbers and of byte
// strings alike, and leave the others zero.
func TestArrayContents(t *testing.T) {
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Skipf("requires bpf: %v", err)
	}
	k, err := target.Running()
	if err != nil {
		t.Fatal(err)
	}
	batch := k.Has(target.BatchMapUpdate)
	if !batch {
		t.Logf("this kernel (Linux %s) lacks batch updates: only the fallback is tested", k.Release)
	}
	texts := &ebpf.MapSpec{Name: "texts", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 300}
	numbers := &ebpf.MapSpec{Name: "numbers", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 300}
	for i := uint32(0); i < 300; i += 3 { // every third element: the others stay zero
		v := make([]byte, 8)
		copy(v, fmt.Sprintf("e%d", i))
		texts.Contents = append(texts.Contents, ebpf.MapKV{Key: i, Value: v})
		numbers.Contents = append(numbers.Contents, ebpf.MapKV{Key: i, Value: i*7 + 1})
	}
	defs := []bpfgen.Map{{Ref: "texts", Spec: texts}, {Ref: "numbers", Spec: numbers}}
	for _, batched := range []bool{false, batch} {
		t.Run(fmt.Sprintf("batch=%v", batched), func(t *testing.T) {
			o, err := createMaps(defs, "bpftap_test_", nil, batched)
			if err != nil {
				t.Fatal(err)
			}
			defer o.close()
			for i := uint32(0); i < 300; i++ {
				var text []byte
				var number uint32
				if err := o.shared["texts"].Lookup(i, &text); err != nil {
					t.Fatal(err)
				}
				if err := o.shared["numbers"].Lookup(i, &number); err != nil {
					t.Fatal(err)
				}
				wantText, wantNumber := make([]byte, 8), uint32(0)
				if i%3 == 0 {
					copy(wantText, fmt.Sprintf("e%d", i))
					wantNumber = i*7 + 1
				}
				if !bytes.Equal(text, wantText) || number != wantNumber {
					t.Fatalf("element %d: %q and %d, want %q and %d", i, text, number, wantText, wantNumber)
				}
			}
		})
	}
}
