package debuginfo_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/debuginfo"
)

// TestModuleLayout reads a relocatable object as a kernel module's debug
// file is one: gcc -c's, setup in .init.text and handle in .text, each at
// its section's offset 0, with .debug_frame as the kernel builds it (no
// unwind tables). Once placed, the two functions, their lines, their
// parameters' location lists, the call frame information and the globals
// are each at an address of their own, and a global's section and offset
// are those of the object.
func TestModuleLayout(t *testing.T) {
	path := buildFrom(t, t.TempDir(), "module.o", "module.c", "-c", "-g", "-O2", "-fno-asynchronous-unwind-tables")
	f, err := debuginfo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	setup, handle := f.FunctionSymbols("setup"), f.FunctionSymbols("handle")
	if len(setup) != 1 || len(handle) != 1 || setup[0] == handle[0] || setup[0] == 0 || handle[0] == 0 {
		t.Fatalf("FunctionSymbols: setup %#x, handle %#x: want one address each, apart", setup, handle)
	}
	for name, entry := range map[string]uint64{"setup": setup[0], "handle": handle[0]} {
		at, host, err := f.EntryContaining(entry)
		if err != nil || at != entry || host != name {
			t.Errorf("EntryContaining(%s at %#x) = %#x %s, %v", name, entry, at, host, err)
		}
		if sec, off, ok := f.SectionAt(entry); !ok || off != 0 || sec != map[string]string{"setup": ".init.text", "handle": ".text"}[name] {
			t.Errorf("SectionAt(%s) = %s+%#x, %v", name, sec, off, ok)
		}
		if _, err := f.FunctionAt(entry); err != nil {
			t.Errorf("FunctionAt(%s): %v", name, err)
		}
	}
	decls, err := f.Declared("module.c", 0)
	if err != nil || decls[setup[0]].Name != "setup" || decls[handle[0]].Name != "handle" {
		t.Errorf("Declared(module.c) = %v, %v", decls, err)
	}
	lines, err := f.LinesNear(handle[0], "module.c", 15, 15) // hits += n
	if err != nil || len(lines) == 0 {
		t.Fatalf("LinesNear(handle, module.c:15) = %v, %v", lines, err)
	}
	for _, l := range lines {
		if _, host, err := f.EntryContaining(l.Addr); err != nil || host != "handle" {
			t.Errorf("line 15 at %#x: in %s, %v; want handle", l.Addr, host, err)
		}
	}
	fn, err := f.FunctionAt(handle[0])
	if err != nil || len(fn.Params) != 2 {
		t.Fatalf("handle: %+v, %v", fn, err)
	}
	for _, p := range fn.Params { // in registers at the entry
		if loc, err := fn.Locate(p, handle[0]); err != nil || loc.Kind != debuginfo.Value || loc.Reg < 0 {
			t.Errorf("$%s at handle's entry: %+v, %v; want a register", p.Name, loc, err)
		}
	}
	// x86-64's call pushed the return address; arm64's left it in x30
	want := map[string]int64{"amd64": 8, "arm64": 0}[runtime.GOARCH]
	if cfa, err := fn.FrameAddress(handle[0]); err != nil || cfa.Kind != debuginfo.Value || cfa.Offset != want {
		t.Errorf("handle's frame at its entry: %+v, %v; want the stack pointer plus %d", cfa, err, want)
	}
	for name, want := range map[string]string{"counter": ".data", "hits": ".bss"} {
		g, err := f.Global(name, "module.c")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if sec, off, ok := f.SectionAt(g.Addr); !ok || sec != want || off != 0 {
			t.Errorf("%s at %#x: %s+%#x, %v; want %s+0", name, g.Addr, sec, off, ok, want)
		}
	}
}

// TestOpenModule finds a module's debug file where Debian installs it,
// under its directory in the kernel's tree, by its name with - for _.
func TestOpenModule(t *testing.T) {
	root := tempDebugRoot(t)
	const release = "6.1.0-99-test"
	obj := buildFrom(t, t.TempDir(), "module.o", "module.c", "-c", "-g", "-O2")

	_, err := debuginfo.OpenModule(release, "my_mod", nil)
	var missing *debuginfo.KernelMissingError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "module my_mod's DWARF debuginfo is not installed") ||
		!strings.Contains(err.Error(), "linux-image-"+release+"-dbg") {
		t.Fatalf("nothing installed: %v, want a KernelMissingError naming the module and the package", err)
	}
	dir := filepath.Join(root, "lib", "modules", release, "kernel", "drivers", "misc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(obj, filepath.Join(dir, "my-mod.ko")); err != nil {
		t.Fatal(err)
	}
	f, err := debuginfo.OpenModule(release, "my_mod", nil)
	if err != nil {
		t.Fatalf("installed: %v", err)
	}
	if f.DebugPath != filepath.Join(dir, "my-mod.ko") || f.Path != "module my_mod" {
		t.Errorf("read %s from %s", f.Path, f.DebugPath)
	}
	if len(f.FunctionSymbols("handle")) != 1 {
		t.Errorf("its symbols: handle at %#x", f.FunctionSymbols("handle"))
	}
}
