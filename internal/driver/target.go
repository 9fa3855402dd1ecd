package driver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/probes"
)

// The -c command.
//
// The command starts before pass 3, so that target() is a constant of the
// kernel programs, but it must not run until they are attached, and never
// untraced, and what a script sees of the target must be the command's
// own events from its exec on, as under stap, whose stapio child execs the
// command once released. bpftap starts a holder (holder.go): a program of
// a few instructions, one thread, that makes bpftap its tracer, takes the
// command's name, stops itself and, once released, execs the command in
// its own place: the target's pid is the holder's, and the only event of
// the holder a script can see is the execve that starts the command. The
// holder is stopped in a ptrace stop, which job control cannot end; bpftap
// releases it with PTRACE_DETACH, from the thread that started it (the
// tracer: keeper). It dies with bpftap (PR_SET_PDEATHSIG, and
// PTRACE_O_EXITKILL once stopped), never having run the command.
//
// As staprun does, a plain command is word-expanded as wordexp(3) would
// (quotes, variables, globs; here by sh, in the holder's own process
// before it stops: $$ is the target's pid, $0, $1 ... and $# are bpftap's
// own arguments, as wordexp gives a program its own, and an unset variable
// is an error, as with WRDE_UNDEF) and exec'd itself; one with shell
// metacharacters runs as sh -c COMMAND. A command of words sh would leave
// as they are (/bin/true, dd if=in of=out bs=1) is split at its blanks
// without a shell: no sh runs to expand it (two of them did, 2.5 ms).
// Unlike staprun, whose exec of
// the word "OMP_NUM_THREADS=2" fails, leading words NAME=VALUE are set in
// the command's environment, as a shell sets them (OMP_NUM_THREADS=2
// ./omp): the command is still exec'd itself, the target, and its name is
// found in bpftap's PATH. When the command cannot be
// exec'd, bpftap says why as staprun's child does ("COMMAND: strerror")
// and the child's exit status is 1. When the command ends on its own with
// a failure, bpftap reports it as stapio does ("WARNING: Child process
// exited with status N" or "... with signal N (NAME)") and exits 1. When
// the script ends first, bpftap ends the command and every process it
// started (stap leaves them running).
//
// The holder starts before pass 3, which needs its pid; it holds a few
// milliseconds later, while passes 3 and 4 go on (target.held waits for
// it before pass 5).

// target is the process of -c (started, held until release) or -x.
type target struct {
	command string
	cmd     *exec.Cmd
	keeper  *keeper       // the holder's tracer, until the release
	execErr *os.File      // read end of the pipe the holder writes a failed exec's errno to
	exited  chan struct{} // made by release, closed once the command has been reaped
	killed  bool          // bpftap ended the command (the script ended first)
	x       int
	// output, if set, is where the command writes (its stdout and
	// stderr) instead of bpftap's: --monitor's screen.
	output []io.Writer
}

// shellMetacharacters are the characters wordexp(3) refuses (WRDE_BADCHAR),
// and the backquote: a command substitution must run under the probes, in
// the command's shell, not while its words are expanded.
const shellMetacharacters = "|&;<>(){}\n`"

// startingTarget starts the -c command of a run that reaches pass 5 in
// the background, as pass 2 begins: held before its exec, so that
// target() is a constant of the kernel programs, it runs once they are
// attached, its holder holding it while they are translated and loaded.
// Its start (a fork and the holder's word that it runs: about a
// millisecond) takes the CPU pass 2 leaves idle rather than a place
// between the passes. The function returned waits for the start and
// returns the target (a run without -c has the empty one, or -x's pid).
func (s *session) startingTarget() func() (*target, error) {
	if s.opts.LastPass != 5 {
		return func() (*target, error) { return &target{}, nil }
	}
	var t *target
	var err error
	started := make(chan struct{})
	go func() {
		defer close(started)
		t, err = s.startTarget()
	}()
	return func() (*target, error) {
		<-started
		return t, err
	}
}

