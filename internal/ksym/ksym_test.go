package ksym

import (
	"strings"
	"testing"
)

const listing = `ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81000100 t do_thing
ffffffff81000180 T other
ffffffff81000200 D some_data
ffffffffc0001000 t mod_fn	[mymod]
ffffffffc0001040 t bpf_prog_abc_probe	[bpf]
`

func TestFormats(t *testing.T) {
	tab := Parse(strings.NewReader(listing))
	for _, c := range []struct {
		addr             uint64
		name, data, full string
	}{
		{0xffffffff81000110, "do_thing", "do_thing+0x10/0x80 [kernel]", " 0xffffffff81000110 : do_thing+0x10/0x80 [kernel]\n"},
		{0xffffffff81000000, "_stext", "_stext+0x0/0x100 [kernel]", " 0xffffffff81000000 : _stext+0x0/0x100 [kernel]\n"},
		// the last symbol of the kernel and of a module have no known end
		{0xffffffff81000190, "0xffffffff81000190", "0xffffffff81000190", " 0xffffffff81000190\n"},
		{0xffffffffc0001000, "mod_fn", "mod_fn+0x0/0x0 [mymod]", " 0xffffffffc0001000 : mod_fn+0x0/0x0 [mymod]\n"},
		{0x1000, "0x0000000000001000", "0x0000000000001000", " 0x0000000000001000\n"},
	} {
		if got := tab.Symname(c.addr); got != c.name {
			t.Errorf("Symname(%#x) = %q, want %q", c.addr, got, c.name)
		}
		if got := tab.Symdata(c.addr); got != c.data {
			t.Errorf("Symdata(%#x) = %q, want %q", c.addr, got, c.data)
		}
		if got := tab.FullLine(c.addr); got != c.full {
			t.Errorf("FullLine(%#x) = %q, want %q", c.addr, got, c.full)
		}
	}
}

func TestStacks(t *testing.T) {
	tab := Parse(strings.NewReader(listing))
	stack := []uint64{0xffffffffc0001044, 0xffffffff81000110, 0xffffffff81000008}
	trimmed := tab.TrimTracing(stack)
	hex := HexList(trimmed)
	if hex != "0xffffffff81000110 0xffffffff81000008 " {
		t.Fatalf("HexList(TrimTracing) = %q", hex)
	}
	if got := Lines(Addresses(hex), tab.SimpleLine, 0); got != "do_thing+0x10 [kernel]\n_stext+0x8 [kernel]\n" {
		t.Errorf("simple lines = %q", got)
	}
	// a limit keeps whole lines only
	if got := Lines(Addresses(hex), tab.SimpleLine, 30); got != "do_thing+0x10 [kernel]\n" {
		t.Errorf("limited lines = %q", got)
	}
}

func TestModules(t *testing.T) {
	tab := Parse(strings.NewReader(listing + "ffffffffc0001100 t mod_other\t[mymod]\n" +
		"ffffffffc0002000 t ftrace_trampoline\t[__builtin__ftrace]\n"))
	for _, c := range []struct {
		addr uint64
		name string
		ok   bool
	}{
		{0xffffffff81000000, "kernel", true},
		{0xffffffff81000180, "kernel", true}, // the kernel's last symbol: its first byte
		{0xffffffff81000181, "", false},
		{0xffffffff81000200, "", false},
		{0xffffffffc0001000, "mymod", true},
		{0xffffffffc0001040, "mymod", true}, // a BPF program between a module's symbols
		{0xffffffffc0001100, "mymod", true},
		{0xffffffffc0001101, "", false},
		{0xffffffffc0002000, "", false}, // pseudo-modules are none
		{0x1000, "", false},
	} {
		if name, ok := tab.Modname(c.addr); name != c.name || ok != c.ok {
			t.Errorf("Modname(%#x) = %q, %v; want %q, %v", c.addr, name, ok, c.name, c.ok)
		}
	}
	// /proc/modules gives a module's base and size
	tab.modules = withLoaded(tab.modules, strings.NewReader(
		"mymod 16384 0 - Live 0xffffffffc0001000\nother 4096 1 mymod, Live 0xffffffffa0000000\n"))
	for addr, want := range map[uint64]string{0xffffffffc0001101: "mymod", 0xffffffffc0004fff: "mymod", 0xffffffffa0000fff: "other"} {
		if name, ok := tab.Modname(addr); name != want || !ok {
			t.Errorf("with /proc/modules: Modname(%#x) = %q, %v; want %q", addr, name, ok, want)
		}
	}
	if name, ok := tab.Modname(0xffffffffc0005000); ok {
		t.Errorf("with /proc/modules: Modname past mymod = %q", name)
	}
}

func TestUntracedRanges(t *testing.T) {
	tab := Parse(strings.NewReader(`ffffffff81000000 T _stext
ffffffff81000100 t do_thing
ffffffff81000180 t __bpf_trace_sched_switch
ffffffff810001c0 T bpf_trace_run2
ffffffff81000200 T other
ffffffff81000280 T last
ffffffffc0001000 t mod_fn	[mymod]
ffffffffc0001040 t bpf_prog_abc_probe	[bpf]
`))
	want := []Range{{0xffffffff81000000, 0xffffffff81000180}, {0xffffffff81000200, 0xffffffff81000281},
		{0xffffffffc0001000, 0xffffffffc0001001}}
	got := tab.UntracedRanges()
	if len(got) != len(want) {
		t.Fatalf("UntracedRanges() = %#x, want %#x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("range %d = %#x, want %#x", i, got[i], want[i])
		}
	}
	// a frame is in a range exactly when TrimTracing keeps it
	stack := []uint64{0xffffffffc0001044, 0xffffffff810001c8, 0xffffffff81000190, 0xffffffff81000210}
	if trimmed := tab.TrimTracing(stack); len(trimmed) != 1 || trimmed[0] != 0xffffffff81000210 {
		t.Errorf("TrimTracing = %#x", trimmed)
	}
}
