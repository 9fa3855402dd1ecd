/* A 32-bit x86 (i386) program without libc, assembled with as --32 and
   linked with ld -m elf_i386 (no 32-bit C library needed): add2(37, -42)
   by the i386 calling convention (arguments on the stack), then, through
   int $0x80 with the i386 table's numbers, open (5) and execve (11) of
   /nonexistent/bpftap-i386 (both fail with ENOENT), getppid (64) and
   exit (1) with status 0. The workload of testdata/run/uprobe_i386.stp
   and kernel_syscall_compat.stp. */
	.text
	.globl add2
	.type add2, @function
add2:
	movl 4(%esp), %eax
	addl 8(%esp), %eax
	ret
	.size add2, .-add2

	.globl _start
_start:
	pushl $-42
	pushl $37
	call add2
	addl $8, %esp
	movl $5, %eax		/* open(path, O_RDONLY) */
	movl $path, %ebx
	xorl %ecx, %ecx
	int $0x80
	movl $11, %eax		/* execve(path, NULL, NULL) */
	movl $path, %ebx
	xorl %ecx, %ecx
	xorl %edx, %edx
	int $0x80
	movl $64, %eax		/* getppid() */
	int $0x80
	movl $1, %eax		/* exit(0) */
	xorl %ebx, %ebx
	int $0x80

	.section .rodata
path:
	.asciz "/nonexistent/bpftap-i386"
