package tracer

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Attachment is detected from the kernel's side, the same way for every
// tracer: the harness looks at the open files of every process in the
// tracer's process group, and asks the kernel (BPF_TASK_FD_QUERY, what
// `bpftool perf` uses) which tracepoint a BPF link or perf event is
// attached to. A tracer counts as attached as soon as one of its files
// holds a BPF program attached to raw_syscalls:sys_enter or sys_exit.

const bpfTaskFDQuery = 20 // BPF_TASK_FD_QUERY

// taskFDQuery mirrors the task_fd_query member of union bpf_attr.
type taskFDQuery struct {
	pid, fd, flags, bufLen uint32
	buf                    uint64
	progID, fdType         uint32
	probeOffset, probeAddr uint64
}

var syscallTracepoints = map[string]bool{"sys_enter": true, "sys_exit": true}

// attachedToSyscalls reports whether some process in process group pgid
// holds a BPF program attached to a system-call tracepoint.
func attachedToSyscalls(pgid int) bool {
	for _, pid := range processGroup(pgid) {
		fds, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
		for _, fd := range fds {
			target, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
			if target != "anon_inode:bpf_link" && target != "anon_inode:[perf_event]" {
				continue
			}
			n, _ := strconv.Atoi(fd.Name())
			if syscallTracepoints[attachedTracepoint(pid, n)] {
				return true
			}
		}
	}
	return false
}

// attachedTracepoint returns the tracepoint that the BPF program behind
// file descriptor fd of process pid is attached to, or "".
func attachedTracepoint(pid, fd int) string {
	var name [64]byte
	q := taskFDQuery{pid: uint32(pid), fd: uint32(fd), bufLen: uint32(len(name)),
		buf: uint64(uintptr(unsafe.Pointer(&name[0])))}
	_, _, errno := unix.Syscall(unix.SYS_BPF, bpfTaskFDQuery, uintptr(unsafe.Pointer(&q)), unsafe.Sizeof(q))
	if errno != 0 {
		return ""
	}
	name[len(name)-1] = 0
	return string(name[:bytes.IndexByte(name[:], 0)])
}

// processGroup lists the processes whose process group is pgid.
func processGroup(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command name: state ppid pgrp ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
