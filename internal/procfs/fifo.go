package procfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// fifo is a FIFO bpftap made in its module's directory, held for the run
// by an O_PATH descriptor. Every open of it (a reader's turn, a writer's,
// Stop's wake-up) is an open of /proc/self/fd/N, which opens the inode the
// descriptor holds, whatever the name in the directory leads to by then:
// the FIFO is never looked up by its name again. (Holding it open O_RDWR
// for the whole run would not do: with bpftap at both ends a reader would
// never see the end of its file, nor bpftap the end of a write.)
type fifo struct {
	name string
	fd   int // O_PATH
}

// makeFIFO makes the FIFO name in dir with mode, replacing a FIFO a run
// that ended without cleaning up left there.
func makeFIFO(dir ownDir, name string, mode uint32) (*fifo, error) {
	path := dir.path + "/" + name
	var st unix.Stat_t
	if err := unix.Fstatat(dir.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return nil, fmt.Errorf("cannot serve procfs file %s: something else is there", path)
		}
		unix.Unlinkat(dir.fd, name, 0)
	}
	if err := unix.Mkfifoat(dir.fd, name, mode); err != nil {
		return nil, fmt.Errorf("cannot make procfs file %s: %s", path, errnoText(err))
	}
	fd, err := unix.Openat(dir.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot open procfs file %s: %s", path, errnoText(err))
	}
	f := &fifo{name: name, fd: fd}
	if err := unix.Fchmodat(unix.AT_FDCWD, f.path(), mode, 0); err != nil { // not the process's umask
		f.close()
		return nil, fmt.Errorf("cannot set the mode of procfs file %s: %s (is /proc mounted?)", path, errnoText(err))
	}
	return f, nil
}

// path is the FIFO's inode's own path, /proc/self/fd/N.
func (f *fifo) path() string { return fmt.Sprintf("/proc/self/fd/%d", f.fd) }

// open opens the FIFO (it blocks until the other end is opened, as an
// open of a FIFO does). The file is in Go's poller: a deadline interrupts
// its reads and writes.
func (f *fifo) open(flag int) (*os.File, error) {
	return os.OpenFile(f.path(), flag, 0)
}

// wake opens the FIFO at both ends and closes it, which never blocks and
// ends whatever open of it blocks.
func (f *fifo) wake() {
	if fd, err := unix.Open(f.path(), unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		unix.Close(fd)
	}
}

// remove removes the FIFO's name from dir, if it still names this FIFO,
// and lets the FIFO go.
func (f *fifo) remove(dir ownDir) {
	var mine, there unix.Stat_t
	if unix.Fstat(f.fd, &mine) == nil && unix.Fstatat(dir.fd, f.name, &there, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		mine.Dev == there.Dev && mine.Ino == there.Ino {
		unix.Unlinkat(dir.fd, f.name, 0)
	}
	f.close()
}

func (f *fifo) close() { unix.Close(f.fd) }
