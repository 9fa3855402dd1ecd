package driver

import "encoding/binary"

// The holder on arm64 does what holder_amd64.go says, in the same order,
// by arm64's system call convention (the number in x8, the arguments in
// x0-x5, svc #0) and its generic numbers (asm-generic/unistd.h). Each
// instruction's word is beside its text, as objdump -d shows it (GNU as
// assembled them).
var holderCode = arm64Code(
	0xd2800000, // mov x0, #0                   PTRACE_TRACEME
	0xd2800001, // mov x1, #0
	0xd2800002, // mov x2, #0
	0xd2800003, // mov x3, #0
	0xd2800ea8, // mov x8, #117                 ptrace
	0xd4000001, // svc #0
	0xd28001e0, // mov x0, #15                  PR_SET_NAME
	0xf9400fe1, // ldr x1, [sp, #24]            argv[2]: NAME
	0xd28014e8, // mov x8, #167                 prctl
	0xd4000001, // svc #0
	0xd2800060, // mov x0, #3
	0xd2800728, // mov x8, #57                  close
	0xd4000001, // svc #0
	0xd2800080, // mov x0, #4
	0xd2800041, // mov x1, #2                   F_SETFD
	0xd2800022, // mov x2, #1                   FD_CLOEXEC
	0xd2800328, // mov x8, #25                  fcntl
	0xd4000001, // svc #0
	0xd2801588, // mov x8, #172                 getpid
	0xd4000001, // svc #0
	0xd2800261, // mov x1, #19                  SIGSTOP (to the pid in x0)
	0xd2801028, // mov x8, #129                 kill
	0xd4000001, // svc #0
	0xf9400be0, // ldr x0, [sp, #16]            argv[1]: PROGRAM
	0x910083e1, // add x1, sp, #32              &argv[3]
	0xf94003e2, // ldr x2, [sp]                 argc
	0x8b226fe2, // add x2, sp, x2, lsl #3
	0x91004042, // add x2, x2, #16              environ, after argv's NULL
	0xd2801ba8, // mov x8, #221                 execve
	0xd4000001, // svc #0
	0xcb0003e0, // neg x0, x0                   errno
	0xf81f0fe0, // str x0, [sp, #-16]!
	0xd2800080, // mov x0, #4
	0x910003e1, // mov x1, sp
	0xd2800022, // mov x2, #1
	0xd2800808, // mov x8, #64                  write
	0xd4000001, // svc #0
	0xd2800020, // mov x0, #1
	0xd2800bc8, // mov x8, #94                  exit_group
	0xd4000001, // svc #0
)

// holderMachine is the ELF machine of holderCode: EM_AARCH64.
const holderMachine = 183

// arm64Code is the instructions' little-endian bytes.
func arm64Code(words ...uint32) []byte {
	code := make([]byte, 0, 4*len(words))
	for _, w := range words {
		code = binary.LittleEndian.AppendUint32(code, w)
	}
	return code
}
