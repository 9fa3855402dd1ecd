package kernelside

import (
	"regexp"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/bpftap/bpftap/internal/target/targettest"
	"golang.org/x/sys/unix"
)

// TestCanFindTasks loads the task lookup in every kind of program bpftap
// attaches. BTF-typed tracepoints (tracing programs) may always call
// bpf_task_from_pid; each other kind may, or is refused with the
// verifier's reason. The answers are logged: on Linux 6.18 classic
// tracepoints and perf events may, raw tracepoints and uprobes may not.
func TestCanFindTasks(t *testing.T) {
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Skipf("requires bpf: %v", err)
	}
	tps, err := kernel.Tracepoints()
	if err != nil {
		t.Fatal(err)
	}
	var exec *kernel.Tracepoint
	for _, tp := range tps {
		if tp.Event == "sched_process_exec" {
			exec = tp
		}
	}
	if exec == nil || exec.Proto == 0 {
		t.Fatalf("no BTF prototype of sched:sched_process_exec in %d tracepoints", len(tps))
	}
	k := targettest.Running(t)
	targettest.Require(t, k, target.TaskFromPid)
	if err := CanFindTasks(k, &attach.Point{Kind: attach.TPBTF, Event: exec.Event, System: exec.System, BTFID: exec.Proto}); err != nil {
		t.Errorf("tp_btf: %v", err)
	}
	refusal := regexp.MustCompile(`^the kernel does not let \S+ programs call bpf_task_from_pid \(the kernel's verifier rejected the program: .*bpf_task_from_pid.*\)$`)
	for _, p := range []*attach.Point{
		{Kind: attach.RawTracepoint, Event: exec.Event},
		{Kind: attach.Tracepoint, Event: exec.Event, System: exec.System},
		{Kind: attach.PerfEvent, Perf: &attach.Perf{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK, Period: 1000000}},
		{Kind: attach.Uprobe, Path: "/bin/true"},
	} {
		err := CanFindTasks(k, p)
		if err != nil && !refusal.MatchString(err.Error()) {
			t.Errorf("%s: %v", p.Kind, err)
		}
		t.Logf("%s: %v", p.Kind, err)
	}
}
