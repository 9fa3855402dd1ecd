package target_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/bpftap/bpftap/internal/target/targettest"
)

// TestRunningKernel runs every feature's probe on the running kernel and
// holds the verdict against the table: a feature the kernel's version (and
// configuration) says it has must be detected, though Check takes it for
// granted there without probing. In the guest kernels (5.10, 6.1, 6.12)
// this checks the table's minimum versions and the probes' refusals.
func TestRunningKernel(t *testing.T) {
	k, err := target.Running()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Linux %s", k.Release)
	for _, f := range target.Features {
		if !f.Probed() {
			t.Logf("%s: detected by a trial attach (bpfrt's tests)", f.Name)
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			err := k.Detect(f)
			t.Logf("%s (Linux %s): %v", f.What, f.Since, err)
			switch {
			case err == nil:
			case !errors.Is(err, target.ErrMissing):
				t.Errorf("Detect(%s) = %v, which does not wrap ErrMissing", f.Name, err)
			case targettest.ExcusedFrom(k, f, err) != "":
				t.Skipf("skipped: %v: %s", err, targettest.ExcusedFrom(k, f, err))
			default:
				t.Errorf("%v, but this kernel is Linux %s: the feature must be there", err, k.Release)
			}
			if checked := k.Check(f); (checked == nil) != (err == nil) && targettest.ExcusedFrom(k, f, checked) == "" {
				t.Errorf("Check(%s) = %v where the probe says %v", f.Name, checked, err)
			}
		})
	}
}

func TestAsOf(t *testing.T) {
	k := target.New(target.Version{Major: 6, Minor: 18}, nil, nil, 250)
	old := k.AsOf(target.Version{Major: 5, Minor: 10})
	if !old.Has(target.RingBuffer) || !old.Has(target.ProbeReadKernel) {
		t.Error("Linux 5.10 has the ring buffer and bpf_probe_read_kernel")
	}
	for _, f := range []*target.Feature{target.TaskBTF, target.AtomicFetch, target.GlobalFuncPointers, target.ForEachMapElem, target.MayGoto} {
		err := old.Check(f)
		if !errors.Is(err, target.ErrMissing) || target.Lacks(err) != f {
			t.Errorf("as of 5.10, Check(%s) = %v", f.Name, err)
		}
		if !k.Has(f) {
			t.Errorf("AsOf changed the kernel it was called on: it lacks %s", f.Name)
		}
	}
	msg := old.Check(target.ForEachMapElem).Error()
	if want := "this kernel lacks bpf_for_each_map_elem (Linux 5.13 has it) [as of Linux 5.10]"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	if got := strings.Join(old.Without("test", target.RingBuffer).Masked(), ","); !strings.Contains(got, "ringbuf") || !strings.Contains(got, "task_btf") {
		t.Errorf("Masked() = %s", got)
	}
}

// TestAsOfOnARM64: a feature arm64 got later than x86-64 (trampolines on
// kernel functions, 6.4 against 5.5) is missing from arm64's 6.1 and named
// with arm64's version, and x86-64's 6.1 keeps it.
func TestAsOfOnARM64(t *testing.T) {
	v61 := target.Version{Major: 6, Minor: 1}
	for _, c := range []struct {
		regs *arch.Regs
		want string // "" where 6.1 has fentry
	}{
		{arch.X86_64, ""},
		{arch.ARM64, "this kernel lacks fentry/fexit programs (BPF trampolines) (Linux 6.4 has it) [as of Linux 6.1]"},
	} {
		err := target.New(target.Version{Major: 6, Minor: 18}, c.regs, nil, 250).AsOf(v61).Check(target.Fentry)
		if got := fmt.Sprint(err); c.want == "" && err != nil || c.want != "" && got != c.want {
			t.Errorf("%s as of 6.1: Check(fentry) = %v, want %q", c.regs.Name, err, c.want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want target.Version
		ok   bool
	}{
		{"5.10", target.Version{Major: 5, Minor: 10}, true},
		{"5.10.0-32-amd64", target.Version{Major: 5, Minor: 10}, true},
		{"6.18.0", target.Version{Major: 6, Minor: 18}, true},
		{"6", target.Version{}, false},
		{"v5.10", target.Version{}, false},
		{"", target.Version{}, false},
	} {
		got, err := target.ParseVersion(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseVersion(%q) = %v, %v", c.in, got, err)
		}
	}
}

func TestRunningFromEnvironment(t *testing.T) {
	t.Setenv("BPFTAP_KERNEL_AS_OF", "5.12")
	t.Setenv("BPFTAP_KERNEL_WITHOUT", "v4isa")
	k, err := target.Running()
	if err != nil {
		t.Fatal(err)
	}
	want := "for_each_map_elem,task_pt_regs,func_ip,tracing_scalar_pointers,comm_padded,loop,kprobe_multi,sleepable_uprobes,subprog_tail_calls,runtime_alloc_maps,mem_map_keys,task_from_pid,iter_num,uprobe_multi,v4isa,may_goto,kprobe_session"
	if k.Arch == arch.ARM64 {
		want = "fentry,bpf_lsm," + want // arm64's trampolines on kernel functions: 6.4
	}
	if got := strings.Join(k.Masked(), ","); got != want {
		t.Errorf("masked %s, want %s", got, want)
	}
	t.Setenv("BPFTAP_KERNEL_WITHOUT", "atomics")
	if _, err := target.Running(); err == nil || !strings.Contains(err.Error(), `no kernel feature "atomics"`) {
		t.Errorf("an unknown feature gave %v", err)
	}
}

// TestFeatureTable holds docs/kernels.md's table of features to
// features.go: a row for each feature, as featureRow writes it.
func TestFeatureTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/kernels.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range target.Features {
		if row := featureRow(f); !strings.Contains(string(doc), row+"\n") {
			t.Errorf("docs/kernels.md lacks the row\n%s", row)
		}
	}
}

// featureRow is f's row in docs/kernels.md.
func featureRow(f *target.Feature) string {
	since := f.Since.String()
	if f.OnARM64 != (target.Version{}) {
		since += " (arm64: " + f.OnARM64.String() + ")"
	}
	if f.Config != "" {
		since += " + `" + f.Config + "`"
	}
	without := f.Fallback
	if without == "" {
		without = "refused, in one line naming the feature and the version"
	}
	return fmt.Sprintf("| %s (`%s`) | %s | %s | %s |", f.What, f.Name, since, f.Detect, without)
}
