package driver

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// -F -o FILE is stap's on-file flight recorder: staprun (-D) daemonizes
// once the probes run, prints its pid and goes on in the background,
// writing to FILE, until the script exits or the process is signalled.
// bpftap starts itself again in a session of its own, which signals on
// a pipe once its probes are attached (flightReadyFD in its environment
// names the pipe); until then its errors reach the terminal and its exit
// status is bpftap's, after it only FILE is written. Without -o (stap's
// in-memory recorder, probes left running with no process) -F is refused.
const flightReadyEnv = "BPFTAP_FLIGHT_READY_FD"

// flightRecorder runs argv in the background as -F does and returns
// bpftap's exit status. The background copy reads stdin (a script given
// as "-", input probes).
func flightRecorder(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: -F: %v\n", err)
		return 1
	}
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: -F: %v\n", err)
		return 1
	}
	defer r.Close()
	cmd := exec.Command(exe, argv...)
	cmd.Env = append(os.Environ(), flightReadyEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdin, cmd.Stderr = stdin, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: -F: %v\n", err)
		return 1
	}
	if n, _ := r.Read(make([]byte, 1)); n == 1 {
		fmt.Fprintln(stdout, cmd.Process.Pid)
		return 0
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); errors.As(err, &exit) {
		return max(exit.ExitCode(), 1)
	}
	return 0
}

// flightDetach ends the foreground part of a -F run (the background
// bpftap's): the first bpftap is told the probes run, and standard output
// and error go to /dev/null, as staprun's do (it logs to syslog).
func flightDetach(readyFD string) {
	fd, err := strconv.Atoi(readyFD)
	if err != nil {
		return
	}
	ready := os.NewFile(uintptr(fd), "ready")
	ready.Write([]byte{1})
	ready.Close()
	if null, err := unix.Open("/dev/null", unix.O_RDWR, 0); err == nil {
		unix.Dup2(null, 1)
		unix.Dup2(null, 2)
		unix.Close(null)
	}
}
