package driver

import (
	"encoding/binary"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// The holder of a -c command (target.go) is a program of a few
// instructions (holder_amd64.go, holder_arm64.go): holderELF makes its
// executable file, holderFile puts it in memory for the child to exec.

// holderBase is where the holder's file is mapped; its code follows the
// ELF header and the one program header.
const (
	holderBase   = 0x400000
	elfHeaderLen = 64
	progHeadLen  = 56
)

// holderELF is the holder's executable file: an ELF header, a PT_LOAD
// program header mapping the whole file readable and executable at
// holderBase, and the code, its entry point.
func holderELF() []byte {
	size := uint64(elfHeaderLen + progHeadLen + len(holderCode))
	le := binary.LittleEndian
	f := make([]byte, elfHeaderLen+progHeadLen, size)
	copy(f, "\x7fELF\x02\x01\x01") // 64-bit, little endian, version 1, System V
	le.PutUint16(f[16:], 2)        // ET_EXEC
	le.PutUint16(f[18:], holderMachine)
	le.PutUint32(f[20:], 1)                                   // EV_CURRENT
	le.PutUint64(f[24:], holderBase+elfHeaderLen+progHeadLen) // entry
	le.PutUint64(f[32:], elfHeaderLen)                        // program headers' offset
	le.PutUint16(f[52:], elfHeaderLen)
	le.PutUint16(f[54:], progHeadLen)
	le.PutUint16(f[56:], 1) // one program header
	ph := f[elfHeaderLen:]
	le.PutUint32(ph[0:], 1) // PT_LOAD
	le.PutUint32(ph[4:], 5) // PF_R|PF_X
	le.PutUint64(ph[16:], holderBase)
	le.PutUint64(ph[24:], holderBase)
	le.PutUint64(ph[32:], size)
	le.PutUint64(ph[40:], size)
	le.PutUint64(ph[48:], 0x1000)
	return append(f, holderCode...)
}

// holderFile is the holder's executable in an anonymous memory file
// (memfd), which the child execs as /proc/self/fd/3.
func holderFile() (fd int, err error) {
	if holderCode == nil {
		return -1, fmt.Errorf("bpftap holds -c commands on x86-64 and arm64 only, not on %s (use -x PID)", runtime.GOARCH)
	}
	fd, err = unix.MemfdCreate("bpftap-holder", unix.MFD_CLOEXEC|unix.MFD_EXEC)
	if err == unix.EINVAL { // a kernel before 6.3 has no MFD_EXEC: executable by default
		fd, err = unix.MemfdCreate("bpftap-holder", unix.MFD_CLOEXEC)
	}
	if err != nil {
		return -1, fmt.Errorf("memfd_create: %w", err)
	}
	if _, err := unix.Write(fd, holderELF()); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("write the holder: %w", err)
	}
	return fd, nil
}
