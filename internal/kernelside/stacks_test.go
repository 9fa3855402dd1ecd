package kernelside

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/elfsym"
)

// TestExpandSymbolTokens replaces symbol tokens wherever they stand in a
// string, as a kernel probe's concatenation leaves them: here tokens of
// libc's getpid in a live sleep process (named through its mappings),
// made as the kernel makes them. Other escapes (ANSI's, a token cut short)
// stay as they are.
func TestExpandSymbolTokens(t *testing.T) {
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleep.Process.Kill()
	libc, base := libcMapping(t, sleep.Process.Pid)
	obj, err := elfsym.Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	fns, err := obj.Match("getpid")
	if err != nil || len(fns) != 1 {
		t.Fatalf("getpid in %s: %v %v", libc, fns, err)
	}
	names := map[string]bool{}
	for _, fn := range obj.Funcs {
		if fn.Addr == fns[0].Addr {
			names[fn.Name] = true
		}
	}
	addr := base + fns[0].Offset
	st := newStackTexts(nil, true, 512)
	name, module := token(bpfgen.SymName, sleep.Process.Pid, addr), token(bpfgen.SymModule, sleep.Process.Pid, addr)
	got := st.expand("u:" + module + ":" + name)
	if fn, ok := strings.CutPrefix(got, "u:"+libc+":"); !ok || !names[fn] {
		t.Errorf("expand = %q, want u:%s: and one of %v", got, libc, names)
	}
	for _, s := range []string{"\x1b[1;1H\x1b[J", "\x1b[31mred\x1b[0m", name[:len(name)-1], "\x1bn" + strings.Repeat("?", bpfgen.SymTokenLen)} {
		if got := st.expand(s); got != s {
			t.Errorf("expand(%q) = %q, want it unchanged", s, got)
		}
	}
}

// libcMapping is the path of the libc process pid maps and the address
// its first page is mapped at (its file offset 0).
func libcMapping(t *testing.T, pid int) (string, uint64) {
	for range 100 {
		maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(maps), "\n") {
			f := strings.Fields(line)
			if len(f) == 6 && strings.Contains(f[5], "/libc.so") && f[2] == "00000000" {
				start, _, _ := strings.Cut(f[0], "-")
				base, err := strconv.ParseUint(start, 16, 64)
				if err != nil {
					t.Fatal(err)
				}
				return f[5], base
			}
		}
		time.Sleep(10 * time.Millisecond) // sleep is still starting
	}
	t.Fatal("sleep maps no libc")
	return "", 0
}

// token is the symbol token the kernel makes for addr in process tgid
// when it has no build-id frame for it.
func token(form bpfgen.SymForm, tgid int, addr uint64) string {
	b := []byte{0x1b, byte(form), '@'}
	digits := func(v uint64, n int) {
		for i := 0; i < n; i++ {
			b = append(b, byte('@'+v>>(6*i)&63))
		}
	}
	digits(uint64(tgid), 4)
	digits(addr, 11)
	for len(b) < bpfgen.SymTokenLen {
		b = append(b, '@')
	}
	return string(b)
}

// TestCallersText writes callers(n)'s words: the first depth addresses
// (every one for 0), "0x%x" each, whole words within MAXSTRINGLEN.
func TestCallersText(t *testing.T) {
	addrs := []uint64{0xffffffff81000010, 0x10, 0x7f0000001234}
	for _, c := range []struct {
		depth, maxStr int
		want          string
	}{
		{2, 512, "0xffffffff81000010 0x10"},
		{0, 512, "0xffffffff81000010 0x10 0x7f0000001234"},
		{5, 512, "0xffffffff81000010 0x10 0x7f0000001234"},
		{0, 24, "0xffffffff81000010 0x10"}, // 23 bytes and the NUL
		{0, 23, "0xffffffff81000010"},
	} {
		st := newStackTexts(nil, false, c.maxStr)
		if got := st.callers(addrs, c.depth); got != c.want {
			t.Errorf("callers(depth %d, MAXSTRINGLEN %d) = %q, want %q", c.depth, c.maxStr, got, c.want)
		}
	}
}
