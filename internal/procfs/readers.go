package procfs

import (
	"time"

	"golang.org/x/sys/unix"
)

// readers watches a read file's FIFO for its readers' closes (inotify's
// IN_CLOSE_NOWRITE). After a read is answered, the server waits until its
// reader closed before it opens the FIFO again: a reader still reading
// must see the end of its file, not a second value; a new reader waits in
// its open meanwhile. The events queued before the server's open are
// dropped (no reader of this round can close before that open), so one
// close since is this round's reader's (inotify merges like events
// following each other, so only "at least one" is known). Without
// inotify the server waits readerPause instead.
type readers struct {
	fd  int // the inotify descriptor, -1 without one
	buf [4096]byte
}

// readerWait bounds the wait for a reader to close (one that keeps the
// FIFO open gets its next value then).
const readerWait = time.Second

func watchReaders(path string) *readers {
	r := &readers{fd: -1}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return r
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_CLOSE_NOWRITE); err != nil {
		unix.Close(fd)
		return r
	}
	r.fd = fd
	return r
}

// reset drops the closes seen so far: call it before opening the FIFO.
func (r *readers) reset() {
	if r.fd >= 0 {
		r.closed()
	}
}

// waitGone waits until a reader closed since reset, at most readerWait,
// or until stopped says so.
func (r *readers) waitGone(stopped func() bool) {
	if r.fd < 0 {
		time.Sleep(readerPause)
		return
	}
	for deadline := time.Now().Add(readerWait); time.Now().Before(deadline) && !stopped(); {
		if r.closed() {
			return
		}
		unix.Poll([]unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}, 10)
	}
}

// closed reads the queued events and tells whether there were any.
func (r *readers) closed() bool {
	any := false
	for {
		n, err := unix.Read(r.fd, r.buf[:])
		if err != nil || n <= 0 {
			return any
		}
		any = true
	}
}

func (r *readers) close() {
	if r.fd >= 0 {
		unix.Close(r.fd)
	}
}
