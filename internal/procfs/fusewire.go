package procfs

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The FUSE protocol, as much of it as a file system of one regular file
// needs (linux/fuse.h, protocol 7.31): a request is a header and the
// operation's arguments, an answer a header and the operation's result,
// in the host's byte order.

// The operations served; the kernel gets ENOSYS for any other (no lookup,
// no directory, no setattr: the mode and owner cannot be changed).
const (
	opForget      = 2
	opGetattr     = 3
	opOpen        = 14
	opRead        = 15
	opWrite       = 16
	opRelease     = 18
	opFlush       = 25
	opInit        = 26
	opInterrupt   = 36
	opBatchForget = 42
)

// Flags of the answers.
const (
	initAtomicOTrunc = 1 << 3 // O_TRUNC comes with the open, not as a setattr
	initBigWrites    = 1 << 5 // writes up to maxWrite (kernels before 4.20)
	openDirectIO     = 1 << 0 // every read and write reaches the server
)

const (
	fuseMajor = 7
	fuseMinor = 31
	// maxWrite is the most bytes of one write request.
	maxWrite = MaxWrite
	// requestRoom is the buffer a request is read into: the kernel
	// refuses a read of /dev/fuse into less than a write request.
	requestRoom = maxWrite + 4096
	rootNode    = 1
)

type inHeader struct {
	Len, Opcode    uint32
	Unique, Node   uint64
	UID, GID, PID  uint32
	TotalExtlen, _ uint16
}

type outHeader struct {
	Len    uint32
	Error  int32
	Unique uint64
}

type initIn struct {
	Major, Minor, MaxReadahead, Flags uint32
}

type initOut struct {
	Major, Minor, MaxReadahead, Flags  uint32
	MaxBackground, CongestionThreshold uint16
	MaxWrite, TimeGran                 uint32
	MaxPages, MapAlignment             uint16
	Flags2, MaxStackDepth              uint32
	_                                  [6]uint32
}

type attr struct {
	Ino, Size, Blocks, Atime, Mtime, Ctime                                   uint64
	Atimensec, Mtimensec, Ctimensec, Mode, Nlink, UID, GID, Rdev, Blksize, _ uint32
}

type attrOut struct {
	Valid        uint64
	ValidNsec, _ uint32
	Attr         attr
}

type openIn struct {
	Flags, OpenFlags uint32
}

type openOut struct {
	Handle    uint64
	OpenFlags uint32
	_         int32
}

// ioIn is the arguments of a read, and of a write before its bytes.
type ioIn struct {
	Handle, Offset uint64
	Size, IOFlags  uint32
	LockOwner      uint64
	Flags, _       uint32
}

type writeOut struct {
	Size, _ uint32
}

// interruptIn is an interrupt's arguments: the request interrupted.
type interruptIn struct {
	Unique uint64
}

// releaseIn is the start of a release's arguments.
type releaseIn struct {
	Handle uint64
}

// WireError is a request bpftap cannot decode.
type WireError struct {
	Op  uint32
	Err error
}

func (e *WireError) Error() string {
	return fmt.Sprintf("FUSE request %d: %v", e.Op, e.Err)
}

func (e *WireError) Unwrap() error { return e.Err }

// errShortWrite: a write request holds fewer bytes than it says.
var errShortWrite = errors.New("fewer bytes than its size")

// decode reads v from the start of b.
func decode(op uint32, b []byte, v any) error {
	if _, err := binary.Decode(b, binary.NativeEndian, v); err != nil {
		return &WireError{Op: op, Err: err}
	}
	return nil
}

// answer encodes the answer to request unique: errno (0 for none) and
// the result, the parts of v.
func answer(unique uint64, errno int32, v ...any) []byte {
	b := make([]byte, binary.Size(outHeader{}), 128)
	for _, part := range v {
		b, _ = binary.Append(b, binary.NativeEndian, part)
	}
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint32(b[4:], uint32(-errno))
	binary.NativeEndian.PutUint64(b[8:], unique)
	return b
}
