package driver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bpftap/bpftap/internal/probes"
)

// The -c command.
//
// The command starts before pass 3, so that target() is a constant of the
// kernel programs, but it must not run until they are attached, and never
// untraced. bpftap starts a copy of itself as the holder (HoldEnv in its
// environment, the command's words as arguments, the read end of a pipe
// as fd 3) and the holder waits for a byte on that pipe, then execs the
// command in its own place: the target's pid is the holder's. The holder
// dies with bpftap (PR_SET_PDEATHSIG), and end of file on the pipe, which
// is all it sees when bpftap exits or dies without releasing it, makes it
// exit instead of running the command. Between its release and the
// command's exec the holder makes no system call but execve, so a script
// counting the target's events sees the command, not a wrapper (stap's
// child shows as stapio the same way).
//
// As staprun does, a plain command is word-expanded as wordexp(3) would
// (quotes, variables, globs; here by sh, before the command starts) and
// exec'd itself; one with shell metacharacters runs under /bin/sh -c.
// When the command ends on its own with a failure, bpftap reports it as
// stapio does ("WARNING: Child process exited with status N" or "... with
// signal N (NAME)") and exits 1.

// HoldEnv holds the command, as the user gave it, in the holder's
// environment; the command does not inherit it.
const HoldEnv = "BPFTAP_HOLD_COMMAND"

// The holder runs main on the process's main thread (LockOSThread in an
// init function does that), so that the command's execve is entered on
// the thread whose id is the pid: an execve made by another thread returns
// under the pid's id, not its own, and a tracer pairing a call's entry and
// return by thread (strace.stp, @entry) would lose it.
func init() {
	if Holding() {
		runtime.LockOSThread()
	}
}

// Holding reports whether this process is a holder; main must then call Hold.
func Holding() bool { return os.Getenv(HoldEnv) != "" }

// Hold is the holder: it waits for the release byte on fd 3 and execs the
// command os.Args[1:], or exits 1 at end of file. A command that cannot
// run fails as staprun's child does: perror(command), exit status 1. It
// does not return.
//
// Everything the exec needs is built before the wait, so that after it the
// thread allocates nothing and execs with a raw system call: a script sees
// the read's return, at most a futex wake of the Go runtime's monitor
// thread, and execve, where it saw mmap and sched_yield too. (The holder's
// other runtime threads, asleep in futex, return -ERESTARTSYS when execve
// ends them; a holder without them would need a C program.)
func Hold() {
	command, argv := os.Getenv(HoldEnv), os.Args[1:]
	unix.CloseOnExec(3)
	exe, err := prepareExec(argv)
	if !released(3) {
		os.Exit(1) // bpftap exited or died before releasing the command
	}
	if err == nil {
		err = exe.exec()
	}
	fmt.Fprintf(os.Stderr, "%s: %s\n", command, strerror(err))
	os.Exit(1)
}

// released waits for the release byte on fd: false at end of file.
func released(fd int) bool {
	var b [1]byte
	for {
		n, _, errno := syscall.Syscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1)
		if errno != syscall.EINTR {
			return errno == 0 && n == 1
		}
	}
}

// execArgs are execve's arguments, as C strings.
type execArgs struct {
	path       *byte
	argv, envv []*byte
}

// prepareExec finds the command's program and builds execve's arguments.
func prepareExec(argv []string) (execArgs, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return execArgs{}, err
	}
	var exe execArgs
	if exe.path, err = syscall.BytePtrFromString(path); err != nil {
		return execArgs{}, err
	}
	if exe.argv, err = syscall.SlicePtrFromStrings(argv); err != nil {
		return execArgs{}, err
	}
	exe.envv, err = syscall.SlicePtrFromStrings(withoutHoldEnv(os.Environ()))
	return exe, err
}

// exec replaces the process with the command; it returns only its error.
func (e execArgs) exec() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(e.path)),
		uintptr(unsafe.Pointer(&e.argv[0])), uintptr(unsafe.Pointer(&e.envv[0])))
	return errno
}

// strerror is the C library's text for why a command could not run.
func strerror(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, exec.ErrNotFound):
		errno = syscall.ENOENT
	case !errors.As(err, &errno):
		return err.Error()
	}
	text := errno.Error()
	return strings.ToUpper(text[:1]) + text[1:]
}

func withoutHoldEnv(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, HoldEnv+"=") {
			out = append(out, e)
		}
	}
	return out
}

// target is the process of -c (started but held until release) or -x.
type target struct {
	cmd    *exec.Cmd
	gate   *os.File      // write end of the pipe the holder waits on
	exited chan struct{} // made by release, closed once the command has been reaped
	killed bool          // bpftap ended the command (the script ended first)
	x      int
}

