package probes

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/kernel"
)

// TestRunningKernel resolves points and context expressions against the
// machine's own kernel; it is skipped only when the kernel has no BTF.
func TestRunningKernel(t *testing.T) {
	if _, err := os.Stat(kernel.VMLinuxPath); errors.Is(err, os.ErrNotExist) {
		t.Skip("skipped: " + kernel.ErrNoBTF.Error())
	}
	reg := BuiltinFor(RunningKernel{})
	for _, c := range []struct{ point, want string }{
		{`kernel.trace("sched_process_exec")`, `kernel.trace("sched:sched_process_exec")`},
		{`kernel.trace("raw_syscalls:sys_e*")`, `kernel.trace("raw_syscalls:sys_enter") | kernel.trace("raw_syscalls:sys_exit")`},
	} {
		if got := resolve(t, reg, c.point); got != c.want {
			t.Errorf("%s: got %s want %s", c.point, got, c.want)
		}
	}
	tps, err := kernel.Tracepoints()
	if err != nil {
		t.Fatal(err)
	}
	exec, _ := kernel.MatchTracepoints(tps, "sched:sched_process_exec")
	a, err := attachTracepoint(RunningKernel{}, exec[0], false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := &Context{kernel: RunningKernel{}, Attach: a}
	start := time.Now()
	for _, c := range []struct{ expr, want string }{
		{"$$parms", `string param=-1 format="p=%p old_pid=%#x bprm=%p" args=3`},
		{"$old_pid", "long param=1"},
	} {
		if got := describeAccess(t, ctx, c.expr); got != c.want {
			t.Errorf("%s: got %s want %s", c.expr, got, c.want)
		}
	}
	// Offsets differ between kernels: check the shape only.
	for _, expr := range []string{"$bprm->filename", "$p->comm", "$p->real_parent->tgid", `@cast($p, "struct task_struct")->pid`} {
		if got := describeAccess(t, ctx, expr); len(got) < 4 || got[:4] != "long" {
			t.Errorf("%s: %s", expr, got)
		}
	}
	t.Logf("context expressions resolved in %v", time.Since(start))
}
