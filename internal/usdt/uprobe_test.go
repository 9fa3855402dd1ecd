package usdt_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/usdt"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// build compiles testdata/app.c (and testdata/lib.c into libapp.so when
// lib) with the C compiler cc and the flags into dir and returns the
// executable's path.
func build(t *testing.T, cc, dir, name string, lib bool, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath(cc); err != nil {
		t.Skip(cc + " is not installed")
	}
	if _, err := os.Stat("/usr/include/x86_64-linux-gnu/sys/sdt.h"); err != nil {
		t.Skip("sys/sdt.h is not installed (apt-get install systemtap-sdt-dev)")
	}
	src, _ := filepath.Abs("testdata")
	out := filepath.Join(dir, name)
	args := append(flags, "-o", out, filepath.Join(src, "app.c"))
	if lib {
		compile(t, cc, "-O2", "-fPIC", "-shared", "-o", filepath.Join(dir, "libapp.so"), filepath.Join(src, "lib.c"))
		args = append(args, "-DLIB", "-L"+dir, "-lapp", "-Wl,-rpath,"+dir)
	}
	compile(t, cc, args...)
	return out
}

func compile(t *testing.T, cc string, args ...string) {
	t.Helper()
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
}

// The values app.c's markers pass on its third call (nil: not checked).
var wantArgs = map[string][]any{
	"app:ops":  {int64(-70000), int64(-300), int64(-7), int64(3), int64(7), int64(-16)},
	"app:wide": {int64(-3), int64(200), int64(-5)},
	"app:tick": {int64(-5000000000), nil},
	"lib:call": {int64(2), int64(5 + 0 + 1 + 2)},
}

// TestUprobe builds app.c every way the markers' operands differ, checks
// the notes against readelf -n, attaches a uprobe to each marker at its
// file offset, with its semaphore as the uprobe's ref_ctr_offset, and has
// it save the raw registers and memory words the marker's Locs name; the
// values the Locs then give are those the C code passed. The kernel
// raising the semaphores shows in the count of ticks the program sees.
func TestUprobe(t *testing.T) {
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Fatal(err)
	}
	variants := []struct {
		name  string
		lib   bool
		flags []string
	}{
		{"O0-pie", false, []string{"-O0", "-fPIE", "-pie"}},
		{"O2-pie", false, []string{"-O2", "-fPIE", "-pie"}},
		{"O0-nopie", false, []string{"-O0", "-fno-PIE", "-no-pie"}},
		{"O2-nopie-semaphore", false, []string{"-O2", "-fno-PIE", "-no-pie", "-DSEMAPHORE"}},
		{"O2-pie-semaphore-lib", true, []string{"-O2", "-fPIE", "-pie", "-DSEMAPHORE"}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := build(t, "gcc", dir, "app", v.lib, v.flags...)
			files := []string{exe}
			if v.lib {
				files = append(files, filepath.Join(dir, "libapp.so"))
			}
			var probes []*tracedProbe
			for _, path := range files {
				f := openAndCompare(t, path)
				for _, p := range f.Probes {
					probes = append(probes, attachProbe(t, f, p))
				}
			}
			out, err := exec.Command(exe, "3").Output()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(out)); got != "3" {
				t.Errorf("the program saw the tick semaphore set %s times of 3", got)
			}
			for _, tp := range probes {
				tp.check(t)
			}
		})
	}
}

// openAndCompare reads the markers of path and compares them with what
// readelf -n says.
func openAndCompare(t *testing.T, path string) *usdt.File {
	f, err := usdt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(f), readelfNotes(t, path); got != want {
		t.Errorf("%s: markers\n%s\nreadelf -n:\n%s", path, got, want)
	}
	return f
}

// tracedProbe is a marker with a uprobe saving its operands' raw words.
type tracedProbe struct {
	file  *usdt.File
	probe *usdt.Probe
	locs  []attach.Loc
	words *ebpf.Map
}

// The words map holds one value: the hit count, then a raw word per
// argument.
const maxArgs = 12

