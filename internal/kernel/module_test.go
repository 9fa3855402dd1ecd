package kernel

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"
)

// loadedModules returns the modules whose BTF the kernel publishes,
// binfmt_misc first (the guests load it, and bpfrt's tests probe it);
// the test skips, saying so, when there are none.
func loadedModules(t *testing.T) []string {
	t.Helper()
	kernelOrSkip(t)
	entries, err := os.ReadDir(btfDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != "vmlinux" {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Skipf("skipped: no module with BTF is loaded (%s has only vmlinux); the guest kernels load binfmt_misc", btfDir)
	}
	slices.SortStableFunc(names, func(a, b string) int {
		switch {
		case a == "binfmt_misc":
			return -1
		case b == "binfmt_misc":
			return 1
		}
		return strings.Compare(a, b)
	})
	return names[:min(len(names), 5)]
}

// TestModule reads the BTF of loaded modules and checks every type of each
// against cilium/ebpf's reading of the same split BTF: IDs, kinds, names,
// members with their offsets and types, prototypes; and that the names
// and member chains a probe on the module's functions needs resolve.
func TestModule(t *testing.T) {
	k := kernelOrSkip(t)
	for _, name := range loadedModules(t) {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			m, err := Module(name)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: types %d to %d, %d functions, read in %v", name, m.FirstID(), m.NumTypes()-1, len(m.Funcs()), time.Since(start))
			if again, _ := Module(name); again != m {
				t.Error("Module did not cache")
			}
			if m.Base() != k || m.FirstID() != TypeID(k.NumTypes()) {
				t.Fatalf("base %p (kernel %p), first ID %d, want %d", m.Base(), k, m.FirstID(), k.NumTypes())
			}
			spec, err := btf.LoadKernelModuleSpec(name)
			if err != nil {
				t.Fatal(err)
			}
			for id := m.FirstID(); int(id) < m.NumTypes(); id++ {
				checkModuleType(t, m, spec, id)
			}
			checkModuleFuncs(t, m, spec)
			checkModuleLookups(t, k, m)
			checkModuleHandle(t, m)
		})
	}
}

// checkModuleType compares type id, its members and parameters with
// cilium's.
func checkModuleType(t *testing.T, m *BTF, spec *btf.Spec, id TypeID) {
	got, err := m.Type(id)
	if err != nil {
		t.Fatal(err)
	}
	want, err := spec.TypeByID(btf.TypeID(id))
	if err != nil {
		t.Fatalf("cilium: type %d: %v", id, err)
	}
	if kind, name := ciliumKind(want); !slices.Contains(kind, got.Kind) || got.Name != name {
		t.Fatalf("type %d: %s %q, cilium %T %q", id, got.Kind, got.Name, want, name)
	}
	typeID := func(typ btf.Type) TypeID {
		id, err := spec.TypeID(typ)
		if err != nil {
			t.Fatal(err)
		}
		return TypeID(id)
	}
	var members []btf.Member
	switch w := want.(type) {
	case *btf.Struct:
		members = w.Members
	case *btf.Union:
		members = w.Members
	case *btf.FuncProto:
		if len(got.Params) != len(w.Params) || got.Target != typeID(w.Return) {
			t.Fatalf("prototype %d: %d parameters returning %d, cilium %d returning %s", id, len(got.Params), got.Target, len(w.Params), w.Return)
		}
		for i, p := range w.Params {
			if got.Params[i].Name != p.Name || got.Params[i].Type != typeID(p.Type) {
				t.Errorf("prototype %d: parameter %d is %+v, cilium %q of type %d", id, i, got.Params[i], p.Name, typeID(p.Type))
			}
		}
	case *btf.Func:
		if got.Target != typeID(w.Type) || got.Linkage != uint16(w.Linkage) {
			t.Errorf("function %s: prototype %d linkage %d, cilium %d %d", got.Name, got.Target, got.Linkage, typeID(w.Type), w.Linkage)
		}
	}
	if len(got.Members) != len(members) {
		t.Fatalf("%s: %d members, cilium %d", m.TypeName(id), len(got.Members), len(members))
	}
	for i, w := range members {
		g := got.Members[i]
		if g.Name != w.Name || g.BitOffset != uint32(w.Offset) || g.BitSize != uint32(w.BitfieldSize) || g.Type != typeID(w.Type) {
			t.Errorf("%s: member %d is %+v, cilium %q at bit %d (%d bits) of type %d",
				m.TypeName(id), i, g, w.Name, w.Offset, w.BitfieldSize, typeID(w.Type))
			continue
		}
		// A chain from a pointer to the struct reaches a named member at
		// its byte offset.
		if w.Name == "" || w.BitfieldSize != 0 || w.Offset%8 != 0 || got.Kind != KindStruct {
			continue
		}
		p, err := m.ResolvePointee(id, []Step{{Member: w.Name}})
		if err != nil {
			if strings.Contains(err.Error(), "cannot read a value") {
				continue // a function pointer or other unreadable member
			}
			t.Errorf("%s->%s: %v", m.TypeName(id), w.Name, err)
		} else if p.Offsets[0] != int64(w.Offset.Bytes()) || p.Type != g.Type {
			t.Errorf("%s->%s: at %d of type %d, cilium at %d", m.TypeName(id), w.Name, p.Offsets[0], p.Type, w.Offset.Bytes())
		}
	}
}

