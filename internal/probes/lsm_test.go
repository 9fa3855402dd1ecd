package probes

import (
	"testing"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/probes/probestest"
	"github.com/bpftap/bpftap/internal/syntax"
)

// TestLSMContext resolves the $vars of security hooks of the fake kernel:
// the hook's parameters by name, typed by bpf_lsm_HOOK's prototype, in
// args[] words; $ctx, stap's, the first word untyped.
func TestLSMContext(t *testing.T) {
	k := probestest.New()
	for _, c := range []struct{ hook, expr, want string }{
		{"bprm_check_security", "$bprm->filename", "long param=0 offsets=[96] size=8 signed=false kind=0"},
		{"bprm_check_security", "$ctx", "long param=1"},
		{"bprm_check_security", "$$parms", `string param=-1 format="bprm=%p" args=1`},
		{"task_alloc", "$clone_flags", "long param=1"},
		{"task_alloc", "$task->comm", "long param=0 offsets=[2976] size=16 signed=false kind=1 address"},
		{"task_alloc", "$return", "error@-1: $return of security hook task_alloc is stap's verdict (in guru mode, $return = -13 denies with EACCES), and bpftap's lsm probes only observe: their programs return 0, which allows"},
		{"task_alloc", "$nosuch", "error@-1: unable to find parameter '$nosuch' of bpf_lsm_task_alloc (alternatives: $task, $clone_flags, $$name, $$parms, $$vars)"},
	} {
		a, err := lsmAttach(k, c.hook)
		if err != nil {
			t.Fatal(err)
		}
		if a.Kind != attach.LSM || a.Event != c.hook || a.BTFID == 0 || !a.Kind.BTFTyped() {
			t.Errorf("%s: attach point %+v", c.hook, a)
		}
		if got := describeAccess(t, lsmContext(k, a), c.expr); got != c.want {
			t.Errorf("%s %s:\n got %s\nwant %s", c.hook, c.expr, got, c.want)
		}
	}
}

// TestLSMPrologue: lsm.HOOK gives each parameter as a local of its name,
// as stap's tapset aliases do; kernel.lsm("HOOK") gives none.
func TestLSMPrologue(t *testing.T) {
	r := BuiltinFor(probestest.New())
	for point, want := range map[string]string{
		"lsm.task_alloc":           "(task) = ($task)\n(clone_flags) = ($clone_flags)\n",
		`kernel.lsm("task_alloc")`: "",
	} {
		file, err := syntax.Parse(syntax.NewSource("<test>", "probe "+point+" {}"), nil)
		if err != nil {
			t.Fatal(err)
		}
		pts, err := r.Match(file.Decls[0].(*syntax.ProbeDecl).Points[0].Components)
		if err == nil && len(pts) == 1 {
			pts, err = pts[0].Family.Expand(pts[0])
		}
		if err != nil || len(pts) != 1 {
			t.Fatalf("%s: %v %v", point, pts, err)
		}
		got := ""
		if pts[0].Prologue != nil {
			for _, s := range pts[0].Prologue.Stmts {
				got += syntax.StmtString(s) + "\n"
			}
		}
		if got != want {
			t.Errorf("%s: prologue\n%s\nwant\n%s", point, got, want)
		}
	}
}
