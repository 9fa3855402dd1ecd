// Package tracer runs the tracers bpftap's benchmarks compare (bpftap,
// bpftrace, syscount, stapbpf, the floor tool) the same way: each alone in a
// process group, attachment detected from the kernel's side (attached.go),
// stopped as a user's Ctrl-C stops it.
package tracer

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Tracer is a running tracer process, alone in its own process group so
// that a signal reaches the helpers it starts (stap-oracle runs stapbpf).
type Tracer struct {
	cmd            *exec.Cmd
	Stdout, stderr bytes.Buffer
	start          time.Time
	exited         chan struct{}
}

// Launch starts argv with env added to the environment.
func Launch(argv, env []string) (*Tracer, error) {
	t := &Tracer{cmd: exec.Command(argv[0], argv[1:]...), exited: make(chan struct{})}
	t.cmd.Env = append(os.Environ(), env...)
	t.cmd.Stdout, t.cmd.Stderr = &t.Stdout, &t.stderr
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t.start = time.Now()
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { t.cmd.Wait(); close(t.exited) }()
	return t, nil
}

// WaitAttached polls every millisecond until the tracer's probes are
// attached and returns the time from launch to then.
func (t *Tracer) WaitAttached(timeout time.Duration) (time.Duration, error) {
	deadline := t.start.Add(timeout)
	for {
		if attachedToSyscalls(t.cmd.Process.Pid) {
			return time.Since(t.start), nil
		}
		select {
		case <-t.exited:
			return 0, fmt.Errorf("exited before attaching: %s", t.Failure())
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Stop()
			return 0, fmt.Errorf("not attached after %v: %s", timeout, t.Failure())
		}
	}
}

// Stop interrupts the tracer as a user's Ctrl-C would (tracers print their
// results then) and kills it if it has not exited 20 seconds later.
func (t *Tracer) Stop() {
	syscall.Kill(-t.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-t.exited:
	case <-time.After(20 * time.Second):
		syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		<-t.exited
	}
}

// Failure describes why the tracer stopped: its first lines of stderr or
// its exit status.
func (t *Tracer) Failure() string {
	if msg := FirstLines(t.stderr.String()); msg != "" {
		return msg
	}
	return t.cmd.ProcessState.String()
}

// FirstLines is the first two lines of s, joined by " / ": how the
// benchmarks quote an error.
func FirstLines(s string) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", 3)
	if len(lines) > 2 {
		lines = lines[:2]
	}
	return strings.Join(lines, " / ")
}