// ciliumKind returns the BTF kinds a cilium type may stand for, and its name.
func ciliumKind(typ btf.Type) ([]Kind, string) {
	switch typ.(type) {
	case *btf.Int:
		return []Kind{KindInt}, typ.TypeName()
	case *btf.Pointer:
		return []Kind{KindPtr}, ""
	case *btf.Array:
		return []Kind{KindArray}, ""
	case *btf.Struct:
		return []Kind{KindStruct}, typ.TypeName()
	case *btf.Union:
		return []Kind{KindUnion}, typ.TypeName()
	case *btf.Enum:
		return []Kind{KindEnum, KindEnum64}, typ.TypeName()
	case *btf.Fwd:
		return []Kind{KindFwd}, typ.TypeName()
	case *btf.Typedef:
		return []Kind{KindTypedef}, typ.TypeName()
	case *btf.Volatile:
		return []Kind{KindVolatile}, ""
	case *btf.Const:
		return []Kind{KindConst}, ""
	case *btf.Restrict:
		return []Kind{KindRestrict}, ""
	case *btf.Func:
		return []Kind{KindFunc}, typ.TypeName()
	case *btf.FuncProto:
		return []Kind{KindFuncProto}, ""
	case *btf.Var:
		return []Kind{KindVar}, typ.TypeName()
	case *btf.Datasec:
		return []Kind{KindDatasec}, typ.TypeName()
	case *btf.Float:
		return []Kind{KindFloat}, typ.TypeName()
	case *btf.TypeTag:
		return []Kind{KindTypeTag}, typ.TypeName()
	}
	return []Kind{KindDeclTag}, typ.TypeName() // cilium's declTag is unexported
}

// checkModuleFuncs checks that Funcs lists exactly the module's own
// functions, and each Prototype against cilium's.
func checkModuleFuncs(t *testing.T, m *BTF, spec *btf.Spec) {
	want := map[string]TypeID{}
	for typ, err := range spec.All() {
		if err != nil {
			t.Fatal(err)
		}
		if fn, ok := typ.(*btf.Func); ok {
			id, _ := spec.TypeID(fn)
			want[fn.Name] = TypeID(id)
		}
	}
	if len(want) == 0 {
		t.Fatal("cilium sees no function in the module")
	}
	base, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	funcs := m.Funcs()
	if len(funcs) != len(want) {
		t.Errorf("%d functions, cilium %d", len(funcs), len(want))
	}
	for name, id := range want {
		if funcs[name] != id {
			t.Errorf("function %s: ID %d, cilium %d", name, funcs[name], id)
			continue
		}
		proto, err := m.Prototype(name)
		if err != nil {
			t.Fatal(err)
		}
		// The prototype by its ID. A module's function often has a
		// prototype of the kernel's (file_operations' read), which the
		// split spec returns as a copy whose types it cannot number: the
		// kernel's spec numbers them.
		fn, err := spec.TypeByID(btf.TypeID(id))
		if err != nil {
			t.Fatal(err)
		}
		protoID, err := spec.TypeID(fn.(*btf.Func).Type)
		if err != nil {
			t.Fatal(err)
		}
		typ, err := spec.TypeByID(protoID)
		if err != nil {
			t.Fatal(err)
		}
		if protoID < btf.TypeID(m.FirstID()) {
			typ, err = base.TypeByID(protoID)
			if err != nil {
				t.Fatal(err)
			}
		}
		params := typ.(*btf.FuncProto).Params
		if n := len(params); n > 0 && params[n-1].Type == (*btf.Void)(nil) {
			params = params[:n-1]
		}
		if proto.Func != id || len(proto.Params) != len(params) {
			t.Fatalf("%s: %+v, cilium %d with %d parameters", name, proto, id, len(params))
		}
		for i, p := range params {
			pid, err := spec.TypeID(p.Type)
			if protoID < btf.TypeID(m.FirstID()) {
				pid, err = base.TypeID(p.Type)
			}
			if err != nil {
				t.Fatalf("%s: parameter %d: cilium: %v", name, i, err)
			}
			if got := proto.Params[i]; (got.Name != p.Name && p.Name != "") || got.Type != TypeID(pid) {
				t.Errorf("%s: parameter %d is %s %s, cilium %s (type %d)", name, i, got.Name, m.TypeName(got.Type), p.Name, pid)
			}
		}
		if ids := m.IDsByName(name); !slices.Contains(ids, id) {
			t.Errorf("IDsByName(%s) = %v, lacks %d", name, ids, id)
		}
		if fn, err := m.TypeByName(name, KindFunc); err != nil || fn.ID != id {
			t.Errorf("TypeByName(%s) = %v, %v; want ID %d", name, fn, err, id)
		}
	}
}

