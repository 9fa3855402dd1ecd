package kernelside

import (
	"errors"
	"fmt"
	"sync"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
)

// CanFindTasks tells whether programs attached at a may find a task by
// its pid, as pid2task does (bpfgen/tasklookup.go): the kernel lets only
// some program types call bpf_task_from_pid, so bpfgen.TaskLookupProbe is
// loaded for a's kind, once per kind and process. A kernel without the
// kfunc, or whose verifier refuses the probe, gets the reason; a load that
// fails for any other reason (no permission to load programs) is left for
// pass 4 to report, with the script's own programs.
func CanFindTasks(k *target.Kernel, a *attach.Point) error {
	if err := k.Check(target.TaskFromPid); err != nil {
		return fmt.Errorf("this kernel cannot find a task by its pid: %w", err)
	}
	taskLookups.Lock()
	defer taskLookups.Unlock()
	if err, done := taskLookups.byKind[a.Kind]; done {
		return err
	}
	err := loadTaskLookup(k, a)
	taskLookups.byKind[a.Kind] = err
	return err
}

// taskLookups holds CanFindTasks's answers by attach kind.
var taskLookups = struct {
	sync.Mutex
	byKind map[attach.Kind]error
}{byKind: map[attach.Kind]error{}}

func loadTaskLookup(k *target.Kernel, a *attach.Point) error {
	insns, err := bpfgen.TaskLookupProbe(k)
	if err != nil {
		return fmt.Errorf("this kernel cannot find a task by its pid: %w", err)
	}
	prog, err := bpfrt.Load(&bpfrt.ProgramSpec{Name: "probe_task_pid", Attach: a, Instructions: insns})
	var rejected *bpfrt.VerifierError
	switch {
	case errors.As(err, &rejected):
		return fmt.Errorf("the kernel does not let %s programs call bpf_task_from_pid (%v)", a.Kind, rejected)
	case err != nil:
		return nil
	}
	return prog.Close()
}
