/* The workload of testdata/run/kernel_syscall_compat_int80.stp: a 64-bit
   program that makes i386 system calls through int $0x80 (open, 5, and
   execve, 11, of a path that does not exist; x86_64's numbers 5 and 11
   are fstat and munmap), between native getppid calls. Built without PIE,
   so that the path's address fits the 32-bit registers. */
#include <unistd.h>

static long int80(long nr, const char *a, long b) {
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(a), "c"(b), "d"(0L) : "memory");
	return r;
}

static const char path[] = "/nonexistent/bpftap-int80";

int main(void) {
	(void)*(const volatile char *)path; /* the page in memory: the probes read the path */
	getppid();
	long open = int80(5, path, 0), execve = int80(11, path, 0);
	getppid();
	return open == -2 && execve == -2 ? 0 : 1;
}
