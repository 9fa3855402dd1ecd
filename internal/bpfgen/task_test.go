package bpfgen_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/kernelside"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/tapset/tapsettest"
)

// TestTaskFields checks ppid() and euid() against the test process, the
// child's parent.
func TestTaskFields(t *testing.T) {
	requireBPF(t)
	got := runScript(t, `global once; probe begin { if (once++) next; printf("%d %d\n", ppid(), euid()) }`,
		newChild(t, "sh", "-c", "read x"))
	if want := fmt.Sprintf("%d %d\n", os.Getpid(), os.Geteuid()); got != want {
		t.Errorf("ppid euid: %q, want %q", got, want)
	}
}

// TestTaskFunctions checks the task_* functions of a niced child against
// its /proc/PID/stat, read while the child waits: each value is printed
// beside the one /proc gives, and both go through an autocast (t->pid on a
// local assigned task_current(), a function returning task_parent(), a
// ternary) as well as through the tapset's functions.
func TestTaskFunctions(t *testing.T) {
	requireBPF(t)
	c := newChild(t, "nice", "-n", "7", "sh", "-c", "read x")
	stat := waitForComm(t, c.cmd.Process.Pid, "sh")
	// pid (comm) state ppid ... field 18 priority, 19 nice
	comm := string(stat[strings.IndexByte(string(stat), '(')+1 : strings.LastIndexByte(string(stat), ')')])
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	want := fmt.Sprintf("%d %d %s %s %s %s|%d %s 0 1\nEXIT\n", c.cmd.Process.Pid, c.cmd.Process.Pid, f[1], comm, f[15], f[16], c.cmd.Process.Pid, f[1])
	prog := elaborateWith(t, `
function parent_of(t) { return task_parent(t) }
probe kernel.trace("raw_syscalls:sys_enter") {
	if (pid() != target()) next
	t = task_current()
	p = t ? parent_of(t) : 0
	printf("%d %d %d %s %d %d|", task_pid(t), task_tid(t), task_pid(task_parent(t)), task_execname(t), task_prio(t), task_nice(t))
	printf("%d %d %d %d\n", t->tgid, p->tgid, task_state(t), task_cpu(t) == cpu())
	exit()
}`, sema.Options{Library: tapsettest.Files(t)})
	var out recorder
	s := compile(t, prog, kernelside.Config{Target: true}, c)
	start(t, s, c, &out)
	s.Close()
	if got := string(out.out); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// waitForComm waits until process pid runs the program called comm (nice
// has exec'd sh) and returns its /proc/PID/stat.
func waitForComm(t *testing.T, pid int, comm string) []byte {
	for range 200 {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(stat), "("+comm+")") {
			return stat
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d never ran %s", pid, comm)
	return nil
}
