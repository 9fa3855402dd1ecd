package debuginfo_test

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/kernel"
)

// build compiles testdata/run/cprogs/request.c with gcc's flags into dir.
func build(t *testing.T, dir, name string, flags ...string) string {
	t.Helper()
	return buildFrom(t, dir, name, "request.c", flags...)
}

// buildFrom compiles testdata/run/cprogs/src with gcc's flags into dir.
func buildFrom(t *testing.T, dir, name, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("gcc is needed to build the test programs: %v", err)
	}
	out := filepath.Join(dir, name)
	args := append(append([]string{}, flags...), "-o", out, "../../testdata/run/cprogs/"+src)
	if msg, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, msg)
	}
	return out
}

func symbol(t *testing.T, path, name string) uint64 {
	t.Helper()
	return symbolOf(t, path, name, elf.STT_FUNC)
}

func symbolOf(t *testing.T, path, name string, typ elf.SymType) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name && elf.ST_TYPE(s.Info) == typ {
			return s.Value
		}
	}
	t.Fatalf("%s has no %v symbol %s", path, typ, name)
	return 0
}

// x86-64's DWARF registers: rdi 5, rsi 4, rdx 1, rbp 6, rsp 7; arm64's x0-x2, x29.
var argRegs = map[string][]int{"amd64": {5, 4, 1}, "arm64": {0, 1, 2}}

func TestParameters(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"O0-dwarf5", []string{"-g", "-O0"}},
		{"O2-dwarf5", []string{"-g", "-O2"}},
		{"O2-dwarf4", []string{"-gdwarf-4", "-O2"}},
		{"O0-dwarf4-compressed", []string{"-gdwarf-4", "-O0", "-gz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := build(t, dir, tc.name, tc.flags...)
			f, err := debuginfo.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			fn, err := f.FunctionAt(symbol(t, path, "pick"))
			if err != nil {
				t.Fatal(err)
			}
			if fn.Name != "pick" || len(fn.Params) != 3 || fn.Params[0].Name != "a" || fn.Params[2].Name != "which" {
				t.Fatalf("pick: %+v", fn)
			}
			pc := fn.Entry
			if fn.FrameBased() {
				if pc, err = fn.AfterPrologue(); err != nil || pc == fn.Entry {
					t.Fatalf("after the prologue: %#x, %v", pc, err)
				}
			}
			for i, p := range fn.Params {
				loc, err := fn.Locate(p, pc)
				if err != nil {
					t.Fatalf("%s at %#x: %v", p.Name, pc, err)
				}
				t.Logf("%s at %#x: %+v", p.Name, pc, loc)
				switch {
				case fn.FrameBased() && (loc.Kind != debuginfo.Memory || loc.Reg < 0):
					t.Errorf("%s: %+v, want a frame slot", p.Name, loc)
				case !fn.FrameBased() && (loc.Kind != debuginfo.Value || loc.Reg != argRegs["amd64"][i] || loc.Offset != 0):
					t.Errorf("%s: %+v, want register %d", p.Name, loc, argRegs["amd64"][i])
				}
			}
			raw, ids, err := f.BTF(fn.Params[0].Type, fn.Return)
			if err != nil {
				t.Fatal(err)
			}
			b, err := kernel.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			path2, err := b.Resolve(kernel.TypeID(ids[0]), []kernel.Step{{Member: "in"}, {Member: "b"}})
			if err != nil {
				t.Fatal(err)
			}
			if path2.Offsets[len(path2.Offsets)-1] != 56 || path2.Size != 2 || !path2.Signed {
				t.Errorf("->in->b: %+v", path2)
			}
		})
	}
}

