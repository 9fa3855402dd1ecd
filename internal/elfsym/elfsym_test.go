package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestFileOffsets builds a function with gcc, PIE and not, and as a shared
// library, and checks that the file offset Open gives holds the bytes of
// the function's code (read through its section) and that wildcards match.
func TestFileOffsets(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "f.c")
	os.WriteFile(src, []byte("__attribute__((noinline)) long scale(long a, long b) { return a * b + 7; }\nint main(void) { return scale(1, 2) == 0; }\n"), 0o644)
	for _, flags := range [][]string{{"-fPIE", "-pie"}, {"-fno-pie", "-no-pie"}, {"-shared", "-fPIC"}} {
		out := filepath.Join(dir, flags[1][1:])
		if b, err := exec.Command("gcc", append(flags, "-O2", "-o", out, src)...).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, b)
		}
		o, err := Open(out)
		if err != nil {
			t.Fatal(err)
		}
		fns, err := o.Match("sc?l*")
		if err != nil || len(fns) != 1 || fns[0].Name != "scale" {
			t.Fatalf("%s: Match = %v, %v", out, fns, err)
		}
		if got, want := fileBytes(t, out, fns[0].Offset, fns[0].Size), codeBytes(t, out, fns[0]); !bytes.Equal(got, want) {
			t.Errorf("%s: bytes at file offset %#x = %x, the function's code is %x", out, fns[0].Offset, got, want)
		}
	}
}

func fileBytes(t *testing.T, path string, off, n uint64) []byte {
	b, err := os.ReadFile(path)
	if err != nil || off+n > uint64(len(b)) {
		t.Fatalf("%s: %v (offset %#x)", path, err, off)
	}
	return b[off : off+n]
}

// codeBytes reads fn's code from the section holding its address.
func codeBytes(t *testing.T, path string, fn Func) []byte {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && fn.Addr >= s.Addr && fn.Addr+fn.Size <= s.Addr+s.Size {
			data, err := s.Data()
			if err != nil {
				t.Fatal(err)
			}
			return data[fn.Addr-s.Addr : fn.Addr-s.Addr+fn.Size]
		}
	}
	t.Fatalf("%s: no section holds %s", path, fn.Name)
	return nil
}

// TestResolve finds libc by its soname, a command in PATH, and nothing for
// names that do not exist.
func TestResolve(t *testing.T) {
	libc, err := Resolve("libc.so.6")
	if err != nil {
		t.Fatal(err)
	}
	if o, err := Open(libc); err != nil || len(o.Funcs) < 100 {
		t.Errorf("libc.so.6 = %s: %v", libc, err)
	}
	if sh, err := Resolve("sh"); err != nil || !filepath.IsAbs(sh) {
		t.Errorf("sh = %q, %v", sh, err)
	}
	for _, name := range []string{"libbpftap-nosuch.so.1", "bpftap-nosuch", "/nonexistent/x"} {
		if p, err := Resolve(name); err != ErrNotFound {
			t.Errorf("Resolve(%q) = %q, %v, want ErrNotFound", name, p, err)
		}
	}
}

// TestResolveAll globs a directory holding two ELF files, a link to one of
// them, a text file and a subdirectory: the pattern names the two ELF
// files, each once.
func TestResolveAll(t *testing.T) {
	dir := t.TempDir()
	elfFile, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, name), elfFile, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d"), []byte("not ELF\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := ResolveAll(filepath.Join(dir, "*"))
	if want := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}; err != nil || !slices.Equal(files, want) {
		t.Errorf("ResolveAll(%s/*) = %q, %v, want %q", dir, files, err, want)
	}
	if files, err := ResolveAll(filepath.Join(dir, "[de]")); err != ErrNotFound {
		t.Errorf("ResolveAll of no ELF file = %q, %v, want ErrNotFound", files, err)
	}
	if files, err := ResolveAll("libc.so.6"); err != nil || len(files) != 1 {
		t.Errorf("ResolveAll(libc.so.6) = %q, %v, want Resolve's one file", files, err)
	}
	if _, err := ResolveAll(filepath.Join(dir, "[")); err == nil {
		t.Errorf("ResolveAll of a malformed pattern: no error")
	}
}

