package kernel

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ReadTracefs reads a file of tracefs, such as "available_events" or
// "events/sched/sched_process_exec/id". When tracefs is not mounted
// anywhere, it is read from a private mount: see readPrivately.
func ReadTracefs(name string) ([]byte, error) {
	if dir := tracefsMountOnce(); dir != "" {
		return os.ReadFile(filepath.Join(dir, name))
	}
	return readPrivately(name)
}

// WriteTracefs writes data to a file of tracefs, such as "trace_marker",
// in one write, from a private mount when tracefs is not mounted (see
// readPrivately).
func WriteTracefs(name string, data []byte) error {
	if dir := tracefsMountOnce(); dir != "" {
		return WriteFile(filepath.Join(dir, name), data)
	}
	_, err := privately(privateRead{name: name, write: data})
	return err
}

// WriteFile writes data to the existing file path in one write (a record
// of trace_marker or /dev/kmsg).
func WriteFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// tracefsDir is where the kernel provides a mount point for tracefs.
const tracefsDir = "/sys/kernel/tracing"

// readPrivately reads name from tracefs mounted in a mount namespace of
// bpftap's own. The namespace belongs to one OS thread, locked to a
// goroutine that serves every private read and never unlocks it, so the
// mount is made once, however many files are read (a syscall.* script
// reads hundreds of format files), nothing is mounted where anything else
// can see it, and nothing survives bpftap, however it ends.
func readPrivately(name string) ([]byte, error) { return privately(privateRead{name: name}) }

// privately serves r on the private mount's goroutine.
func privately(r privateRead) ([]byte, error) {
	privateOnce.Do(func() {
		privateReads = make(chan privateRead)
		go servePrivateReads(privateReads)
	})
	r.done = make(chan tracefsRead, 1)
	privateReads <- r
	res := <-r.done
	return res.data, res.err
}

var (
	privateOnce  sync.Once
	privateReads chan privateRead
)

// privateRead is a read of name, or a write of write to it.
type privateRead struct {
	name  string
	write []byte
	done  chan tracefsRead
}

type tracefsRead struct {
	data []byte
	err  error
}

// servePrivateReads is readPrivately's goroutine. Not on the main thread:
// Go never ends that one, and its namespace is the one /proc/self shows;
// there it hands over to another goroutine and lets the main thread go.
// When the mount fails, every read returns the reason.
func servePrivateReads(reads <-chan privateRead) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		go servePrivateReads(reads)
		runtime.UnlockOSThread()
		return
	}
	err := mountPrivately()
	for r := range reads {
		if err != nil {
			r.done <- tracefsRead{nil, err}
			continue
		}
		path := filepath.Join(tracefsDir, r.name)
		if r.write != nil {
			r.done <- tracefsRead{nil, WriteFile(path, r.write)}
			continue
		}
		data, rerr := os.ReadFile(path)
		r.done <- tracefsRead{data, rerr}
	}
}

// mountPrivately gives the calling thread a new mount namespace, private
// propagation and tracefs on its mount point.
func mountPrivately() error {
	err := unix.Unshare(unix.CLONE_NEWNS)
	if err == nil {
		err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	}
	if err == nil {
		err = unix.Mount("nodev", tracefsDir, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	}
	switch {
	case errors.Is(err, unix.EPERM):
		return errors.New("tracefs is not mounted, and mounting it needs CAP_SYS_ADMIN (as root: mount -t tracefs nodev " + tracefsDir + ")")
	case err != nil:
		return fmt.Errorf("tracefs is not mounted, and mounting it failed: %w", err)
	}
	return nil
}

// TracefsMount returns where tracefs is mounted (looked up once per
// process), or "" when it is not: then only reads can be served
// (privately), not an interface that writes tracefs's files.
func TracefsMount() string { return tracefsMountOnce() }

// tracefsMountOnce is tracefsMount, looked up once per process (a
// syscall.* script reads hundreds of tracefs files).
var tracefsMountOnce = sync.OnceValue(tracefsMount)

// tracefsMount returns where tracefs is mounted, or "".
func tracefsMount() string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	debugfs := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// Fields: id parent major:minor root mountpoint options... - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := indexOf(fields, "-")
		if sep < 5 || sep+1 >= len(fields) {
			continue
		}
		switch fields[sep+1] {
		case "tracefs":
			return fields[4]
		case "debugfs":
			debugfs = fields[4]
		}
	}
	if debugfs != "" {
		if _, err := os.Stat(filepath.Join(debugfs, "tracing", "available_events")); err == nil {
			return filepath.Join(debugfs, "tracing")
		}
	}
	return ""
}

func indexOf(fields []string, s string) int {
	for i, f := range fields {
		if f == s {
			return i
		}
	}
	return -1
}
