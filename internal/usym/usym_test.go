package usym

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bpftap/bpftap/internal/elfsym"
)

// buildHot compiles testdata/run/cprogs/hot.c (main, work, hot).
func buildHot(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hot")
	out, err := exec.Command("gcc", "-O0", "-o", bin, "../../testdata/run/cprogs/hot.c").CombinedOutput()
	if err != nil {
		t.Skipf("gcc: %v\n%s", err, out)
	}
	return bin
}

// TestFrame symbolizes a build-id frame: the file found by its build id,
// the offset turned into the function holding it, sized to the next one.
func TestFrame(t *testing.T) {
	bin := buildHot(t)
	obj, err := elfsym.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	work, _ := obj.Match("work")
	main, _ := obj.Match("main")
	if len(work) != 1 || len(main) != 1 {
		t.Fatalf("functions work %v, main %v", work, main)
	}
	s := New()
	s.AddExecutable(bin)
	id := BuildID(bin)
	if id == "" {
		t.Fatal("no build id")
	}
	sym, ok := s.Frame(id, work[0].Offset+5, 0x1000)
	want := Symbol{Module: bin, Name: "work", Offset: 5, Size: main[0].Addr - work[0].Addr, Addr: work[0].Addr + 5}
	if !ok || sym != want {
		t.Fatalf("Frame = %+v, %v; want %+v", sym, ok, want)
	}
	// the address is known from the stack now
	if k, ok := s.Known(0x1000); !ok || k != want {
		t.Errorf("Known = %+v, %v", k, ok)
	}
	if got := FullLine(0x1000, sym, ok); got != " 0x1000 : work+0x5/"+Hex(want.Size)+" ["+bin+"]\n" {
		t.Errorf("FullLine = %q", got)
	}
	if got := SimpleLine(0x1000, sym, ok); got != "work+0x5 [hot]\n" {
		t.Errorf("SimpleLine = %q", got)
	}
	// the libraries it needs are indexed too
	if _, ok := s.byBuildID[BuildID("/lib/x86_64-linux-gnu/libc.so.6")]; !ok {
		t.Errorf("libc not indexed: %v", s.buildIDs)
	}
}

// TestAddress symbolizes an address through a process's mappings.
func TestAddress(t *testing.T) {
	bin := buildHot(t)
	obj, _ := elfsym.Open(bin)
	hot, _ := obj.Match("hot")
	s := New()
	// the file mapped at 0x555500000000 from offset 0
	s.readMaps = func(int) []mapping { return []mapping{{0x555500000000, 0x555500100000, 0, bin}} }
	addr := 0x555500000000 + hot[0].Offset + 2
	sym, ok := s.Address(42, addr)
	if got := Data(addr, sym, ok); got != "hot+0x2/"+Hex(sym.Size)+" ["+bin+"]" || Name(addr, sym, ok) != "hot" {
		t.Errorf("usymdata = %q", got)
	}
	if sym, ok := s.Address(42, 0x1000); ok || Name(0x1000, sym, ok) != "0x1000" || Module(sym, ok) != "<unknown>" {
		t.Errorf("an unmapped address: %+v, %v", sym, ok)
	}
	// a stack of another process showed the same address: the process's
	// own mapping decides; without one (it exited, or no process) the
	// stack's symbol serves
	other := Symbol{Module: "/other", Name: "elsewhere"}
	s.seen[addr], s.seen[0x1000] = other, other
	if sym, _ := s.Address(42, addr); sym.Name != "hot" {
		t.Errorf("mapped address named %+v, want hot", sym)
	}
	if sym, ok := s.Address(42, 0x1000); !ok || sym != other {
		t.Errorf("unmapped address seen in a stack: %+v, %v", sym, ok)
	}
	if sym, ok := s.Address(0, addr); !ok || sym != other {
		t.Errorf("no process: %+v, %v; want the stack's symbol", sym, ok)
	}
}

func TestParseMapping(t *testing.T) {
	m, ok := parseMapping("7f1c60b38000-7f1c60b5e000 r--p 00001000 fe:01 1234 /usr/lib/x86_64-linux-gnu/libc.so.6")
	if !ok || m != (mapping{0x7f1c60b38000, 0x7f1c60b5e000, 0x1000, "/usr/lib/x86_64-linux-gnu/libc.so.6"}) {
		t.Errorf("parseMapping = %+v, %v", m, ok)
	}
	for _, line := range []string{"7ffd1000-7ffd2000 r-xp 00000000 00:00 0 [vdso]", "7f00-7f10 rw-p 00000000 00:00 0"} {
		if _, ok := parseMapping(line); ok {
			t.Errorf("parseMapping(%q) kept an anonymous mapping", line)
		}
	}
}