// startTarget starts the -c command held before exec, or records -x's pid.
func (s *session) startTarget() (*target, error) {
	if s.opts.Command == "" {
		return &target{x: s.opts.TargetPID}, nil
	}
	program, err := commandProgram(s.opts.Command)
	if err != nil {
		return nil, err
	}
	t := &target{command: s.opts.Command}
	if s.screen != nil {
		t.output = []io.Writer{s.stdout, s.stderr}
	}
	if err := t.start(program); err != nil {
		return nil, output.Failf("cannot start '%s': %w", s.opts.Command, err)
	}
	return t, nil
}

// start starts the holder of the command, which execs program, and
// returns once it runs: held says when it holds.
func (t *target) start(program string) error {
	fd, err := holderFile()
	if err != nil {
		return err
	}
	holder := os.NewFile(uintptr(fd), "holder")
	defer holder.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer w.Close()
	cmd := holderCommand(t.command, program)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if t.output != nil {
		// through pipes, which a process the command leaves behind may
		// keep open: the command's end ends the run a second later
		cmd.Stdout, cmd.Stderr, cmd.WaitDelay = t.output[0], t.output[1], time.Second
	}
	cmd.ExtraFiles = []*os.File{holder, w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	k := &keeper{cmd: cmd, requests: make(chan bool), started: make(chan error), done: make(chan error)}
	if err := k.start(); err != nil {
		r.Close()
		return err
	}
	t.cmd, t.keeper, t.execErr = cmd, k, r
	return nil
}

// held waits for a started holder to hold the command and says why it
// does not; it is nil for -x or no target.
func (t *target) held() error {
	if t.keeper == nil {
		return nil
	}
	if err := t.keeper.holds(); err != nil {
		return output.Failf("cannot start '%s': %w", t.command, err)
	}
	return nil
}

// holderCommand is the command that starts the holder of command, which
// execs program: the holder itself, for sh -c COMMAND; for a plain
// command, sh expanding its words (with bpftap's arguments as its
// positional parameters) and exec'ing the holder with them.
func holderCommand(command, program string) *exec.Cmd {
	name := filepath.Base(program)
	if strings.ContainsAny(command, shellMetacharacters) {
		return &exec.Cmd{Path: "/proc/self/fd/3", Args: []string{name, program, name, "sh", "-c", command}}
	}
	if words, ok := plainWords(command); ok {
		return &exec.Cmd{Path: "/proc/self/fd/3", Args: append([]string{name, program, name}, words...)}
	}
	script := expandScript(command) + " && " + exportAssignments + " && exec /proc/self/fd/3 " +
		shellQuote(program) + " " + shellQuote(name) + ` "$@"`
	return &exec.Cmd{Path: "/bin/sh", Args: append([]string{"sh", "-c", script}, os.Args...)}
}

// exportAssignments is the sh code that exports the leading words
// NAME=VALUE of the positional parameters and shifts them away, leaving
// one word at least (as commandArgv).
const exportAssignments = `while [ $# -gt 1 ]; do case $1 in [A-Za-z_]*=*) case ${1%%=*} in *[!A-Za-z0-9_]*) break;; esac;; *) break;; esac; export "$1"; shift; done`

// expandScript is the sh code that sets the positional parameters to the
// words of a plain command, as wordexp(3) with WRDE_UNDEF expands them.
func expandScript(command string) string {
	return "__bpftap_command=" + shellQuote(command) + `; set -u; eval "set -- $__bpftap_command"`
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// commandProgram is the program a -c command execs: /bin/sh for one with
// shell metacharacters, else its first word (expanded) found in PATH.
// The words are expanded here once to find it and to report a command
// that does not expand; the holder expands them again in its process,
// where $$ is the target's pid.
func commandProgram(command string) (string, error) {
	if strings.ContainsAny(command, shellMetacharacters) {
		return "/bin/sh", nil
	}
	argv, err := expandedArgv(command)
	if err != nil {
		return "", err
	}
	if path, err := exec.LookPath(argv[0]); err == nil {
		return path, nil
	}
	return argv[0], nil // the holder's exec fails and says why
}

// expandedArgv is the argv of a plain command: its words as sh expands
// them, leading assignments left out.
func expandedArgv(command string) ([]string, error) {
	if words, plain := plainWords(command); plain {
		return words, nil
	}
	words, err := commandWords(command)
	if err != nil {
		return nil, err
	}
	return commandArgv(words), nil
}

// plainWords are the words of a command that sh's expansion would leave
// as they are: the command is ASCII letters, digits, blanks and
// punctuation sh gives no meaning to (no quote, $, glob, ~, # or
// backslash), and its first word is not an assignment. ok is false for
// any other command, which sh expands (commandWords).
func plainWords(command string) (words []string, ok bool) {
	for _, c := range []byte(command) {
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && !strings.ContainsRune(plainPunctuation, rune(c)) {
			return nil, false
		}
	}
	words = strings.FieldsFunc(command, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(words) == 0 || assignment.MatchString(words[0]) {
		return nil, false
	}
	return words, true
}

// plainPunctuation are the blanks and the punctuation a word of a plain
// command may have and sh leaves as they are.
const plainPunctuation = " \t_-./,:+=@%^"

// commandWords are the words of a plain -c command, expanded as wordexp(3)
// would in bpftap's process.
func commandWords(command string) ([]string, error) {
	var stderr bytes.Buffer
	expand := exec.Command("/bin/sh", append([]string{"-c", expandScript(command) + ` && printf '%s\0' "$@"`}, os.Args...)...)
	expand.Stderr = &stderr
	out, err := expand.Output()
	if err != nil {
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = err.Error()
		}
		return nil, output.Failf("cannot expand -c '%s': %s", command, why)
	}
	if len(out) == 0 {
		return nil, output.Failf("-c '%s' names no command", command)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"), nil
}

// assignment is a word NAME=VALUE a shell takes as a variable's assignment.
var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// commandArgv is the command's words after its leading assignments, which
// its environment gets (exportAssignments): one word at least.
func commandArgv(words []string) []string {
	for len(words) > 1 && assignment.MatchString(words[0]) {
		words = words[1:]
	}
	return words
}

// keeper is the goroutine that starts the holder, on an OS thread of its
// own that stays its tracer (ptrace requests come from the tracer's
// thread) until it releases or kills it.
type keeper struct {
	cmd      *exec.Cmd
	traced   bool
	requests chan bool  // true: release the holder; false: kill it
	started  chan error // the outcome of cmd.Start
	done     chan error // whether the holder holds, then the request's outcome
	// holding is done's first message, once holds has read it.
	holding     error
	holdingRead bool
}

// start starts the holder and returns once it runs, or why it does not.
func (k *keeper) start() error {
	go k.keep()
	return <-k.started
}

// holds waits for the started holder to hold the command, or says why it
// did not.
func (k *keeper) holds() error {
	if !k.holdingRead {
		k.holding, k.holdingRead = <-k.done, true
	}
	return k.holding
}

func (k *keeper) keep() {
	runtime.LockOSThread()
	// The holder's death signal follows this thread, which outlives it:
	// Go never ends an unlocked thread.
	defer runtime.UnlockOSThread()
	err := k.cmd.Start()
	k.started <- err
	if err != nil {
		return
	}
	err = k.waitHeld()
	k.done <- err
	if err != nil {
		return
	}
	release := <-k.requests
	switch {
	case !release:
		err = k.cmd.Process.Kill()
	case k.traced:
		err = unix.PtraceDetach(k.cmd.Process.Pid)
	default:
		err = k.cmd.Process.Signal(syscall.SIGCONT)
	}
	k.done <- err
}

// waitHeld waits for the holder to stop, then has it killed if its
// tracer dies; it fails when the holder ended first (the holder could not
// run, the command's words no longer expand).
func (k *keeper) waitHeld() error {
	pid := k.cmd.Process.Pid
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return err
		}
	}
	if info.Code != cldTrapped && info.Code != cldStopped {
		k.cmd.Wait()
		return errors.New("the command's holder ended before it held the command")
	}
	k.traced = unix.PtraceSetOptions(pid, unix.PTRACE_O_EXITKILL) == nil
	return nil
}

// The si_code of a child's stop (siginfo's CLD_TRAPPED, CLD_STOPPED).
const (
	cldTrapped = 4
	cldStopped = 5
)

// request has the keeper release (true) or kill the holder, once it
// holds; a holder that ended first needs neither.
func (k *keeper) request(release bool) error {
	if err := k.holds(); err != nil {
		return err
	}
	k.requests <- release
	return <-k.done
}

func (t *target) pid() int {
	if t.cmd != nil && t.cmd.Process != nil {
		return t.cmd.Process.Pid
	}
	return t.x
}

// release lets the held command run and arranges for done to be called
// when it exits. A command that cannot be exec'd is said so, as staprun's
// child says it (perror), and exits 1.
func (t *target) release(done func()) error {
	if t.cmd == nil {
		return nil
	}
	err := t.keeper.request(true)
	t.keeper = nil
	t.exited = make(chan struct{})
	go func() {
		t.cmd.Wait()
		close(t.exited)
		done()
	}()
	defer t.execErr.Close()
	if err != nil {
		return output.Failf("cannot release the target command: %w", err)
	}
	var errno [1]byte
	if n, _ := t.execErr.Read(errno[:]); n == 1 {
		return &execError{t.command, strerror(syscall.Errno(errno[0]))}
	}
	return nil
}

// kill ends a -c command still running when the script ends, with every
// process it started, or a held one that was never released.
func (t *target) kill() {
	if t.cmd == nil || t.killed {
		return
	}
	if t.keeper != nil { // held
		t.killed = true
		t.keeper.request(false)
		t.keeper = nil
		t.execErr.Close()
		t.cmd.Wait()
		return
	}
	select {
	case <-t.exited:
		return
	default:
	}
	t.killed = true
	killTree(t.cmd.Process.Pid)
}

// killTree kills process pid and its descendants. They are stopped first,
// the tree read again until it stops growing, so that none escapes by
// forking meanwhile or is reparented away when its parent dies.
func killTree(pid int) {
	tree := map[int]bool{}
	for grew := true; grew; {
		grew = false
		for _, p := range descendants(pid) {
			if !tree[p] {
				tree[p], grew = true, true
				unix.Kill(p, unix.SIGSTOP)
			}
		}
	}
	for p := range tree {
		unix.Kill(p, unix.SIGKILL)
	}
}

// descendants lists pid and the processes below it, from the children
// files of /proc.
func descendants(pid int) []int {
	list := []int{pid}
	for i := 0; i < len(list); i++ {
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", list[i]))
		for _, f := range files {
			text, _ := os.ReadFile(f)
			for _, w := range strings.Fields(string(text)) {
				if child, err := strconv.Atoi(w); err == nil {
					list = append(list, child)
				}
			}
		}
	}
	return list
}

// finish kills the command if it is still running and returns stapio's
// warning about a command that ended on its own with a failure, or "". A
// command the script ended by bpftap's SIGKILL gets no warning; one that
// was already dying of its own (a script that calls exit() from the
// command's sched_process_exit fires before the command can be reaped)
// gets the warning its own end deserves.
func (t *target) finish() string {
	t.kill()
	if t.cmd == nil || t.exited == nil { // none, or never released
		return ""
	}
	<-t.exited
	ws, ok := t.cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case !ok, t.killed && ws.Signaled() && ws.Signal() == syscall.SIGKILL:
		return ""
	case ws.Signaled():
		name := ws.Signal().String()
		return fmt.Sprintf("Child process exited with signal %d (%s)", int(ws.Signal()), strings.ToUpper(name[:1])+name[1:])
	case ws.ExitStatus() != 0:
		return fmt.Sprintf("Child process exited with status %d", ws.ExitStatus())
	}
	return ""
}

// strerror is the C library's text for errno.
func strerror(errno syscall.Errno) string {
	text := errno.Error()
	return strings.ToUpper(text[:1]) + text[1:]
}

// commandExecutable is the executable of a plain -c command (one without
// shell metacharacters, exec'd itself): its first word resolved as stap
// resolves process("PATH"); "" for none, or one that names no file.
func commandExecutable(command string) string {
	if command == "" || strings.ContainsAny(command, shellMetacharacters) {
		return ""
	}
	argv, err := expandedArgv(command)
	if err != nil {
		return ""
	}
	path := probes.ResolveExecutable(argv[0])
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
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
	program, err := commandProgram(s.opts.Command)
	if err != nil {
		return "", nil
	}
	if abs, err := filepath.Abs(program); err == nil {
		return abs, nil
	}
	return program, nil
}
