/* A 32-bit x86 (i386) program without libc, assembled with as --32 and
   linked with ld -m elf_i386 (no 32-bit C library needed): the USDT
   marker app:mark32 with three register operands, add2(37, -42)
   by the i386 calling convention (arguments on the stack), then, through
   int $0x80 with the i386 table's numbers, open (5) and execve (11) of
   /nonexistent/bpftap-i386 (both fail with ENOENT), getppid (64) and
   exit (1) with status 0; first it reads a byte of that path, so
   that the page is there when a tracepoint reads it. The workload of
   testdata/run/uprobe_i386.stp
   and kernel_syscall_compat_i386.stp. */
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
