package sema

import (
	"testing"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/probestest"
	"github.com/bpftap/bpftap/internal/syntax"
)

// TestLowerAtOps checks what the @ operators become, against the fake
// kernel's enums (probestest): the printed arguments of each probe, in
// order.
func TestLowerAtOps(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{`probe begin { println(@enum("PIDTYPE_TGID"), @enum("BIG_ONE"), @const(" BIG_NEG ")) }`, "1 1099511627776 -1"},
		{`probe begin { println(@enumname(2, "pid_type"), @enumname(1099511627776, "enum big", "kernel"), @enumname(7, "pid_type")) }`,
			`"PIDTYPE_PGID" "BIG_ONE" "7"`},
		{`probe begin { x = 1; println(@enumname(x, "pid_type"), @enumname(x + 1, "pid_type")) }`, "__enumname_0(x) __enumname_0((x) + (1))"},
		{`probe kernel.trace("enumname:pid_type_argument") { println(@enumname($type)) }`, "__enumname_0($type)"},
		{`probe begin { println(@kderef(4, 16), @uderef(1, 0), @kregister(0), @uregister(7)) }`,
			"@kderef(4, 16) @uderef(1, 0) @kregister(0) @uregister(7)"},
		{`global a probe a = begin { println(@probewrite(x), @probewrite(y), @probewrite(a)) } probe a { x = 1; a[1]++ }`,
			"1 0 1"},
		{`probe a += begin { println(@probewrite(x)) } probe a { x = 1 }`, "1"},
		{`probe a += begin { println(@probewrite(x)) } probe a { }`, "0"},
	} {
		if got := printedArgs(t, c.script); got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.script, got, c.want)
		}
	}
}

// printedArgs elaborates script (in guru mode) and renders the arguments
// of the first println of its first probe.
func printedArgs(t *testing.T, script string) string {
	t.Helper()
	f, err := syntax.Parse(syntax.NewSource("<input>", script), &syntax.Config{Guru: true})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Elaborate([]*syntax.File{f}, Options{Guru: true, NoWarnings: true, KernelProbes: true, Unoptimized: true,
		Registry: probes.BuiltinWith(probestest.New(), probes.Config{})})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	got := ""
	syntax.Walk(prog.Probes[0].Body, func(n syntax.Node) bool {
		if p, ok := n.(*syntax.PrintCall); ok && got == "" {
			for i, a := range p.Args {
				if i > 0 {
					got += " "
				}
				got += syntax.ExprString(a)
			}
		}
		return true
	})
	return got
}
