package bpfgen

import (
	"fmt"
	"os"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"golang.org/x/sys/unix"
)

// TestTracepointArgs counts a child's getppid calls through $id, the
// second argument of raw_syscalls:sys_enter, and reads a member chain
// ($regs->orig_ax) through bpf_probe_read_kernel.
func TestTracepointArgs(t *testing.T) {
	requireBPF(t)
	const calls = 2000
	src := fmt.Sprintf(`global n, m
probe kernel.trace("raw_syscalls:sys_enter") { if ($id == %d) n++; if ($regs->orig_ax == %d) m++ }`, unix.SYS_GETPPID, unix.SYS_GETPPID)
	f, err := syntax.Parse(syntax.NewSource("<input>", src), syntax.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prog, err := sema.Elaborate([]*syntax.File{f}, sema.Options{NoWarnings: true, KernelProbes: true})
	if err != nil {
		t.Fatal(err)
	}
	probe := prog.Probes[0]
	m := New(prog, Config{Target: true})
	p, err := m.Compile(probe, bpfrt.TPBTF)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := m.CreateMaps()
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	loaded := load(t, p, ms, probe.Context.Tracepoint)
	defer loaded.Close()
	if err := loaded.Attach(); err != nil {
		t.Fatal(err)
	}
	c := newChild(t, os.Args[0])
	c.cmd.Env = append(os.Environ(), fmt.Sprintf("BPFGEN_GETPPID=%d", calls))
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ms.ByName[TargetMap].Put(uint32(c.cmd.Process.Pid), uint8(1))
	c.start.Write([]byte("\n"))
	c.start.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	n, mm := sumGlobal(t, m, ms, "n", uint32(0)), sumGlobal(t, m, ms, "m", uint32(0))
	if n != calls || mm != calls {
		t.Errorf("$id counted %d, $regs->orig_ax %d getppid calls; the child made %d", n, mm, calls)
	}
}
