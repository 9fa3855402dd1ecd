package kernel

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestFunctions lists the running kernel's traceable functions and reads
// the prototypes of a few, comparing them with cilium/ebpf's reading of
// the same BTF.
func TestFunctions(t *testing.T) {
	b := kernelOrSkip(t)
	fns, err := Functions()
	if err != nil {
		t.Fatal(err)
	}
	if len(fns) < 1000 {
		t.Fatalf("%d functions", len(fns))
	}
	names := map[string]bool{}
	for _, f := range fns {
		names[f.Name] = true
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"vfs_read", "do_filp_open", "tcp_sendmsg", "schedule"} {
		if !names[name] {
			t.Errorf("%s is not listed", name)
			continue
		}
		proto, err := b.Prototype(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var want *btf.Func
		if err := spec.TypeByName(name, &want); err != nil {
			t.Fatal(err)
		}
		wantParams := want.Type.(*btf.FuncProto).Params
		var got, wanted []string
		for i, p := range proto.Params {
			got = append(got, p.Name+" "+b.TypeName(p.Type))
			wanted = append(wanted, wantParams[i].Name)
		}
		for i, p := range wantParams {
			if i >= len(proto.Params) || proto.Params[i].Name != p.Name {
				t.Errorf("%s: parameters %q, want names %q", name, got, wanted)
				break
			}
		}
		if len(proto.Params) != len(wantParams) {
			t.Errorf("%s: %d parameters, want %d", name, len(proto.Params), len(wantParams))
		}
	}
	if _, err := b.Prototype("no_such_function_here"); err == nil {
		t.Error("a missing function has a prototype")
	}
}

func TestParseFilterFunctions(t *testing.T) {
	fns := ParseFilterFunctions([]byte("vfs_read\nsame\nsame\nnfs_read [nfs]\n\n"))
	var got []string
	for _, f := range fns {
		got = append(got, fmt.Sprintf("%s %v", f, f.Shared))
	}
	if want := []string{"vfs_read false", "same true", "nfs_read [nfs] false"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
