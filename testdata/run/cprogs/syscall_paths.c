/* A program whose kernel time has known call paths, for
 * examples/syscall_time_flamegraph.stp: main calls read_phase, which
 * calls read_small, which reads /dev/zero a byte at a time argv[1] times
 * (default 2000); then main calls sleep_phase, which calls nap, which
 * sleeps 200 ms in one nanosleep. Built at -O0 with frame pointers (leaf
 * functions' too) so that the kernel can walk its user stack. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void nap(void)
{
	struct timespec t = {0, 200 * 1000 * 1000};
	nanosleep(&t, NULL);
}

__attribute__((noinline)) void sleep_phase(void)
{
	nap();
}

__attribute__((noinline)) void read_small(int fd, long n)
{
	char c;
	for (long i = 0; i < n; i++)
		if (read(fd, &c, 1) != 1)
			perror("read");
}

__attribute__((noinline)) void read_phase(long n)
{
	int fd = open("/dev/zero", O_RDONLY);
	if (fd < 0) {
		perror("/dev/zero");
		exit(1);
	}
	read_small(fd, n);
	close(fd);
}

int main(int argc, char **argv)
{
	read_phase(argc > 1 ? atol(argv[1]) : 2000);
	sleep_phase();
	return 0;
}
