package procfs

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// answer answers one request of the kernel, nil for one that has none.
func (m *mount) answer(req []byte) []byte {
	var h inHeader
	if err := decode(0, req, &h); err != nil {
		return nil
	}
	args := req[binary.Size(h):]
	var out []byte
	var err error
	switch h.Opcode {
	case opForget, opBatchForget, opInterrupt:
		return nil
	case opInit:
		out, err = m.init(h, args)
	case opGetattr:
		out = answer(h.Unique, 0, attrOut{Attr: m.attr()})
	case opOpen:
		out = answer(h.Unique, 0, openOut{Handle: m.open(), OpenFlags: openDirectIO})
	case opRead:
		out, err = m.read(h, args)
	case opWrite:
		out, err = m.write(h, args)
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

// open makes a handle for an open of the file.
func (m *mount) open() uint64 {
	m.next++
	m.handles[m.next] = &handle{}
	return m.next
}

// read answers a read: the first of a handle runs the read probe (one
// that fails serves nothing, as a FIFO's).
func (m *mount) read(h inHeader, args []byte) ([]byte, error) {
	var in ioIn
	if err := decode(h.Opcode, args, &in); err != nil {
		return nil, err
	}
	fh := m.handles[in.Handle]
	if fh == nil {
		return answer(h.Unique, int32(unix.EBADF)), nil
	}
	if !fh.filled {
		if value, err := m.session.ReadProcfs(m.ProcfsFile); err == nil {
			fh.value = value
		}
		fh.filled = true
	}
	start := min(in.Offset, uint64(len(fh.value)))
	end := min(start+uint64(in.Size), uint64(len(fh.value)))
	return answer(h.Unique, 0, []byte(fh.value[start:end])), nil
}

// write answers a write: the write probes run with its bytes.
func (m *mount) write(h inHeader, args []byte) ([]byte, error) {
	var in ioIn
	if err := decode(h.Opcode, args, &in); err != nil {
		return nil, err
	}
	data := args[binary.Size(in):]
	if uint64(in.Size) > uint64(len(data)) {
		return nil, &WireError{Op: h.Opcode, Err: errShortWrite}
	}
	m.session.WriteProcfs(m.ProcfsFile, string(data[:in.Size]))
	return answer(h.Unique, 0, writeOut{Size: in.Size}), nil
}

// release answers the last close of an open: its handle goes.
func (m *mount) release(h inHeader, args []byte) ([]byte, error) {
	var in releaseIn
	if err := decode(h.Opcode, args, &in); err != nil {
		return nil, err
	}
	delete(m.handles, in.Handle)
	return answer(h.Unique, 0), nil
}
