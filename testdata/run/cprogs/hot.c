/* A CPU-bound program for the sampling tests: main calls work, which calls
 * hot, where nearly all the time goes. Built at -O0 with frame pointers so
 * that the kernel can walk its user stack. Runs for argv[1] milliseconds
 * of CPU time (default 1000). */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void hot(void)
{
	for (int i = 0; i < 100000; i++)
		sink += i;
}

__attribute__((noinline)) void work(long ms)
{
	struct timespec t;
	do {
		hot();
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while (t.tv_sec * 1000 + t.tv_nsec / 1000000 < ms);
}

int main(int argc, char **argv)
{
	work(argc > 1 ? atol(argv[1]) : 1000);
	return 0;
}
