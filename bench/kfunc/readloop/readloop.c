/* readloop N [FILE]: N reads of one byte from FILE (/dev/zero), timed with
 * CLOCK_MONOTONIC; prints the ns per read. Every read goes through
 * vfs_read. Built static on the host (gcc -static -O2) for the guests. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: readloop N [FILE]\n");
		return 2;
	}
	long n = atol(argv[1]);
	const char *path = argc > 2 ? argv[2] : "/dev/zero";
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	char c;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		if (read(fd, &c, 1) != 1) {
			perror("read");
			return 1;
		}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
