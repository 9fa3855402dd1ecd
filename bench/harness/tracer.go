package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// tracer is a running tracer process, alone in its own process group so
// that a signal reaches the helpers it starts (stap-oracle runs stapbpf).
type tracer struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	start          time.Time
	exited         chan struct{}
}

func launch(argv, env []string) (*tracer, error) {
	t := &tracer{cmd: exec.Command(argv[0], argv[1:]...), exited: make(chan struct{})}
	t.cmd.Env = append(os.Environ(), env...)
	t.cmd.Stdout, t.cmd.Stderr = &t.stdout, &t.stderr
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t.start = time.Now()
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { t.cmd.Wait(); close(t.exited) }()
	return t, nil
}

// waitAttached polls every millisecond until the tracer's probes are
// attached and returns the time from launch to then.
func (t *tracer) waitAttached(timeout time.Duration) (time.Duration, error) {
	deadline := t.start.Add(timeout)
	for {
		if attachedToSyscalls(t.cmd.Process.Pid) {
			return time.Since(t.start), nil
		}
		select {
		case <-t.exited:
			return 0, fmt.Errorf("exited before attaching: %s", t.failure())
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.stop()
			return 0, fmt.Errorf("not attached after %v: %s", timeout, t.failure())
		}
	}
}

// stop interrupts the tracer as a user's Ctrl-C would (tracers print their
// results then) and kills it if it has not exited 20 seconds later.
func (t *tracer) stop() {
	syscall.Kill(-t.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-t.exited:
	case <-time.After(20 * time.Second):
		syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		<-t.exited
	}
}

// failure describes why the tracer stopped: its first lines of stderr or
// its exit status.
func (t *tracer) failure() string {
	if msg := firstLines(t.stderr.String()); msg != "" {
		return msg
	}
	return t.cmd.ProcessState.String()
}

// runWorkload runs the getppid workload (through wrapper, if any) and
// returns its ns per call.
func runWorkload(wrapper []string, workload string, n, cpu int) (float64, error) {
	argv := append(append([]string{}, wrapper...), workload, fmt.Sprint("-n=", n), fmt.Sprint("-cpu=", cpu))
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, errors.Join(err, errors.New(stderr.String()))
	}
	var ns float64
	if _, err := fmt.Sscan(string(out), &ns); err != nil {
		return 0, fmt.Errorf("workload printed %q", out)
	}
	return ns, nil
}