func attachProbe(t *testing.T, f *usdt.File, p *usdt.Probe) *tracedProbe {
	t.Helper()
	tp := &tracedProbe{file: f, probe: p}
	for _, a := range p.Args {
		loc, err := attach.Loc{}, a.Err
		if err == nil {
			loc, err = f.Loc(p, a)
		}
		if err != nil {
			t.Fatalf("%s:%s %s: %v", p.Provider, p.Name, a.Text, err)
		}
		tp.locs = append(tp.locs, loc)
	}
	words, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8 * (1 + maxArgs), MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { words.Close() })
	tp.words = words
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, License: "GPL", Instructions: rawWords(words, tp.locs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	ex, err := link.OpenExecutable(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ex.Uprobe("", prog, &link.UprobeOptions{Address: p.Offset, RefCtrOffset: p.SemaphoreOffset})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return tp
}

// rawWords is a uprobe program that counts its hits and saves, for each
// location, the 8-byte register slot holding it or the 8 bytes of user
// memory at its address; the test cuts and extends them as the Loc says.
func rawWords(words *ebpf.Map, locs []attach.Loc) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, words.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R1, asm.R7, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R7, 0, asm.R1, asm.DWord),
	}
	for i, loc := range locs {
		dst := int16(8 * (1 + i))
		switch {
		case loc.Const:
		case loc.User == nil:
			insns = append(insns, asm.LoadMem(asm.R1, asm.R6, int16(loc.Offset&^7), asm.DWord), asm.StoreMem(asm.R7, dst, asm.R1, asm.DWord))
		default:
			insns = append(insns, asm.LoadImm(asm.R3, loc.User.Disp, asm.DWord))
			for _, term := range loc.User.Terms {
				insns = append(insns, asm.LoadMem(asm.R1, asm.R6, int16(term.Offset), asm.DWord),
					asm.Mul.Imm(asm.R1, int32(term.Scale)), asm.Add.Reg(asm.R3, asm.R1))
			}
			insns = append(insns, asm.Mov.Reg(asm.R1, asm.R7), asm.Add.Imm(asm.R1, int32(dst)), asm.Mov.Imm(asm.R2, 8),
				asm.FnProbeReadUser.Call())
		}
	}
	return append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("out"), asm.Return())
}

// check compares the hits and the arguments the probe saw with what the
// program passed.
func (tp *tracedProbe) check(t *testing.T) {
	t.Helper()
	name := tp.probe.Provider + ":" + tp.probe.Name
	raw := make([]uint64, 1+maxArgs)
	if err := tp.words.Lookup(uint32(0), raw); err != nil {
		t.Fatal(err)
	}
	if raw[0] != 3 {
		t.Errorf("%s: %d hits, want 3", name, raw[0])
	}
	for i, loc := range tp.locs {
		want := wantArgs[name][i]
		if got := value(loc, raw[1+i]); want != nil && got != want {
			t.Errorf("%s: $arg%d (%s) = %d, want %d", name, i+1, tp.probe.Args[i].Text, got, want)
		}
	}
}

// value is what a Loc gives from the raw word the program saved.
func value(loc attach.Loc, raw uint64) int64 {
	if loc.Const {
		return loc.Value
	}
	if loc.User == nil {
		raw >>= 8 * (loc.Offset & 7)
	}
	bits := uint(64 - 8*loc.Size)
	if loc.Signed {
		return int64(raw<<bits) >> bits
	}
	return int64(raw << bits >> bits)
}

// describe lists a file's markers as readelfNotes does.
func describe(f *usdt.File) string {
	var b strings.Builder
	for _, p := range f.Probes {
		b.WriteString(strings.Join([]string{p.Provider, p.Name, hex(p.NotePC), hex(p.NoteBase), hex(p.NoteSemaphore), p.ArgText}, "|") + "\n")
	}
	return b.String()
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// readelfNotes lists the stapsdt notes readelf -n prints: provider, name,
// location, base, semaphore, arguments.
func readelfNotes(t *testing.T, path string) string {
	out, err := exec.Command("readelf", "-nW", path).Output()
	if err != nil {
		t.Skipf("readelf: %v", err)
	}
	var b strings.Builder
	var fields []string
	for _, line := range strings.Split(string(out), "\n") {
		if _, provider, ok := strings.Cut(line, "Provider: "); ok { // -W: it ends the note's first line
			fields = []string{provider}
			continue
		}
		key, val, _ := strings.Cut(strings.TrimSpace(line), ": ")
		switch key {
		case "Name":
			fields = append(fields, val)
		case "Location":
			for _, part := range strings.Split(line[strings.Index(line, "Location"):], ", ") {
				_, num, _ := strings.Cut(part, ": ")
				n, _ := strconv.ParseUint(strings.TrimPrefix(num, "0x"), 16, 64)
				fields = append(fields, hex(n))
			}
		case "Arguments":
			b.WriteString(strings.Join(append(fields, val), "|") + "\n")
			fields = nil
		}
	}
	return b.String()
}
