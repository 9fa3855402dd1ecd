/* A 32-bit ARM (EABI) program without libc, assembled with
   arm-linux-gnueabihf-as and linked with arm-linux-gnueabihf-ld: through
   svc with the 32-bit ARM table's numbers (in r7), openat (322) of
   /nonexistent/bpftap-arm32 from AT_FDCWD and execve (11) of it (both
   fail with ENOENT), getppid (64) and exit (1) with status 0; first it
   reads a byte of that path, so that the page is there when a probe
   reads it. An arm64 kernel makes these compat calls: the workload of
   the guest case compat_arm32. */
	.syntax unified
	.arm
	.text
	.globl _start
_start:
	ldr r4, =path
	ldrb r0, [r4]		@ touch path's page
	mvn r0, #99		@ openat(AT_FDCWD (-100), path, O_RDONLY)
	mov r1, r4
	mov r2, #0
	ldr r7, =322
	svc #0
	mov r0, r4		@ execve(path, NULL, NULL)
	mov r1, #0
	mov r2, #0
	mov r7, #11
	svc #0
	mov r7, #64		@ getppid()
	svc #0
	mov r0, #0		@ exit(0)
	mov r7, #1
	svc #0
	.ltorg

	.section .rodata
path:
	.asciz "/nonexistent/bpftap-arm32"
