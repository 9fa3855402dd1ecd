package kernel

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ReadTracefs reads a file of tracefs, such as "available_events" or
// "events/sched/sched_process_exec/id". When tracefs is not mounted
// anywhere, it is read from a private mount: see readPrivately.
func ReadTracefs(name string) ([]byte, error) {
	if dir := tracefsMountOnce(); dir != "" {
		path := filepath.Join(dir, name)
		return readFileAt(unix.AT_FDCWD, path, path)
	}
	return readPrivately(name)
}

// readFileAt reads file name, relative to the directory dirfd, with the
// system calls alone (path names it in errors): a syscall.* script reads
// 360 format files of about 700 bytes, which os.ReadFile (a stat, a
// descriptor mode query, a small first read) and io.ReadAll read in about
// 21 µs each, this in 15 (parsed too: 23.7 against 19.0 µs,
// BenchmarkSyscallEntryFormats).
func readFileAt(dirfd int, name, path string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	data := make([]byte, 0, 2048)
	for {
		if len(data) == cap(data) {
			data = slices.Grow(data, cap(data))
		}
		n, err := unix.Read(fd, data[len(data):cap(data)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return data, nil
		}
		data = data[:len(data)+n]
	}
}

// ReadTracefsDir lists the names in a directory of tracefs, such as
// "events/syscalls" (its events, and its enable and filter files).
func ReadTracefsDir(name string) ([]string, error) {
	var f *os.File
	var err error
	if dir := tracefsMountOnce(); dir != "" {
		f, err = os.Open(filepath.Join(dir, name))
	} else {
		f, err = openPrivately(name, unix.O_RDONLY|unix.O_DIRECTORY)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// WriteTracefs writes data to a file of tracefs, such as "trace_marker",
// in one write, from a private mount when tracefs is not mounted (see
// readPrivately).
func WriteTracefs(name string, data []byte) error {
	if dir := tracefsMountOnce(); dir != "" {
		return WriteFile(filepath.Join(dir, name), data)
	}
	return writePrivately(name, data)
}

// WriteFile writes data to the existing file path in one write (a record
// of trace_marker or /dev/kmsg).
func WriteFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	return writeAndClose(f, data)
}

// writeAndClose writes data to f in one write and closes it.
func writeAndClose(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// tracefsDir is where the kernel provides a mount point for tracefs.
const tracefsDir = "/sys/kernel/tracing"

// readPrivately reads name from tracefs mounted in a mount namespace of
// bpftap's own. The namespace belongs to one OS thread, locked to a
// goroutine that never unlocks it; that thread mounts tracefs once and
// opens the mount's root, and each read opens its file relative to that
// root on the reader's own thread (a path relative to a directory
// descriptor needs no namespace). So the mount is made once, the hundreds
// of format files a syscall.* script reads are read in parallel, nothing
// is mounted where anything else can see it, and nothing survives bpftap,
// however it ends.
func readPrivately(name string) ([]byte, error) {
	root, err := privateRoot()
	if err != nil {
		return nil, err
	}
	return readFileAt(root, name, filepath.Join(tracefsDir, name))
}

// writePrivately writes data to the existing file name of the private
// mount (see readPrivately) in one write.
func writePrivately(name string, data []byte) error {
	f, err := openPrivately(name, unix.O_WRONLY)
	if err != nil {
		return err
	}
	return writeAndClose(f, data)
}

// openPrivately opens name of the private mount with flags.
func openPrivately(name string, flags int) (*os.File, error) {
	root, err := privateRoot()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(tracefsDir, name)
	fd, err := unix.Openat(root, name, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// privateRoot is the root of the private mount, made when first asked for
// by holdPrivateMount; when the mount fails, every read returns the reason.
var privateRoot = sync.OnceValues(func() (int, error) {
	root := make(chan privateMount)
	go holdPrivateMount(root)
	m := <-root
	return m.fd, m.err
})

// privateMount is a descriptor of the private mount's root, or why there
// is none.
type privateMount struct {
	fd  int
	err error
}

// holdPrivateMount mounts tracefs in a namespace of its thread's own,
// sends the mount's root and keeps the thread, in that namespace, for the
// rest of the run. Not on the main thread: Go never ends that one, and its
// namespace is the one /proc/self shows; there it hands over to another
// goroutine and lets the main thread go.
func holdPrivateMount(root chan<- privateMount) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		go holdPrivateMount(root)
		runtime.UnlockOSThread()
		return
	}
	if err := mountPrivately(); err != nil {
		root <- privateMount{-1, err}
		return // the thread ends with its goroutine, locked
	}
	fd, err := unix.Open(tracefsDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		err = fmt.Errorf("opening the private mount of tracefs: %w", err)
	}
	root <- privateMount{fd, err}
	select {}
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

// DynamicEventSystems are the systems (groups) of the trace events made
// while the kernel runs, whose fields a user may change between two runs
// (kprobe, uprobe, synthetic, eprobe and fprobe events): the default
// groups, and every group tracefs's list of such events names
// (dynamic_events, Linux 5.0; before it kprobe_events and
// uprobe_events). A built-in event's name cannot be taken by one of them.
func DynamicEventSystems() (map[string]bool, error) {
	systems := map[string]bool{"kprobes": true, "uprobes": true, "synthetic": true, "eprobes": true, "fprobes": true, "tracepoints": true}
	text, err := ReadTracefs("dynamic_events")
	if errors.Is(err, os.ErrNotExist) {
		var uprobes []byte
		if text, err = ReadTracefs("kprobe_events"); err == nil {
			uprobes, err = ReadTracefs("uprobe_events")
			text = append(text, uprobes...)
		}
	}
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(string(text)) {
		head, _, _ := strings.Cut(line, " ") // "p:GROUP/EVENT" or "p:EVENT"
		if _, event, ok := strings.Cut(head, ":"); ok {
			if group, _, ok := strings.Cut(event, "/"); ok {
				systems[group] = true
			}
		}
	}
	return systems, nil
}
