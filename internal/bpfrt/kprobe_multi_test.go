package bpfrt

import (
	"testing"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
)

// TestKprobeMulti attaches one program to vfs_read and vfs_write with one
// link, at their entry (the count argument in rdx) and at their return
// (the bytes read or written in rax), and tells the two apart by the
// attach cookie: the index of the function in Symbols.
func TestKprobeMulti(t *testing.T) {
	for _, c := range []struct {
		kind attach.Kind
		off  int16
	}{{attach.KprobeMulti, regRDX}, {attach.KretprobeMulti, regRAX}} {
		t.Run(c.kind.String(), func(t *testing.T) {
			point := &attach.Point{Kind: c.kind, Symbols: []string{"vfs_read", "vfs_write"}}
			requireKind(t, point)
			const reads, writes = 300, 200
			io := newKernelFunctionIO(t)
			counts := newCountsN(t, 2)
			p := loadAttached(t, &ProgramSpec{Name: "count_io", Attach: point,
				Instructions: countIO(c.off, true), Maps: map[string]*ebpf.Map{"counts": counts}})
			defer p.Close()
			io.run(t, reads, writes)
			if r, w := countOf(t, counts, 0), countOf(t, counts, 1); r != reads || w != writes {
				t.Errorf("counted %d reads and %d writes of %d bytes, the test made %d and %d", r, w, ioSize, reads, writes)
			}
		})
	}
}
