package procfs

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// entry is a file bpftap made in its module's directory (a FIFO, a
// placeholder), held for the run by a descriptor.
type entry struct {
	name string
	fd   int
}

// path is the entry's inode's own path, /proc/self/fd/N.
func (e entry) path() string { return fmt.Sprintf("/proc/self/fd/%d", e.fd) }

// remove removes the entry's name from dir, if it still names this
// entry's inode, and lets the entry go.
func (e entry) remove(dir ownDir) {
	var mine, there unix.Stat_t
	if unix.Fstat(e.fd, &mine) == nil && unix.Fstatat(dir.fd, e.name, &there, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		mine.Dev == there.Dev && mine.Ino == there.Ino {
		unix.Unlinkat(dir.fd, e.name, 0)
	}
	e.close()
}

func (e entry) close() { unix.Close(e.fd) }

// FileError is a procfs file bpftap cannot serve.
type FileError struct {
	Path string
	Op   string // what bpftap could not do: "make", "serve", ...
	Err  error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("cannot %s procfs file %s: %v", e.Op, e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// errSomethingElse: what is in the module's directory at a file's name is
// no file a run of bpftap left there.
var errSomethingElse = errors.New("something else is there")
