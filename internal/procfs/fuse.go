package procfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/bpftap/bpftap/internal/interp"
	"golang.org/x/sys/unix"
)

// A file with a read probe and write probes. A FIFO is read or written,
// never both: with no end of it open, bpftap cannot see a writer waiting in
// its open; with one end open, it cannot see a reader. So such a file is
// a file system of its own, served by bpftap through FUSE, whose root is a
// regular file: bpftap makes an empty placeholder (mode 0) in the module's
// directory and mounts the file system on it, through the placeholder's
// descriptor (move_mount), never by name. Each open of the file is bpftap's
// to answer: its first read runs the read probe and reads what it left in
// $value; each write runs the write probes with the bytes written (as
// stap's module runtime does; at most MaxWrite bytes a request). A reader
// never sees what a writer wrote, nor another reader's value.
//
// Bounds: a local user may open the file as often as its mode lets them,
// and each open's value is bpftap's memory. At most maxHandles opens of a
// file are open at once (the next fails with EMFILE), and an open lets
// its value go once it was read to its end. Each request is answered in
// a goroutine of its own, at most maxRequests at once (more: EAGAIN), so
// that serve never waits for a probe: a probe runs when the script's
// handlers let it (one at a time), and a handler may wait for a command
// of system() that reads this very file. A read or write that cannot get
// its probe's turn within probeWait fails with EAGAIN, and one whose
// caller is interrupted (FUSE_INTERRUPT) with EINTR; either way its probe
// does not run (one that began runs to its end, its answer dropped).
//
// Trust: the kernel checks every open against the mode bpftap gives the
// root (default_permissions; allow_other lets users other than bpftap's in,
// as far as the mode lets them). The file system has one node, a regular
// file: no directory, no symbolic link, no lookup; mode and owner cannot
// be changed (setattr is ENOSYS). bpftap opens no file for a request and
// answers from memory only. The mount is nosuid, nodev and noexec. At the
// end of the run it is detached and the connection closed, which fails
// whatever open of the file is left (ENOTCONN); a forced exit or a panic
// answering a request detaches it too (Server.Detach); a mount whose
// bpftap died otherwise (SIGKILL: its connection gone) is detached by the
// next run of the module, which only a run with the same -m NAME is.
//
// bpftap's own process never opens the file: Go puts a file it opens in
// its poller, and epoll then asks the FUSE server (FUSE_POLL) from within
// the runtime, which may stop the world before the server can answer: a
// deadlock. The HTTP handler calls the session directly.

// mount is a file served through FUSE on its placeholder.
type mount struct {
	*interp.ProcfsFile
	place   entry // the placeholder, held by a descriptor
	dev     int   // /dev/fuse: the mount's connection
	wake    int   // an eventfd: Stop's word to serve
	session Session
	// mu guards handles, next, pending and the replies to the kernel.
	mu      sync.Mutex
	handles map[uint64]*handle
	next    uint64
	// pending cancels each request being answered, by its unique id:
	// an interrupt's work; a request no longer there has its answer.
	pending  map[uint64]context.CancelFunc
	requests sync.WaitGroup
	// ctx ends at unmount: what waits for a probe's turn gives up.
	ctx  context.Context
	stop context.CancelFunc
	// detachAll detaches the server's mounts: a request whose answer
	// panics (a probe's handler runs in its goroutine) leaves none.
	detachAll func()
	// made is when it was mounted, and uid and gid bpftap's user's: the
	// file's times and owner.
	made     time.Time
	uid, gid uint32
}

// handle is an open of the file: its value once its first read ran the
// read probe, until a read reached its end.
type handle struct {
	value  string
	filled bool
}

const (
	// maxHandles is the most opens of one file at once.
	maxHandles = 64
	// maxRequests is the most requests of one file answered at once.
	maxRequests = 64
	// probeWait is how long a request waits for its probe's turn.
	probeWait = 3 * time.Second
)

// mountFile makes f's placeholder in dir and mounts f's file system on it.
func mountFile(dir ownDir, f *interp.ProcfsFile, s Session) (*mount, error) {
	place, err := makePlaceholder(dir, f.Name)
	if err != nil {
		return nil, err
	}
	m := &mount{ProcfsFile: f, place: place, dev: -1, wake: -1, session: s, handles: map[uint64]*handle{},
		pending: map[uint64]context.CancelFunc{}, made: time.Now(), uid: uint32(os.Geteuid()), gid: uint32(os.Getegid())}
	m.ctx, m.stop = context.WithCancel(context.Background())
	if err := m.mount(); err != nil {
		m.close()
		place.remove(dir)
		return nil, &FileError{Path: dir.path + "/" + f.Name, Op: "serve", Err: err}
	}
	return m, nil
}

// makePlaceholder makes the empty file name in dir that f's file system
// covers, in place of what a run that died left there.
func makePlaceholder(dir ownDir, name string) (entry, error) {
	if err := clearLeftover(dir, name); err != nil {
		return entry{}, err
	}
	fd, err := unix.Openat(dir.fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return entry{}, &FileError{Path: dir.path + "/" + name, Op: "make", Err: err}
	}
	return entry{name: name, fd: fd}, nil
}

// mount mounts the file system on the placeholder, its connection open.
func (m *mount) mount() error {
	var err error
	if m.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
		return fmt.Errorf("cannot make an eventfd: %w", err)
	}
	if m.dev, err = unix.Open("/dev/fuse", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("cannot open /dev/fuse: %w", err)
	}
	fs, err := unix.Fsopen("fuse", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("cannot make a FUSE file system (%s): %w", fsopenMissing(err), err)
	}
	defer unix.Close(fs)
	if err := configure(fs, m.dev, m.uid, m.gid); err != nil {
		return err
	}
	return m.attach(fs)
}

