/* An OpenMP program for examples/thread_profile.stp: a parallel region of
 * two threads (the main thread and one libgomp starts), each making
 * argv[1] reads of 1000 bytes of /dev/zero (default 200) and sleeping
 * 50 ms once, then meeting the other at the region's end. Built with
 * gcc -fopenmp. */
#include <fcntl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int reads = argc > 1 ? atoi(argv[1]) : 200;
	int fd = open("/dev/zero", O_RDONLY);
	int threads = 0;
	if (fd < 0) {
		perror("/dev/zero");
		return 1;
	}
#pragma omp parallel num_threads(2) reduction(+ : threads)
	{
		char buf[1000];
		struct timespec nap = {0, 50 * 1000 * 1000};
		for (int i = 0; i < reads; i++)
			if (read(fd, buf, sizeof buf) != sizeof buf)
				perror("read");
		nanosleep(&nap, NULL);
		threads = 1;
	}
	printf("%d threads\n", threads);
	return 0;
}
