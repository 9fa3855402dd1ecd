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
	entry // O_PATH
}

// makeFIFO makes the FIFO name in dir with mode, replacing what a run
// that ended without cleaning up left there.
func makeFIFO(dir ownDir, name string, mode uint32) (*fifo, error) {
	path := dir.path + "/" + name
	if err := clearLeftover(dir, name); err != nil {
		return nil, err
	}
	if err := unix.Mkfifoat(dir.fd, name, mode); err != nil {
		return nil, &FileError{Path: path, Op: "make", Err: err}
	}
	fd, err := unix.Openat(dir.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &FileError{Path: path, Op: "open", Err: err}
	}
	f := &fifo{entry{name: name, fd: fd}}
	if err := unix.Fchmodat(unix.AT_FDCWD, f.path(), mode, 0); err != nil { // not the process's umask
		f.close()
		return nil, &FileError{Path: path, Op: "set the mode of", Err: fmt.Errorf("%w (is /proc mounted?)", err)}
	}
	return f, nil
}

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
