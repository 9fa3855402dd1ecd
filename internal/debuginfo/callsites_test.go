package debuginfo_test

import (
	"testing"

	"github.com/bpftap/bpftap/internal/debuginfo"
)

// TestCallSites reads the calls callee.c's functions make: one() calls
// helper() and has twice() inlined, three() another file's static
// helper(), main() calls two() from two sites
// (and atoi(), which glibc's header inlines at -O2); each call returns
// to an address of its caller. DWARF 5 names them DW_TAG_call_site, GCC's
// DWARF 4 DW_TAG_GNU_call_site.
func TestCallSites(t *testing.T) {
	for _, version := range []string{"-gdwarf-5", "-gdwarf-4"} {
		t.Run(version, func(t *testing.T) { testCallSites(t, version) })
	}
}

func testCallSites(t *testing.T, version string) {
	path := buildFrom(t, t.TempDir(), "callee", "callee.c", version, "-O2", "../../testdata/run/cprogs/callee_twin.c")
	f, err := debuginfo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	all := func(string) bool { return true }
	within := func(fn string, addr uint64) bool {
		_, host, err := f.EntryContaining(addr)
		return err == nil && host == fn
	}
	one := symbol(t, path, "one")
	sites, err := f.CallSites(one, all)
	if err != nil {
		t.Fatal(err)
	}
	var helper, twice int
	var helperAt uint64
	for _, s := range sites {
		switch {
		case s.Callee == "helper" && s.Inline == nil && within("one", s.Return) && s.Entry != 0:
			helper++
			helperAt = s.Entry
		case s.Callee == "twice" && s.Inline != nil && s.Return == 0 && within("one", s.Inline.Entry):
			twice++
		default:
			t.Errorf("one(): unexpected call site %+v", s)
		}
	}
	if helper != 1 || twice != 1 {
		t.Errorf("one(): %d calls of helper, %d inlined twice; want 1 and 1 (%+v)", helper, twice, sites)
	}
	main := symbol(t, path, "main")
	sites, err = f.CallSites(main, func(name string) bool { return name == "two" })
	if err != nil {
		t.Fatal(err)
	}
	returns := map[string][]uint64{}
	for _, s := range sites {
		if !within("main", s.Return) {
			t.Errorf("main(): %s returns to %#x, outside main", s.Callee, s.Return)
		}
		returns[s.Callee] = append(returns[s.Callee], s.Return)
	}
	if len(returns["two"]) != 2 || returns["two"][0] == returns["two"][1] {
		t.Errorf("main(): calls %v; want two at two places", returns)
	}
	// three() calls callee_twin.c's helper, static there: another entry
	sites, err = f.CallSites(symbol(t, path, "three"), all)
	if err != nil || len(sites) != 1 || sites[0].Callee != "helper" || sites[0].Entry == 0 || sites[0].Entry == helperAt {
		t.Errorf("three(): %+v, %v; want a call of the other helper than one()'s, at %#x", sites, err, helperAt)
	}
	if _, host, err := f.EntryContaining(sites[0].Entry); err != nil || host != "helper" {
		t.Errorf("three()'s helper at %#x: in %s, %v", sites[0].Entry, host, err)
	}
	if sites, err := f.CallSites(helperAt, all); err != nil || len(sites) != 0 {
		t.Errorf("helper(): %+v, %v; want no calls", sites, err)
	}
}
