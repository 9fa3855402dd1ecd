package driver

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
// a script sees nothing of it. The code is x86-64 machine code, each
// instruction beside its bytes (GNU as, Intel syntax, as objdump shows
// them), in a minimal static ELF executable (holder.go).
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

// holderMachine is the ELF machine of holderCode: EM_X86_64.
const holderMachine = 62
