package kernelside

import (
	"fmt"
	"os"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset/tapsettest"
	"github.com/bpftap/bpftap/internal/target"
)

// TestGroupsAtOnce compiles scripts whose programs each number what they
// add to the module (print records, error sites, sets of system calls,
// call tables, the offsets of regular expressions' tables, some shared by
// two programs, some not) and share globals, the groups at once
// (bpfgen.Module.CompileGroups, on shards) and one after the other
// (CompileGroup on one module): the programs' instructions, their maps'
// references among them, the records, the error sites and the module's
// maps are the same.
func TestGroupsAtOnce(t *testing.T) {
	k, err := target.Running()
	if err != nil {
		t.Fatal(err)
	}
	strace, err := os.ReadFile("../../examples/strace.stp")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, script string }{
		{"prints, errors, regular expressions, a global", `global n
probe kernel.trace("sys_enter") {
	if (execname() =~ "^ba") n++
	if ($id == 1000000) error("enter")
	printf("enter %d\n", $id)
}
probe kernel.trace("sys_exit") {
	if (execname() =~ "sh$") n--
	if (execname() =~ "^ba") n += 2
	if ($ret == 1000000) error("exit")
	printf("exit %d %d\n", $ret, n)
}
probe kernel.trace("sched:sched_process_exit") { printf("gone %d %d\n", pid(), n) }`},
		{"a set of system calls in two programs", `global n, e
probe syscall.*.return { if (retval < 0) n++ }
probe syscall.*.return { if (retval == -2) e++ }`},
		{"strace.stp: call tables, ten programs", string(strace)},
	} {
		t.Run(c.name, func(t *testing.T) {
			atOnce, groups := compiledGroups(t, c.script, k)
			if len(groups) < 2 {
				t.Fatalf("%d groups, want several", len(groups))
			}
			progs, err := atOnce.CompileGroups(groups, nil)
			if err != nil {
				t.Fatal(err)
			}
			oneByOne, again := compiledGroups(t, c.script, k)
			for i, g := range again {
				want, err := oneByOne.CompileGroup(g)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := listing(progs[i]), listing(want); got != want {
					t.Errorf("program %d: at once\n%s\none after the other\n%s", i, got, want)
				}
			}
			got, want := moduleParts(atOnce), moduleParts(oneByOne)
			for i := range max(len(got), len(want)) {
				if i >= len(got) || i >= len(want) || got[i] != want[i] {
					t.Fatalf("the module's part %d: at once %.500q, one after the other %.500q", i, part(got, i), part(want, i))
				}
			}
			t.Logf("%d programs, %d records, %d error sites, %d maps", len(progs), len(atOnce.Outputs),
				len(atOnce.Errors), len(atOnce.Maps()))
		})
	}
}

// compiledGroups elaborates script for kernel k (with a library of its
// own: the elaboration annotates the library's trees) and returns a module
// for it with the groups of its kernel probes (as Compile makes them).
func compiledGroups(t *testing.T, script string, k *target.Kernel) (*bpfgen.Module, [][]*sema.Probe) {
	t.Helper()
	f, err := syntax.Parse(syntax.NewSource("<input>", script), syntax.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prog, err := sema.Elaborate([]*syntax.File{f}, sema.Options{NoWarnings: true, KernelProbes: true, Library: tapsettest.Files(t),
		Registry: probes.BuiltinWith(probes.RunningKernel{Kernel: k,
			CanAttach: func(a *attach.Point) error { return bpfrt.CanAttachOn(k, a) }}, probes.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	sema.DeferPrinted(prog)
	return bpfgen.New(prog, bpfgen.Config{Kernel: k}), programGroups(KernelProbes(prog))
}

// listing is a program's instructions with their labels and references.
func listing(p *bpfgen.Program) string { return fmt.Sprintf("%v", p.Instructions) }

// moduleParts is what a module collected, printable and comparable.
func moduleParts(m *bpfgen.Module) []string {
	var parts []string
	for i, o := range m.Outputs {
		parts = append(parts, fmt.Sprintf("record %d: %s %v %d", i, o.Pos, o.Args, o.Size))
	}
	for i, e := range m.Errors {
		parts = append(parts, fmt.Sprintf("error %d: %s %q", i, e.Pos, e.Msg))
	}
	for _, mp := range m.Maps() { // the BTF of a map's key and value aside: made anew for each
		s := mp.Spec
		parts = append(parts, fmt.Sprintf("map %s: %s %v %d %d %d %#x %v inner %v", mp.Ref, s.Name, s.Type, s.KeySize,
			s.ValueSize, s.MaxEntries, s.Flags, s.Contents, s.InnerMap != nil))
	}
	return parts
}

func part(parts []string, i int) string {
	if i < len(parts) {
		return parts[i]
	}
	return "(none)"
}