// fsopenMissing says what an fsopen that failed with err lacks.
func fsopenMissing(err error) string {
	switch {
	case errors.Is(err, unix.ENODEV):
		return "the kernel lacks FUSE: CONFIG_FUSE_FS, module fuse"
	case errors.Is(err, unix.ENOSYS):
		return "the kernel lacks fsopen and move_mount: Linux 5.2 has them"
	case errors.Is(err, unix.EPERM):
		return "it needs CAP_SYS_ADMIN"
	}
	return "an unexpected error"
}

// configure sets the options of file system fs, whose connection is dev
// and whose file is uid's and gid's.
func configure(fs, dev int, uid, gid uint32) error {
	options := [][2]string{{"source", "bpftap"}, {"subtype", "bpftap"}, {"fd", strconv.Itoa(dev)},
		{"rootmode", strconv.FormatUint(unix.S_IFREG, 8)},
		{"user_id", strconv.Itoa(int(uid))}, {"group_id", strconv.Itoa(int(gid))}}
	for _, o := range options {
		if err := unix.FsconfigSetString(fs, o[0], o[1]); err != nil {
			return fmt.Errorf("cannot set FUSE option %s: %w", o[0], err)
		}
	}
	for _, flag := range []string{"default_permissions", "allow_other"} {
		if err := unix.FsconfigSetFlag(fs, flag); err != nil {
			return fmt.Errorf("cannot set FUSE option %s: %w", flag, err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("cannot make the FUSE file system: %w", err)
	}
	return nil
}

// attach mounts file system fs on the placeholder's descriptor.
func (m *mount) attach(fs int) error {
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err == nil {
		err = unix.MoveMount(mnt, "", m.place.fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
		unix.Close(mnt)
	}
	if err != nil {
		return fmt.Errorf("cannot mount the FUSE file system: %w", err)
	}
	return nil
}

// serve takes the kernel's requests until unmount, and returns once
// each has its answer.
func (m *mount) serve() {
	defer m.requests.Wait()
	defer m.stop()
	buf := make([]byte, requestRoom)
	for m.nextRequest() {
		n, err := unix.Read(m.dev, buf)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT):
			continue // another's, or a request the kernel took back
		case err != nil:
			return // the connection is gone
		}
		m.dispatch(bytes.Clone(buf[:n]))
	}
}

// dispatch starts answering request req, or interrupts the one it names.
func (m *mount) dispatch(req []byte) {
	var h inHeader
	if decode(0, req, &h) != nil {
		return
	}
	switch h.Opcode {
	case opForget, opBatchForget:
		return
	case opInterrupt:
		var in interruptIn
		if decode(h.Opcode, req[binary.Size(h):], &in) == nil {
			m.interrupt(in.Unique)
		}
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) >= maxRequests {
		unix.Write(m.dev, answer(h.Unique, int32(unix.EAGAIN)))
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	m.pending[h.Unique] = cancel
	m.requests.Go(func() {
		defer cancel()
		defer m.detachOnPanic()
		m.reply(h.Unique, m.answer(ctx, h, req[binary.Size(h):]))
	})
}

// detachOnPanic detaches the mounts before a panic ends the process.
func (m *mount) detachOnPanic() {
	if r := recover(); r != nil {
		if m.detachAll != nil {
			m.detachAll()
		}
		panic(r)
	}
}

// reply sends out, the answer to request unique, unless it has one (an
// interrupt answered it).
func (m *mount) reply(unique uint64, out []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pending[unique]; ok {
		delete(m.pending, unique)
		unix.Write(m.dev, out) // an error: the request was taken back
	}
}

// interrupt answers request unique with EINTR, its caller interrupted,
// and stops its wait for a probe's turn. A request no longer pending has
// its answer.
func (m *mount) interrupt(unique uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cancel, ok := m.pending[unique]; ok {
		delete(m.pending, unique)
		cancel()
		unix.Write(m.dev, answer(unique, int32(unix.EINTR)))
	}
}

// nextRequest waits until a request comes (true), or unmount or the
// connection's end (false).
func (m *mount) nextRequest() bool {
	fds := []unix.PollFd{{Fd: int32(m.dev), Events: unix.POLLIN}, {Fd: int32(m.wake), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil || fds[1].Revents != 0:
			return false
		}
		return fds[0].Revents&unix.POLLIN != 0
	}
}

// unmount detaches the mount, ends the waits for a probe's turn, and
// tells serve to return.
func (m *mount) unmount(dir ownDir) {
	unix.Unmount(dir.inside(m.Name), unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	m.stop()
	unix.Write(m.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
}

// close closes the connection, once serve returned: what is left open of
// the file fails (ENOTCONN).
func (m *mount) close() {
	for _, fd := range []int{m.dev, m.wake} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// clearLeftover removes what a run of the module that ended without
// cleaning up left at name in dir (the module's lock is held: nobody
// else serves there): a FIFO, a placeholder, the mount of a bpftap that
// died, whose connection is gone. Anything else is refused.
func clearLeftover(dir ownDir, name string) error {
	var st unix.Stat_t
	err := unix.Fstatat(dir.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOTCONN) {
		unix.Unmount(dir.inside(name), unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		err = unix.Fstatat(dir.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	switch kind := st.Mode & unix.S_IFMT; {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return &FileError{Path: dir.path + "/" + name, Op: "examine", Err: err}
	case kind == unix.S_IFIFO, kind == unix.S_IFREG && st.Size == 0:
		unix.Unlinkat(dir.fd, name, 0)
		return nil
	}
	return &FileError{Path: dir.path + "/" + name, Op: "serve", Err: errSomethingElse}
}
