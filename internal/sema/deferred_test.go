package sema

import (
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/probestest"
	"github.com/bpftap/bpftap/internal/syntax"
)

// TestDeferPrinted checks which string locals DeferPrinted leaves to user
// space, and the leaves their assignments keep in the kernel: each
// assignment it rewrote, as -p2 would print it.
func TestDeferPrinted(t *testing.T) {
	const point = `probe kernel.trace("sched_process_exec") `
	lib := libraryFiles(t)
	for _, c := range []struct{ name, script, want string }{
		{"sprintf of a local and a builtin", `{ x = pid(); s = sprintf("%d-%d", x, tid()); printf("%s\n", s) }`,
			"(s) = (__deferred_s_1(x, tid()))"},
		{"every assignment, the number of each", `{ if (pid()) s = sprintf("%d", tid()) else s = "none"; println(s) }`,
			"(s) = (__deferred_s_1(tid())); (s) = (__deferred_s_2())"},
		{"compared: kept", `{ s = sprintf("%d", pid()); if (s == "1") print(s) }`, ""},
		{"read by its own assignment: kept", `{ s = "a"; s = s . sprint(pid()); print(s) }`, ""},
		{"an s* call's argument: kept, the other deferred", `{ s = sprintf("%d", pid()); t = sprintf("<%s>", s); print(t) }`,
			"(t) = (__deferred_t_1(s))"},
		{"a builtin under a conditional: kept", `{ s = pid() > 1 ? sprintf("%d", tid()) : ""; print(s) }`, ""},
		{"a local under a conditional", `{ x = tid(); s = pid() > 1 ? sprintf("%d", x) : ""; print(s) }`,
			"(s) = (__deferred_s_1(pid(), x))"},
		{"a builtin after &&: kept", `{ s = sprint(pid() && tid()); print(s) }`, ""},
		{"only leaves: kept", `{ s = execname(); print(s) }`, ""},
		{"division: a leaf", `{ s = sprintf("%d", pid() / 2); print(s) }`, "(s) = (__deferred_s_1((pid()) / (2)))"},
		{"%m: a leaf, the only one: kept", `{ s = sprintf("%m", pid()); print(s) }`, ""},
		{"pure and impure functions",
			`{ s = parity(pid()) . withGlobal(tid()); print(s) }
global g
function parity:string(x:long) { if (x & 1) return "odd"; y = x >> 1; return y ? "even" : "zero" }
function withGlobal:string(x:long) { return sprintf("%d", x + g) }`,
			"(s) = (__deferred_s_1(pid(), withGlobal(tid())))"},
		{"a quoted user string: its address and its read", `{ a = pid(); s = sprintf("<%s>", user_string_quoted(a)); print(s) }`,
			"(s) = (__deferred_s_1(a, __user_string_raw(a)))"},
		{"a quoted user string alone", `{ s = user_string_quoted(16); print(s) }`, "(s) = (__deferred_s_1(16, __user_string_raw(16)))"},
		{"a quoted user string of a call: a leaf", `{ s = sprintf("<%s>", user_string_quoted(pid())); print(s) }`,
			"(s) = (__deferred_s_1(user_string_quoted(pid())))"},
		{"a quoted user string under a conditional: kept", `{ a = pid(); s = a > 1 ? user_string_quoted(a) : ""; print(s) }`, ""},
		{"a loop: not pure", `{ s = count(pid()); print(s) }
function count:string(x:long) { n = 0; while (x) { x >>= 1; n++ }; return sprint(n) }`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			prog, err := elaborateKernelText(t, lib, point+c.script)
			if err != nil {
				t.Fatal(err)
			}
			DeferPrinted(prog)
			DeferPrinted(prog) // a second call changes nothing
			if got := deferredAssignments(prog); got != c.want {
				t.Errorf("deferred:\n%s\nwant:\n%s", got, c.want)
			}
			sites := 0
			for _, fs := range prog.Deferred {
				sites += len(fs)
			}
			if want := strings.Count(c.want, "__deferred_"); sites != want {
				t.Errorf("%d functions for %d assignments", sites, want)
			}
		})
	}
}

func elaborateKernelText(t *testing.T, lib []*syntax.File, text string) (*Program, error) {
	f, err := syntax.Parse(syntax.NewSource("<input>", text), &syntax.Config{})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return Elaborate([]*syntax.File{f}, Options{Library: lib, Registry: probes.BuiltinWith(probestest.New(), probes.Config{}), KernelProbes: true, NoWarnings: true})
}

// deferredAssignments renders the rewritten assignments of prog's probes.
func deferredAssignments(prog *Program) string {
	var list []string
	for _, p := range prog.Probes {
		syntax.Walk(p.Body, func(n syntax.Node) bool {
			if a, ok := n.(*syntax.Assign); ok {
				if id, ok := a.LHS.(*syntax.Ident); ok && prog.Deferred[id.Var] != nil {
					list = append(list, syntax.ExprString(a))
				}
			}
			return true
		})
	}
	return strings.Join(list, "; ")
}
