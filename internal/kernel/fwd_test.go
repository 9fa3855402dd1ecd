package kernel

import (
	"slices"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestDeclarationCompleted follows a member chain through a pointer to a
// forward declaration (the kernel's struct rpc_clnt points to struct
// rpc_iostats, which sunrpc's BTF defines): the definition of that name
// in the same BTF gives the member; a declaration with no definition
// still says it has only the declaration.
func TestDeclarationCompleted(t *testing.T) {
	u32 := &btf.Int{Name: "u32", Size: 4}
	def := &btf.Struct{Name: "iostats", Size: 16, Members: []btf.Member{
		{Name: "om_lock", Type: u32, Offset: 0}, {Name: "om_ops", Type: &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}, Offset: 64}}}
	clnt := &btf.Struct{Name: "clnt", Size: 16, Members: []btf.Member{
		{Name: "cl_metrics", Type: &btf.Pointer{Target: &btf.Fwd{Name: "iostats", Kind: btf.FwdStruct}}, Offset: 0},
		{Name: "cl_other", Type: &btf.Pointer{Target: &btf.Fwd{Name: "nowhere", Kind: btf.FwdStruct}}, Offset: 64}}}
	builder, err := btf.NewBuilder([]btf.Type{clnt, def}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := builder.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.ResolveIn("clnt", []Step{{Member: "cl_metrics"}, {Member: "om_ops"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Offsets, []int64{0, 8}) || p.Size != 8 || !p.Signed {
		t.Errorf("clnt->cl_metrics->om_ops: offsets %v, size %d, signed %v; want [0 8], 8, true", p.Offsets, p.Size, p.Signed)
	}
	const want = "cannot access member 'x' of struct nowhere: the kernel's BTF has only its declaration"
	if _, err := b.ResolveIn("clnt", []Step{{Member: "cl_other"}, {Member: "x"}}); err == nil || err.Error() != want {
		t.Errorf("clnt->cl_other->x: error %v, want %q", err, want)
	}
}
