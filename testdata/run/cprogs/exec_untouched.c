/* The workload of testdata/run/kernel_syscall_execve_untouched.stp: a
   64-bit program that execs /bin/true through the i386 execve (int $0x80,
   11), the path in a page the process never touches (read-only data
   64 KiB away from anything else, as cprogs/untouched.c), so that only
   the kernel's own read of the path faults it in. Built without PIE, so
   that the path's address fits the 32-bit registers. */
static const struct {
	char pad[65536];
	char path[16];
	char pad2[65536 - 16];
} strs __attribute__((aligned(65536))) = {.path = "/bin/true"};

int main(void) {
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(11L), "b"(strs.path), "c"(0L), "d"(0L) : "memory");
	return 1; /* the exec failed */
}
