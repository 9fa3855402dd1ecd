package bpfrt

import (
	"testing"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf/btf"
)

// TestFentry counts the test's own reads through vfs_read with BPF
// trampolines: at its entry (args[2], the count) and at its exit (the
// word after the last argument, the bytes read).
func TestFentry(t *testing.T) {
	id, nargs := kernelFunc(t, "vfs_read")
	t.Run("fentry", func(t *testing.T) {
		testCountReads(t, &attach.Point{Kind: attach.Fentry, Event: "vfs_read", BTFID: id}, 8*2)
	})
	t.Run("fexit", func(t *testing.T) {
		testCountReads(t, &attach.Point{Kind: attach.Fexit, Event: "vfs_read", BTFID: id}, int16(8*nargs))
	})
}

// TestFentryModule puts a trampoline on a module's function, named by its
// id in the module's BTF.
func TestFentryModule(t *testing.T) {
	id, _ := kernelFunc(t, "vfs_read")
	requireKind(t, &attach.Point{Kind: attach.Fentry, Event: "vfs_read", BTFID: id})
	requireModule(t, binfmtMisc.Module)
	point := binfmtMisc
	point.Kind = attach.Fentry
	point.BTFID = moduleFunc(t, point.Module, point.Event)
	if err := CanAttach(&point); err != nil {
		t.Fatal(err)
	}
	testCountExecs(t, &point)
}

// moduleFunc returns the id of module's function name in the module's BTF
// (which continues vmlinux's numbering).
func moduleFunc(t testing.TB, module, name string) kernel.TypeID {
	t.Helper()
	spec, err := btf.LoadKernelModuleSpec(module)
	if err != nil {
		t.Fatal(err)
	}
	var fn *btf.Func
	if err := spec.TypeByName(name, &fn); err != nil {
		t.Fatal(err)
	}
	id, err := spec.TypeID(fn)
	if err != nil {
		t.Fatal(err)
	}
	return kernel.TypeID(id)
}
