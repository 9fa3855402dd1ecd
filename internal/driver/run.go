package driver

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/kernelside"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/tapset"
)

// execute runs pass 5: begin probes, then the kernel programs are attached
// and the -c command released, timers and kernel events until the script
// exits, the command ends, the -T timeout expires or a signal arrives; then
// the programs are detached, the ring drained and the end probes run.
func (s *session) execute(prog *sema.Program, ks *kernelside.Session, limits tapset.Limits, target *target) int {
	out, closeOut, err := s.output()
	if err != nil {
		return s.fail(5, "run", err)
	}
	defer closeOut()

	ctx, cancel := s.runContext()
	defer cancel()
	in, err := interp.New(prog, interp.Config{Stdout: out, Stderr: s.stderr, Limits: limits, Target: target.pid(),
		Storage: ks.Storage, Skipped: ks.Skipped, Timing: s.opts.Timing})
	if err != nil {
		return s.fail(5, "run", err)
	}
	if s.opts.Verbose > 0 {
		fmt.Fprintln(s.stderr, "Pass 5: starting run.")
	}
	in.Begin()
	if err := s.attach(ks, in); err != nil {
		in.KernelExit()
		fmt.Fprintln(s.stderr, err)
	} else if err := target.release(cancel); err != nil {
		fmt.Fprintf(s.stderr, "ERROR: %v\n", err)
	}
	in.Run(ctx)
	s.stopKernel(ks, in)
	status := in.End()
	if s.opts.Timing {
		printHitReport(out, prog, ks, in)
	}
	target.kill()
	if status != 0 {
		fmt.Fprintln(s.stderr, "Pass 5: run failed.  [man error::pass5]")
	} else if s.opts.Verbose > 0 {
		fmt.Fprintf(s.stderr, "Pass 5: run completed in %s.\n", s.timer.elapsed())
	}
	return status
}

// limits applies the -D NAME=VALUE settings to the interpreter's limits. Names
// that are not run-time limits only meant something to stap's C compiler and are
// accepted without effect.
func (s *session) limits() (tapset.Limits, error) {
	l := tapset.DefaultLimits()
	for _, d := range s.opts.Defines {
		name, value, ok := strings.Cut(d, "=")
		if !ok {
			continue
		}
		if _, err := l.Define(name, value); err != nil {
			return l, fmt.Errorf("ERROR: -D %s: %v", d, err)
		}
	}
	return l, nil
}

// output returns where the script's output goes: -o FILE or standard output.
func (s *session) output() (io.Writer, func(), error) {
	if s.opts.Output == "" {
		return s.stdout, func() {}, nil
	}
	f, err := os.Create(s.opts.Output)
	if err != nil {
		return nil, nil, fmt.Errorf("ERROR: cannot open output file: %v", err)
	}
	return f, func() { f.Close() }, nil
}

// target is the process of -c (started but held until release) or -x.
type target struct {
	cmd    *exec.Cmd
	gate   *os.File      // write end of the pipe the held command waits on
	exited chan struct{} // closed once the released command has been reaped
	x      int
}

// holdScript makes sh wait for a line on fd 3, then run the user's command
// in its own place, as staprun does: a plain command is word-expanded
// (quotes, variables, globs, as wordexp(3)) and exec'd, so target() is the
// command itself; one with shell metacharacters runs under sh -c.
const (
	holdScript      = `read _ <&3; exec 3<&-; eval "exec $0"`
	holdShellScript = `read _ <&3; exec 3<&-; exec /bin/sh -c "$0"`
)

// shellMetacharacters are the characters wordexp(3) refuses (WRDE_BADCHAR).
const shellMetacharacters = "|&;<>(){}\n"

// startTarget starts the -c command held before exec, or records -x's pid.
func (s *session) startTarget() (*target, error) {
	if s.opts.Command == "" {
		return &target{x: s.opts.TargetPID}, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	hold := holdScript
	if strings.ContainsAny(s.opts.Command, shellMetacharacters) {
		hold = holdShellScript
	}
	cmd := exec.Command("/bin/sh", "-c", hold, s.opts.Command)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("ERROR: cannot start '%s': %v", s.opts.Command, err)
	}
	return &target{cmd: cmd, gate: w, exited: make(chan struct{})}, nil
}

func (t *target) pid() int {
	if t.cmd != nil && t.cmd.Process != nil {
		return t.cmd.Process.Pid
	}
	return t.x
}

// release lets the held command run and arranges for done to be called when it exits.
func (t *target) release(done func()) error {
	if t.cmd == nil {
		return nil
	}
	_, err := t.gate.Write([]byte("go\n"))
	t.gate.Close()
	go func() {
		t.cmd.Wait()
		close(t.exited)
		done()
	}()
	if err != nil {
		return errors.New("the target command exited before it was started")
	}
	return nil
}

// kill ends a -c command still running when the script ends, as stap does.
func (t *target) kill() {
	if t.cmd == nil {
		return
	}
	select {
	case <-t.exited:
	default:
		t.cmd.Process.Kill()
		if t.gate != nil {
			t.gate.Close()
		}
	}
}