// TestPLTSlots checks each PLT stub of glibc (whose stubs of indirect
// functions are relocated after the others while their GOT slots lie among
// them) and of gcc-built programs with and without IBT (.plt.sec) jumps
// through the GOT slot of the function it is named after: its code's
// `jmp *disp(%rip)` reads that slot.
func TestPLTSlots(t *testing.T) {
	libc, err := Resolve("libc.so.6")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	os.WriteFile(src, []byte("#include <stdio.h>\n#include <stdlib.h>\nint main(int c, char **v) { puts(v[0]); return atoi(getenv(\"N\") ? getenv(\"N\") : \"0\"); }\n"), 0o644)
	files := []string{libc}
	for _, flag := range []string{"-fcf-protection=none", "-fcf-protection=full"} {
		out := filepath.Join(dir, flag[len("-fcf-protection="):])
		if b, err := exec.Command("gcc", flag, "-O2", "-o", out, src).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, b)
		}
		files = append(files, out)
	}
	for _, path := range files {
		o, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		slots := gotSlots(t, path)
		if len(o.PLT) == 0 || len(o.PLT) != len(slots) {
			t.Fatalf("%s: %d stubs, %d JUMP_SLOT relocations", path, len(o.PLT), len(slots))
		}
		for _, stub := range o.PLT {
			code := fileBytes(t, path, stub.Offset, stub.Size)
			i := bytes.Index(code, []byte{0xff, 0x25})
			if i < 0 || i+6 > len(code) {
				t.Fatalf("%s: stub %s at %#x has no jmp *disp(%%rip): %x", path, stub.Name, stub.Addr, code)
			}
			disp := int32(binary.LittleEndian.Uint32(code[i+2:]))
			if target := stub.Addr + uint64(i+6) + uint64(int64(disp)); target != slots[stub.Name] {
				t.Errorf("%s: stub %s at %#x jumps through %#x, its slot is %#x", path, stub.Name, stub.Addr, target, slots[stub.Name])
			}
		}
	}
}

// gotSlots maps the functions of the R_X86_64_JUMP_SLOT relocations of
// the file at path to their GOT slots.
func gotSlots(t *testing.T, path string) map[string]uint64 {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := f.Section(".rela.plt").Data()
	syms, serr := f.DynamicSymbols()
	if err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	slots := map[string]uint64{}
	for i := 0; i+relaSize <= len(data); i += relaSize {
		info := binary.LittleEndian.Uint64(data[i+8:])
		if elf.R_X86_64(info&0xffffffff) == elf.R_X86_64_JMP_SLOT {
			slots[syms[info>>32-1].Name] = binary.LittleEndian.Uint64(data[i:])
		}
	}
	return slots
}

// TestLibraryCache checks that a LibraryCache finds an executable's
// libraries as WithLibraries does, and then answers from what it kept:
// the executable replaced by a file that needs nothing still has the
// libraries it had.
func TestLibraryCache(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "true")
	elfFile, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(exe, elfFile, 0o755); err != nil {
		t.Fatal(err)
	}
	var cache LibraryCache
	first := cache.WithLibraries(exe)
	if !slices.Equal(first, WithLibraries(exe)) || !slices.ContainsFunc(first, func(p string) bool { return filepath.Base(p) == "libc.so.6" }) {
		t.Fatalf("cache.WithLibraries(%s) = %v, WithLibraries = %v; want the same, with libc.so.6", exe, first, WithLibraries(exe))
	}
	if err := os.WriteFile(exe, []byte("not an ELF file"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := WithLibraries(exe); len(got) != 1 {
		t.Fatalf("WithLibraries of a file that is not ELF = %v, want the file alone", got)
	}
	if again := cache.WithLibraries(exe); !slices.Equal(again, first) {
		t.Errorf("cache.WithLibraries(%s) again = %v, want the kept %v", exe, again, first)
	}
}