// shellMetacharacters are the characters wordexp(3) refuses (WRDE_BADCHAR),
// and the backquote: a command substitution must run under the probes, in
// the command's shell, not while its words are expanded.
const shellMetacharacters = "|&;<>(){}\n`"

// startTarget starts the -c command held before exec, or records -x's pid.
func (s *session) startTarget() (*target, error) {
	if s.opts.Command == "" {
		return &target{x: s.opts.TargetPID}, nil
	}
	argv, err := commandWords(s.opts.Command)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("ERROR: cannot start '%s': %v", s.opts.Command, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(self, argv...)
	cmd.Env = append(os.Environ(), HoldEnv+"="+s.opts.Command)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The death signal follows the thread that forks: fork from one that
	// lives as long as the process (Go never ends an unlocked thread).
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("ERROR: cannot start '%s': %v", s.opts.Command, err)
	}
	return &target{cmd: cmd, gate: w}, nil
}

// commandWords are the words of a -c command: wordexp's expansion of a
// plain command, else /bin/sh -c and the command.
func commandWords(command string) ([]string, error) {
	if strings.ContainsAny(command, shellMetacharacters) {
		return []string{"/bin/sh", "-c", command}, nil
	}
	var stderr bytes.Buffer
	expand := exec.Command("/bin/sh", "-c", `eval "set -- $1" && printf '%s\0' "$@"`, "sh", command)
	expand.Stderr = &stderr
	out, err := expand.Output()
	if err != nil {
		return nil, fmt.Errorf("ERROR: cannot expand -c '%s': %s", command, strings.TrimSpace(stderr.String()))
	}
	words := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(out) == 0 {
		return nil, fmt.Errorf("ERROR: -c '%s' names no command", command)
	}
	return words, nil
}

// commandExecutable is the executable of a plain -c command (one without
// shell metacharacters, exec'd itself): its first word resolved as stap
// resolves process("PATH"); "" for none, or one that names no file.
func commandExecutable(command string) string {
	if command == "" || strings.ContainsAny(command, shellMetacharacters) {
		return ""
	}
	argv, err := commandWords(command)
	if err != nil {
		return ""
	}
	path := probes.ResolveExecutable(argv[0])
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}

// holderExecutable is the executable of the holder of a -c command
// (bpftap's own), "" without one.
func holderExecutable(command string) string {
	if command == "" {
		return ""
	}
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return self
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
	_, err := t.gate.Write([]byte{1})
	t.gate.Close()
	t.exited = make(chan struct{})
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

// kill ends a -c command still running when the script ends, as stap
// does, or a held one that was never released.
func (t *target) kill() {
	if t.cmd == nil || t.killed {
		return
	}
	if t.exited != nil {
		select {
		case <-t.exited:
			return
		default:
		}
	}
	t.killed = true
	t.cmd.Process.Kill()
	t.gate.Close()
	if t.exited == nil {
		t.cmd.Wait()
	}
}

// finish kills the command if it is still running and returns stapio's
// warning about a command that ended on its own with a failure, or "".
func (t *target) finish() string {
	t.kill()
	if t.cmd == nil || t.killed {
		return ""
	}
	<-t.exited
	ws, ok := t.cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return ""
	case ws.Signaled():
		name := ws.Signal().String()
		return fmt.Sprintf("WARNING: Child process exited with signal %d (%s)", int(ws.Signal()), strings.ToUpper(name[:1])+name[1:])
	case ws.ExitStatus() != 0:
		return fmt.Sprintf("WARNING: Child process exited with status %d", ws.ExitStatus())
	}
	return ""
}

// targetExecutable is the executable process.function probes without a
// path mean: the -c command's (its first word, found in PATH), or the -x
// process's; "" when there is no target. A -c command that needs a shell
// runs /bin/sh. The error says why the -x process's cannot be read (not
// bpftap's process, without CAP_SYS_PTRACE: permission denied).
func (s *session) targetExecutable() (string, error) {
	if s.opts.TargetPID != 0 {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", s.opts.TargetPID))
		if err != nil {
			return "", fmt.Errorf("process %d (-x): %w", s.opts.TargetPID, errors.Unwrap(err))
		}
		return exe, nil
	}
	if s.opts.Command == "" {
		return "", nil
	}
	argv, err := commandWords(s.opts.Command)
	if err != nil {
		return "", nil
	}
	if exe, err := exec.LookPath(argv[0]); err == nil {
		if abs, err := filepath.Abs(exe); err == nil {
			return abs, nil
		}
	}
	return argv[0], nil
}
