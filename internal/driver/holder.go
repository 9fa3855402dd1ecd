package driver

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// The holder of a -c command (see target.go) is a program of a few
// instructions, so that between its release and the command's exec it
// makes no system call but execve and runs as one thread, as stap's
// stapio child does; a Go program would have the Go runtime's threads.
// It runs as
//
//	holder PROGRAM NAME ARGV0 ARGV1 ...
//
// with the holder's own file open as fd 3 and the write end of a pipe as
// fd 4, and does, in order:
//
//	ptrace(PTRACE_TRACEME)           bpftap, its parent, becomes its tracer: the stop
//	                                 below is then a ptrace stop, which no SIGCONT of
//	                                 job control ends (failing, a job-control stop)
//	prctl(PR_SET_NAME, NAME)         the command's name (its exec's file name's last
//	                                 component), so that the one event a script sees
//	                                 before the exec, the execve, is the command's
//	close(3)
//	fcntl(4, F_SETFD, FD_CLOEXEC)    the pipe closes when the exec succeeds
//	kill(getpid(), SIGSTOP)          held: bpftap releases it (PTRACE_DETACH or SIGCONT)
//	execve(PROGRAM, ARGV, environ)
//	write(4, &errno, 1)              the exec failed: bpftap reads why
//	exit_group(1)
//
// Everything before the stop happens before the probes are attached, so
// a script sees nothing of it. The code is x86-64 machine code in a
// minimal static ELF executable (one loadable segment), from this
// assembly (GNU as, Intel syntax); the bytes are objdump's:
var holderCode = []byte{
	0x31, 0xff, // xor edi, edi                 PTRACE_TRACEME
	0x31, 0xf6, // xor esi, esi
	0x31, 0xd2, // xor edx, edx
	0x45, 0x31, 0xd2, // xor r10d, r10d
	0xb8, 0x65, 0x00, 0x00, 0x00, // mov eax, 101          ptrace
	0x0f, 0x05, // syscall
	0xbf, 0x0f, 0x00, 0x00, 0x00, // mov edi, 15           PR_SET_NAME
	0x48, 0x8b, 0x74, 0x24, 0x18, // mov rsi, [rsp+24]     argv[2]: NAME
	0xb8, 0x9d, 0x00, 0x00, 0x00, // mov eax, 157          prctl
	0x0f, 0x05, // syscall
	0xbf, 0x03, 0x00, 0x00, 0x00, // mov edi, 3
	0xb8, 0x03, 0x00, 0x00, 0x00, // mov eax, 3            close
	0x0f, 0x05, // syscall
	0xbf, 0x04, 0x00, 0x00, 0x00, // mov edi, 4
	0xbe, 0x02, 0x00, 0x00, 0x00, // mov esi, 2            F_SETFD
	0xba, 0x01, 0x00, 0x00, 0x00, // mov edx, 1            FD_CLOEXEC
	0xb8, 0x48, 0x00, 0x00, 0x00, // mov eax, 72           fcntl
	0x0f, 0x05, // syscall
	0xb8, 0x27, 0x00, 0x00, 0x00, // mov eax, 39           getpid
	0x0f, 0x05, // syscall
	0x89, 0xc7, // mov edi, eax
	0xbe, 0x13, 0x00, 0x00, 0x00, // mov esi, 19           SIGSTOP
	0xb8, 0x3e, 0x00, 0x00, 0x00, // mov eax, 62           kill
	0x0f, 0x05, // syscall
	0x48, 0x8b, 0x7c, 0x24, 0x10, // mov rdi, [rsp+16]     argv[1]: PROGRAM
	0x48, 0x8d, 0x74, 0x24, 0x20, // lea rsi, [rsp+32]     &argv[3]
	0x48, 0x8b, 0x04, 0x24, // mov rax, [rsp]          argc
	0x48, 0x8d, 0x54, 0xc4, 0x10, // lea rdx, [rsp+rax*8+16]   environ, after argv's NULL
	0xb8, 0x3b, 0x00, 0x00, 0x00, // mov eax, 59           execve
	0x0f, 0x05, // syscall
	0xf7, 0xd8, // neg eax                      errno
	0x50,                         // push rax
	0xbf, 0x04, 0x00, 0x00, 0x00, // mov edi, 4
	0x48, 0x89, 0xe6, // mov rsi, rsp
	0xba, 0x01, 0x00, 0x00, 0x00, // mov edx, 1
	0xb8, 0x01, 0x00, 0x00, 0x00, // mov eax, 1            write
	0x0f, 0x05, // syscall
	0xbf, 0x01, 0x00, 0x00, 0x00, // mov edi, 1
	0xb8, 0xe7, 0x00, 0x00, 0x00, // mov eax, 231          exit_group
	0x0f, 0x05, // syscall
}

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
	copy(f, "\x7fELF\x02\x01\x01")                            // 64-bit, little endian, version 1, System V
	le.PutUint16(f[16:], 2)                                   // ET_EXEC
	le.PutUint16(f[18:], 62)                                  // EM_X86_64
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
