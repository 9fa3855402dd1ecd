package monitor

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/bpftap/bpftap/internal/tty"
	"golang.org/x/sys/unix"
)

// Ctrl-Z. The terminal sends SIGTSTP to the foreground process group;
// the screen catches it, gives the terminal back (the main screen, the
// keyboard's modes), and stops bpftap with SIGSTOP (a SIGTSTP it sends
// itself, once caught, the Go runtime ignores); once continued (fg) it
// takes the terminal again and redraws (and sets the keyboard's mode again
// at the next refresh, after bash's). In a process group the kernel
// treats as orphaned (no job control: `sh -c 'bpftap ...'` run by tmux,
// say), where Ctrl-Z stops nothing, nobody would continue bpftap: the
// screen stays, as the kernel discards the signal for such a group.

// keepKeys sets the keyboard's mode again if another process changed it:
// bash sets its own modes again just after it continued a job, after
// suspend set the keyboard's; the next refresh sets it back.
func (s *Screen) keepKeys() {
	s.termMu.Lock()
	defer s.termMu.Unlock()
	if s.keyboard != nil && !s.restored {
		tty.KeepKeysAsTyped(s.keyboard)
	}
}

// suspend does what Ctrl-Z asks: see above.
func (s *Screen) suspend(suspended chan os.Signal) {
	if orphaned() {
		return
	}
	s.termMu.Lock()
	if s.restored {
		s.termMu.Unlock()
		return
	}
	s.term.WriteString(leaveScreen)
	s.restore()
	s.termMu.Unlock()
	// sent to this thread (the loop's, locked to it): it stops before the
	// call returns, where a signal to the process stops this thread
	// only once another thread has taken it, after a draw or two
	unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
	s.termMu.Lock()
	defer s.termMu.Unlock()
	if !s.restored {
		if s.keyboard != nil {
			s.restore = tty.KeysAsTyped(s.keyboard)
		}
		s.term.WriteString(enterScreen)
	}
}

// catchSuspend makes Ctrl-Z a value of the channel it returns, until
// undone.
func catchSuspend() (suspended chan os.Signal, undo func()) {
	suspended = make(chan os.Signal, 1)
	signal.Notify(suspended, syscall.SIGTSTP)
	return suspended, func() { signal.Stop(suspended) }
}

// orphaned tells whether bpftap's process group is orphaned: the first
// ancestor outside it is in another session (or there is none), as the
// kernel decides for each member (here only bpftap's ancestors are
// asked, which a job control shell's jobs satisfy).
func orphaned() bool {
	group, session := unix.Getpgrp(), getsid(0)
	pid := os.Getppid()
	for pid > 1 {
		ppid, pgrp, sid, ok := procStat(pid)
		if !ok {
			return true
		}
		if pgrp != group {
			return sid != session
		}
		pid = ppid
	}
	return true
}

func getsid(pid int) int {
	sid, _ := unix.Getsid(pid)
	return sid
}

// procStat reads a process's parent, process group and session from
// /proc/PID/stat.
func procStat(pid int) (ppid, pgrp, sid int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	// "PID (COMM) STATE PPID PGRP SESSION ...": COMM may hold spaces
	// and parentheses; the last ')' ends it
	i := len(data) - 1
	for i >= 0 && data[i] != ')' {
		i--
	}
	var state byte
	n, _ := fmt.Sscanf(string(data[i+1:]), " %c %d %d %d", &state, &ppid, &pgrp, &sid)
	return ppid, pgrp, sid, n == 4
}
