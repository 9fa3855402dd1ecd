/* A 32-bit x86 (i386) program without libc, assembled with as --32 and
   linked with ld -m elf_i386 (no 32-bit C library needed): the USDT
   marker app:mark32 with three register operands, add2(37, -42)
   by the i386 calling convention (arguments on the stack), then, through
   int $0x80 with the i386 table's numbers, open (5) and execve (11) of
   /nonexistent/bpftap-i386 (both fail with ENOENT), getppid (64),
   statfs64 (268) and stat64 (195) of that path (ENOENT) and fstatfs64
   (269) of stdout into NULL (EFAULT), calls x86_64 makes only for 32-bit
   processes, and
   exit (1) with status 0; first it reads a byte of that path, so
   that the page is there when a tracepoint reads it. The workload of
   testdata/run/uprobe_i386.stp, kernel_syscall_compat_i386.stp and
   kernel_syscall_compat_only.stp. */
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
	movzbl path, %eax	/* touch path's page: a tracepoint's read of it
				   faults nothing in, and on a busy machine the
				   page is not always mapped beside the text's */
	movl $37, %eax		/* the marker app:mark32(37, -42, path) */
	movl $-42, %ecx
	movl $path, %edx
990:	nop
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
	movl $268, %eax		/* statfs64(path, 84, NULL): ENOENT */
	movl $path, %ebx
	movl $84, %ecx		/* sizeof(struct statfs64) on i386 */
	xorl %edx, %edx
	int $0x80
	movl $195, %eax		/* stat64(path, NULL): ENOENT */
	movl $path, %ebx
	xorl %ecx, %ecx
	int $0x80
	movl $269, %eax		/* fstatfs64(1, 84, NULL): EFAULT (EINVAL */
	movl $1, %ebx		/* were the size wrong) */
	movl $84, %ecx
	xorl %edx, %edx
	int $0x80
	movl $1, %eax		/* exit(0) */
	xorl %ebx, %ebx
	int $0x80

	/* the marker's note, as sys/sdt.h writes it for i386 */
	.section .note.stapsdt,"?","note"
	.balign 4
	.4byte 992f-991f, 994f-993f, 3
991:	.asciz "stapsdt"
992:	.balign 4
993:	.4byte 990b
	.4byte _.stapsdt.base
	.4byte 0
	.asciz "app"
	.asciz "mark32"
	.asciz "-4@%eax -4@%ecx 4@%edx"
994:	.balign 4

	.section .stapsdt.base,"aG","progbits",.stapsdt.base,comdat
	.weak _.stapsdt.base
	.hidden _.stapsdt.base
_.stapsdt.base: .space 1

	.section .rodata
path:
	.asciz "/nonexistent/bpftap-i386"
