/* The workload of testdata/run/uprobe_entry.stp: nap(ms) sleeps ms
   milliseconds, depth(n) recurses n deep, outer(n) calls inner(n + 1);
   each is called for 1 ... the first argument. */
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) long nap(long ms) {
	struct timespec t = {ms / 1000, ms % 1000 * 1000000};
	nanosleep(&t, NULL);
	return ms;
}
__attribute__((noinline)) long depth(long n) { return n <= 0 ? 0 : depth(n - 1) + 1; }
__attribute__((noinline)) long inner(long n) { return 10 * n; }
__attribute__((noinline)) long outer(long n) { return inner(n + 1) + 1; }

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1, s = 0;
	for (long i = 1; i <= n; i++)
		s += nap(10 * i) + depth(i) + outer(i);
	return s > 0 ? 0 : 1;
}
