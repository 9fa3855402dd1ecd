package kernel

import (
	"slices"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestEnumerators reads enumerators of the running kernel's BTF by name
// and by type, and checks every constant of the enums cilium/ebpf decodes
// against Enumerator.
func TestEnumerators(t *testing.T) {
	b := kernelOrSkip(t)
	if v := b.Enumerator("PIDTYPE_PGID"); !slices.Equal(v, []int64{2}) {
		t.Errorf("PIDTYPE_PGID = %v; want [2]", v)
	}
	if v := b.Enumerator("PAGE_SHIFT"); len(v) > 0 {
		t.Errorf("PAGE_SHIFT, a macro, found: %v", v)
	}
	id, ok := b.EnumType("enum pid_type")
	if !ok {
		t.Fatal("no enum pid_type")
	}
	list, err := b.Enumerators(id)
	if err != nil || len(list) < 2 || list[0] != (Enumerator{"PIDTYPE_PID", 0}) || list[1] != (Enumerator{"PIDTYPE_TGID", 1}) {
		t.Errorf("enum pid_type: %v, %v", list, err)
	}
	if _, err := b.Enumerators(b.IDsByName("task_struct")[0]); err == nil {
		t.Error("struct task_struct's enumerators: no error")
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	var want *btf.Enum
	if err := spec.TypeByName("pid_type", &want); err != nil {
		t.Fatal(err)
	}
	for _, v := range want.Values {
		if got := b.Enumerator(v.Name); !slices.Equal(got, []int64{int64(v.Value)}) {
			t.Errorf("%s = %v; cilium: %d", v.Name, got, v.Value)
		}
	}
	// a name several enums give (file systems' mount options), with
	// different values on most kernels
	if got, want := b.Enumerator("Opt_uid"), distinctValues(spec, "Opt_uid"); !slices.Equal(got, want) {
		t.Errorf("Opt_uid = %v; cilium: %v", got, want)
	}
}

// distinctValues are the distinct values of the enumerators called name
// in spec, in the order of their types.
func distinctValues(spec *btf.Spec, name string) []int64 {
	var values []int64
	for typ := range spec.All() {
		e, ok := typ.(*btf.Enum)
		if !ok {
			continue
		}
		for _, v := range e.Values {
			if v.Name == name && !slices.Contains(values, int64(v.Value)) {
				values = append(values, int64(v.Value))
			}
		}
	}
	return values
}
