package procfs

import (
	"context"
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// answer answers request h of the kernel, whose arguments are args; ctx
// ends when the request is interrupted.
func (m *mount) answer(ctx context.Context, h inHeader, args []byte) []byte {
	var out []byte
	var err error
	switch h.Opcode {
	case opInit:
		out, err = m.init(h, args)
	case opGetattr:
		out = answer(h.Unique, 0, attrOut{Attr: m.attr()})
	case opOpen:
		out = m.open(h)
	case opRead:
		out, err = m.read(ctx, h, args)
	case opWrite:
		out, err = m.write(ctx, h, args)
	case opFlush:
		out = answer(h.Unique, 0)
	case opRelease:
		out, err = m.release(h, args)
	default:
		out = answer(h.Unique, int32(unix.ENOSYS))
	}
	if err != nil {
		return answer(h.Unique, int32(unix.EIO))
	}
	return out
}

// init answers the first request: the protocol's version and limits.
func (m *mount) init(h inHeader, args []byte) ([]byte, error) {
	var in initIn
	if err := decode(h.Opcode, args, &in); err != nil {
		return nil, err
	}
	if in.Major != fuseMajor {
		return answer(h.Unique, int32(unix.EPROTO)), nil
	}
	return answer(h.Unique, 0, initOut{Major: fuseMajor, Minor: fuseMinor, MaxReadahead: in.MaxReadahead,
		Flags: in.Flags & (initAtomicOTrunc | initBigWrites), MaxBackground: 12, CongestionThreshold: 9,
		MaxWrite: maxWrite, TimeGran: 1}), nil
}

// attr is the file's attributes: an empty regular file with the probes'
// mode, bpftap's user's, never cached (a mount whose bpftap died says so
// at once: ENOTCONN).
func (m *mount) attr() attr {
	t := uint64(m.made.Unix())
	ns := uint32(m.made.Nanosecond())
	return attr{Ino: rootNode, Mode: unix.S_IFREG | m.Mode, Nlink: 1, UID: m.uid, GID: m.gid,
		Blksize: 4096, Atime: t, Mtime: t, Ctime: t, Atimensec: ns, Mtimensec: ns, Ctimensec: ns}
}

// open makes a handle for an open of the file, at most maxHandles of
// them at once (EMFILE).
func (m *mount) open(h inHeader) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.handles) >= maxHandles {
		return answer(h.Unique, int32(unix.EMFILE))
	}
	m.next++
	m.handles[m.next] = &handle{}
	return answer(h.Unique, 0, openOut{Handle: m.next, OpenFlags: openDirectIO})
}

// read answers a read: the first of a handle runs the read probe (one
// that fails serves nothing, as a FIFO's); the read that reaches the
// value's end lets it go.
func (m *mount) read(ctx context.Context, h inHeader, args []byte) ([]byte, error) {
	var in ioIn
	if err := decode(h.Opcode, args, &in); err != nil {
		return nil, err
	}
	m.mu.Lock()
	fh := m.handles[in.Handle]
	filled := fh != nil && fh.filled
	m.mu.Unlock()
	if fh == nil {
		return answer(h.Unique, int32(unix.EBADF)), nil
	}
	if !filled {
		wait, cancel := context.WithTimeout(ctx, probeWait)
		value, err := m.session.ReadProcfs(wait, m.ProcfsFile)
		cancel()
		if errno := waitErrno(err); errno != 0 {
			return answer(h.Unique, errno), nil
		}
		m.mu.Lock()
		if !fh.filled {
			fh.value, fh.filled = value, true
			if err != nil {
				fh.value = ""
			}
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	value := fh.value
	start := min(in.Offset, uint64(len(value)))
	end := min(start+uint64(in.Size), uint64(len(value)))
	if end == uint64(len(value)) {
		fh.value = ""
	}
	return answer(h.Unique, 0, []byte(value[start:end])), nil
}

// waitErrno is the errno of a request whose probe did not get its turn:
// EAGAIN when the wait was too long, EINTR when the caller was
// interrupted (or the file unmounted); 0 for any other err.
func waitErrno(err error) int32 {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return int32(unix.EAGAIN)
	case errors.Is(err, context.Canceled):
		return int32(unix.EINTR)
	}
	return 0
}

// write answers a write: the write probes run with its bytes.
func (m *mount) write(ctx context.Context, h inHeader, args []byte) ([]byte, error) {
	var in ioIn
	if err := decode(h.Opcode, args, &in); err != nil {
		return nil, err
	}
	data := args[binary.Size(in):]
	if uint64(in.Size) > uint64(len(data)) {
		return nil, &WireError{Op: h.Opcode, Err: errShortWrite}
	}
	ctx, cancel := context.WithTimeout(ctx, probeWait)
	defer cancel()
	if errno := waitErrno(m.session.WriteProcfs(ctx, m.ProcfsFile, string(data[:in.Size]))); errno != 0 {
		return answer(h.Unique, errno), nil
	}
	return answer(h.Unique, 0, writeOut{Size: in.Size}), nil
}

// release answers the last close of an open: its handle goes.
func (m *mount) release(h inHeader, args []byte) ([]byte, error) {
	var in releaseIn
	if err := decode(h.Opcode, args, &in); err != nil {
		return nil, err
	}
	m.mu.Lock()
	delete(m.handles, in.Handle)
	m.mu.Unlock()
	return answer(h.Unique, 0), nil
}