// checkModuleLookups checks that a module's BTF finds the kernel's types
// too, and not the kernel's functions.
func checkModuleLookups(t *testing.T, k, m *BTF) {
	task, err := k.TypeByName("task_struct", KindStruct)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.TypeByName("task_struct", KindStruct); err != nil || got != task {
		t.Errorf("TypeByName(task_struct) in the module = %v, %v; want the kernel's %d", got, err, task.ID)
	}
	want, _ := k.ResolveIn("task_struct", []Step{{Member: "real_parent"}, {Member: "comm"}})
	got, err := m.ResolveIn("task_struct", []Step{{Member: "real_parent"}, {Member: "comm"}})
	if err != nil || !slices.Equal(got.Offsets, want.Offsets) || got.Kind != ValueString {
		t.Errorf("task_struct->real_parent->comm in the module: %+v, %v; the kernel's %+v", got, err, want)
	}
	if _, err := m.Prototype("vfs_read"); err == nil {
		t.Error("a module's BTF gives the prototype of the kernel's vfs_read")
	}
	if names := m.NamesWithPrefix("btf_trace_sched_"); len(names["btf_trace_sched_switch"]) == 0 {
		t.Error("NamesWithPrefix in a module misses the kernel's btf_trace_sched_switch")
	}
	for name, id := range m.Funcs() {
		prefix := name[:min(len(name), 4)]
		if ids := m.NamesWithPrefix(prefix)[name]; !slices.Contains(ids, id) {
			t.Errorf("NamesWithPrefix(%q)[%s] = %v, lacks %d", prefix, name, ids, id)
		}
		break
	}
	if m.ModuleName() == "binfmt_misc" {
		checkBinfmtMisc(t, k, m)
	}
}

// checkBinfmtMisc reads the parameter of binfmt_misc's load_misc_binary
// (a struct linux_binprm *, a kernel type) and a member chain from it.
func checkBinfmtMisc(t *testing.T, k, m *BTF) {
	proto, err := m.Prototype("load_misc_binary")
	if err != nil {
		t.Fatal(err)
	}
	if len(proto.Params) != 1 || proto.Params[0].Name != "bprm" || m.TypeName(proto.Params[0].Type) != "struct linux_binprm*" ||
		m.TypeName(proto.Return) != "int" {
		t.Fatalf("load_misc_binary: %+v", proto)
	}
	p, err := m.Resolve(proto.Params[0].Type, []Step{{Member: "file"}, {Member: "f_path"}, {Member: "dentry"}})
	if err != nil {
		t.Fatal(err)
	}
	binprm, _ := k.TypeByName("linux_binprm", KindStruct)
	want, _ := k.ResolvePointee(binprm.ID, []Step{{Member: "file"}, {Member: "f_path"}, {Member: "dentry"}})
	if !slices.Equal(p.Offsets, want.Offsets) || p.Type != want.Type {
		t.Errorf("$bprm->file->f_path->dentry: %+v, want %+v", p, want)
	}
}

// TestModuleErrors: a module that is not loaded, or that is built in, says
// so; names that are not a module's are refused.
func TestModuleErrors(t *testing.T) {
	kernelOrSkip(t)
	_, err := Module("no_such_module_here")
	if !errors.Is(err, ErrModuleNotLoaded) || !strings.Contains(err.Error(), "module no_such_module_here is not loaded") {
		t.Errorf("a missing module: %v", err)
	}
	for _, name := range []string{"", "vmlinux", "..", "../vmlinux", "a/b"} {
		if _, err := Module(name); err == nil {
			t.Errorf("Module(%q) succeeded", name)
		}
	}
	// A built-in module with parameters has a /sys/module directory and no BTF of its own.
	if _, err := os.Stat(moduleDir + "printk/parameters"); err != nil {
		t.Skipf("skipped the built-in case: %v", err)
	}
	_, err = Module("printk")
	if !errors.Is(err, ErrNoModuleBTF) || !strings.Contains(err.Error(), "built into the kernel") {
		t.Errorf("a built-in module: %v", err)
	}
}

// checkModuleHandle checks the IDs against the kernel's BTF object of the
// module, which bpfrt's fentry finds with btf.FindHandle and names by fd
// beside the function's ID (attach_btf_obj_fd, attach_btf_id).
func checkModuleHandle(t *testing.T, m *BTF) {
	h, err := btf.FindHandle(func(info *btf.HandleInfo) bool { return info.IsModule() && info.Name == m.ModuleName() })
	if err != nil {
		t.Fatalf("the module's BTF object: %v", err)
	}
	defer h.Close()
	base, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := h.Spec(base)
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range m.Funcs() {
		typ, err := spec.TypeByID(btf.TypeID(id))
		if fn, ok := typ.(*btf.Func); err != nil || !ok || fn.Name != name {
			t.Errorf("ID %d (%s) is %v (%v) in the module's BTF object", id, name, typ, err)
		}
	}
}