func TestMissing(t *testing.T) {
	dir := t.TempDir()
	path := build(t, dir, "stripped", "-O2", "-s")
	_, err := debuginfo.Open(path)
	var missing *debuginfo.MissingError
	if !errors.As(err, &missing) {
		t.Fatalf("a stripped program: %v, want a MissingError", err)
	}
	t.Log(err)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func TestGlobal(t *testing.T) {
	path := build(t, t.TempDir(), "globals", "-g", "-O2", "-fno-pie", "-no-pie")
	f, err := debuginfo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := symbolOf(t, path, "counter", elf.STT_OBJECT)
	for _, file := range []string{"", "request.c", "cprogs/request.c"} {
		g, err := f.Global("counter", file)
		if err != nil || g.Addr != want || g.Type == 0 {
			t.Errorf("counter@%s: %+v, %v; want at %#x", file, g, err, want)
		}
	}
	for _, tc := range [][2]string{{"counter", "other.c"}, {"nosuch", ""}, {"r", ""}} { // r: main's static
		if g, err := f.Global(tc[0], tc[1]); !errors.Is(err, debuginfo.ErrNoVariable) {
			t.Errorf("%s@%s: %+v, %v; want ErrNoVariable", tc[0], tc[1], g, err)
		}
	}
}

// tempDebugRoot makes an empty directory the test's DebugRoot.
func tempDebugRoot(t *testing.T) string {
	root := t.TempDir()
	saved := debuginfo.DebugRoot
	debuginfo.DebugRoot = root
	t.Cleanup(func() { debuginfo.DebugRoot = saved })
	return root
}

// TestOpenKernel finds a kernel's debug file where Debian installs it
// and checks its build ID: a program built with -g stands for the vmlinux
// (the kernel's own are read in the guests, internal/guest).
func TestOpenKernel(t *testing.T) {
	root := tempDebugRoot(t)
	const release = "6.1.0-99-test"
	prog := build(t, t.TempDir(), "vmlinux", "-O2", "-g", "-Wl,--build-id")
	id := buildIDOf(t, prog)

	_, err := debuginfo.OpenKernel(release, id)
	var missing *debuginfo.KernelMissingError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "/boot/vmlinux-"+release) || !strings.Contains(err.Error(), "linux-image-"+release+"-dbg") {
		t.Fatalf("nothing installed: %v, want a KernelMissingError naming the places and the package", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "boot"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(prog, filepath.Join(root, "boot", "vmlinux-"+release)); err != nil {
		t.Fatal(err)
	}
	f, err := debuginfo.OpenKernel(release, id)
	if err != nil {
		t.Fatalf("installed: %v", err)
	}
	if f.DebugPath != filepath.Join(root, "boot", "vmlinux-"+release) {
		t.Errorf("read from %s", f.DebugPath)
	}
	if _, err := f.Global("counter", "request.c"); err != nil {
		t.Errorf("its DWARF: %v", err)
	}
	other := append([]byte{id[0] ^ 1}, id[1:]...)
	if _, err := debuginfo.OpenKernel(release, other); !errors.As(err, &missing) || !strings.Contains(err.Error(), "another build of the kernel") {
		t.Errorf("another build's debug file: %v, want it refused", err)
	}
}

func buildIDOf(t *testing.T, path string) []byte {
	t.Helper()
	e, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	data, err := e.Section(".note.gnu.build-id").Data()
	if err != nil {
		t.Fatal(err)
	}
	id := debuginfo.NoteBuildID(data, e.ByteOrder)
	if len(id) == 0 {
		t.Fatal("no build ID")
	}
	return id
}

// TestStatementSites finds what a statement probe on a line is on, as
// kernel.statement does in a vmlinux: the function whose code holds the
// line (EntryContaining), the lines of one function's unit (LinesNear,
// from the symbol table's address), and the inlined copy holding a line
// (InlinedIn, Holds).
func TestStatementSites(t *testing.T) {
	dir := t.TempDir()
	path := build(t, dir, "request_O2", "-O2", "-g")
	f, err := debuginfo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	handle := symbol(t, path, "handle")
	if got := f.FunctionSymbols("handle"); len(got) != 1 || got[0] != handle {
		t.Fatalf("FunctionSymbols(handle) = %#x, want [%#x]", got, handle)
	}
	lines, err := f.LinesNear(handle, "request.c", 29, 29)
	if err != nil || len(lines) == 0 {
		t.Fatalf("LinesNear(handle, request.c:29) = %v, %v", lines, err)
	}
	for _, l := range lines {
		entry, name, err := f.EntryContaining(l.Addr)
		if err != nil || entry != handle || name != "handle" {
			t.Errorf("EntryContaining(%#x, line 29) = %#x %s %v, want handle at %#x", l.Addr, entry, name, err, handle)
		}
	}
	if _, _, err := f.EntryContaining(1); !errors.Is(err, debuginfo.ErrNoFunction) {
		t.Errorf("EntryContaining(1): %v, want ErrNoFunction", err)
	}

	inl := buildFrom(t, dir, "inline", "inline.c", "-O2", "-g")
	g, err := debuginfo.Open(inl)
	if err != nil {
		t.Fatal(err)
	}
	main := symbol(t, inl, "main")
	copies, err := g.InlinedIn(main, func(name string) bool { return name == "square" })
	if err != nil || len(copies) != 2 {
		t.Fatalf("InlinedIn(main, square) = %d copies, %v; want 2 (add_squares, inlined into main, inlines it twice)", len(copies), err)
	}
	// square's line: each of its addresses in main is in a copy (both
	// start at one instruction)
	body, err := g.LinesNear(main, "inline.c", 9, 9)
	if err != nil || len(body) == 0 {
		t.Fatalf("LinesNear(main, inline.c:9) = %v, %v", body, err)
	}
	for _, l := range body {
		held := 0
		for _, c := range copies {
			if c.Holds(l.Addr) {
				held++
			}
		}
		if held == 0 {
			t.Errorf("line 9 at %#x: held by no copy", l.Addr)
		}
	}
	if copies[0].Holds(main - 1) {
		t.Errorf("a copy holds an address before main")
	}
}

// TestDebugFrame reads the canonical frame address from .debug_frame, as
// in a kernel's vmlinux, which has no .eh_frame: a program built without
// unwind tables, its .eh_frame (the C runtime's alone) removed. After
// -O0's prologue the frame is the frame pointer's plus 16 (x86-64's rbp,
// arm64's x29).
func TestDebugFrame(t *testing.T) {
	dir := t.TempDir()
	built := build(t, dir, "built", "-O0", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables")
	path := filepath.Join(dir, "debug_frame_only")
	if msg, err := exec.Command("objcopy", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr", built, path).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, msg)
	}
	f, err := debuginfo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := f.FunctionAt(symbol(t, path, "handle"))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := fn.AfterPrologue()
	if err != nil {
		t.Fatal(err)
	}
	cfa, err := fn.FrameAddress(pc)
	fp := map[string]int{"amd64": 6, "arm64": 29}[runtime.GOARCH]
	if err != nil || cfa.Reg != fp || cfa.Offset != 16 {
		t.Errorf("the frame after handle's prologue: %+v, %v; want DWARF register %d plus 16", cfa, err, fp)
	}
}

// TestGlobalDeclared finds a variable the DWARF only declares (as the
// kernel's jiffies, which its linker script defines) where the symbol
// table places it, from the unit of the code that reads it; and tells a
// variable of the kernel's per-CPU section apart.
func TestGlobalDeclared(t *testing.T) {
	dir := t.TempDir()
	src := map[string]string{
		"reader.c": `extern volatile unsigned long ticks;
__attribute__((section(".data..percpu"))) int per_cpu_count;
struct s;
extern struct s obj;
unsigned long read_ticks(void) { return ticks + per_cpu_count + (unsigned long)&obj; }
int main(void) { return (int)read_ticks(); }
`,
		"ticks.c": "volatile unsigned long ticks = 5;\nstruct s { int x; } obj = {1};\n",
	}
	for name, text := range src {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prog := filepath.Join(dir, "prog")
	cmd := exec.Command("sh", "-c", "gcc -g -O2 -c ticks.c && gcc -g -O2 -no-pie -fno-pie -Wl,--unique=.data..percpu -o prog reader.c ticks.o")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f, err := debuginfo.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	want := symbolOf(t, prog, "ticks", elf.STT_OBJECT)
	at := symbol(t, prog, "read_ticks")
	g, err := f.GlobalAt("ticks", at)
	if err != nil || g.Addr != want || g.Type == 0 || g.PerCPU || g.Unit != "reader.c" {
		t.Errorf("GlobalAt(ticks): %+v, %v; want declared in reader.c at %#x", g, err, want)
	}
	if g, err := f.Global("ticks", "reader.c"); err != nil || g.Addr != want {
		t.Errorf("Global(ticks@reader.c): %+v, %v; want at %#x", g, err, want)
	}
	if g, err := f.GlobalAt("per_cpu_count", at); err != nil || !g.PerCPU {
		t.Errorf("GlobalAt(per_cpu_count): %+v, %v; want a per-CPU variable", g, err)
	}
	if g, err := f.GlobalAt("nosuch", at); !errors.Is(err, debuginfo.ErrNoVariable) {
		t.Errorf("GlobalAt(nosuch): %+v, %v; want ErrNoVariable", g, err)
	}
	// a unit that declares obj with a type it only declares gives way to
	// the unit that defines both
	if g, err := f.Global("obj", ""); err != nil || g.Unit != "ticks.c" || g.Addr != symbolOf(t, prog, "obj", elf.STT_OBJECT) {
		t.Errorf("Global(obj): %+v, %v; want ticks.c's definition", g, err)
	}
}

// TestDebugFrameLongFunction reads the frame at the end of a function
// whose epilogue is more than 255 bytes past its prologue: the row is
// reached by DW_CFA_advance_loc2, whose operand is read in the section's
// byte order (a reader without one crashed on the kernel's vfs_read). At
// the return the frame is the stack pointer's plus 8 (x86-64: rsp), or
// plus 0 at arm64's (sp: the return address is in x30).
func TestDebugFrameLongFunction(t *testing.T) {
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("volatile long v;\nlong big(long x)\n{\n\tv = x;\n")
	for i := 1; i < 120; i++ {
		fmt.Fprintf(&src, "\tv = v * %d + %d;\n", i, i)
	}
	src.WriteString("\treturn v;\n}\nint main(void) { return (int)big(3); }\n")
	if err := os.WriteFile(filepath.Join(dir, "big.c"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "gcc -O0 -g -fno-asynchronous-unwind-tables -fno-unwind-tables -o built big.c && "+
		"objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr built big")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	path := filepath.Join(dir, "big")
	f, err := debuginfo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := f.FunctionAt(symbol(t, path, "big"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	syms, _ := e.Symbols()
	var ret uint64
	for _, s := range syms {
		if s.Name == "big" {
			ret = s.Value + s.Size - 1 // x86-64's ret is one byte
			if runtime.GOARCH == "arm64" {
				ret = s.Value + s.Size - 4
			}
		}
	}
	cfa, err := fn.FrameAddress(ret)
	sp := map[string]int{"amd64": 7, "arm64": 31}[runtime.GOARCH]
	off := map[string]int64{"amd64": 8, "arm64": 0}[runtime.GOARCH]
	if err != nil || cfa.Reg != sp || cfa.Offset != off {
		t.Errorf("the frame at big's return (%#x): %+v, %v; want DWARF register %d plus %d", ret, cfa, err, sp, off)
	}
}
