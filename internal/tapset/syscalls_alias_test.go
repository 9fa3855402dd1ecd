package tapset_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/driver"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// syscallAliases lists the calls syscalls.stp defines syscall.NAME for.
func syscallAliases(t *testing.T) []string {
	t.Helper()
	stp, _ := tapset.Library()
	macros, errs := tapset.Macros()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var names []string
	for _, src := range stp {
		if src.Name != "tapset/syscalls.stp" {
			continue
		}
		f, err := syntax.Parse(src, &syntax.Config{Tapset: true, Arch: "x86_64", Macros: macros})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			a, ok := d.(*syntax.AliasDecl)
			if !ok {
				continue
			}
			for _, n := range a.Names {
				if len(n.Components) == 2 && n.Components[0].Name == "syscall" {
					names = append(names, n.Components[1].Name)
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("no syscall.NAME aliases in tapset/syscalls.stp")
	}
	return names
}

// TestSyscallAliasesLoad compiles every syscall.NAME alias of the tapset
// into a program of its own, on the call's own trace event, using its
// argstr, and loads them all into the kernel (pass 4): what an alias
// computes must compile in a kernel probe and pass the verifier. A call the
// running kernel lacks is skipped (the alias's event is optional).
func TestSyscallAliasesLoad(t *testing.T) {
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Skipf("loads BPF programs: %v", err)
	}
	var script strings.Builder
	names := syscallAliases(t)
	for _, name := range names {
		fmt.Fprintf(&script, "probe syscall.%s ? { printf(\"%%s(%%s)\\n\", name, argstr) }\n", name)
	}
	var stdout, stderr bytes.Buffer
	if status := driver.Main([]string{"-p4", "-e", script.String()}, strings.NewReader(""), &stdout, &stderr); status != 0 {
		t.Fatalf("pass 4 of the %d aliases failed (status %d):\n%s", len(names), status, stderr.String())
	}
}
