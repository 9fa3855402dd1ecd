/* The workload of the function probe tests (testdata/run/uprobe_*.stp),
   built by the test at -O0 and -O2, PIE and non-PIE: scale is called with
   a 64-bit second argument, so that truncation would show. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long scale(long a, long b) { return a * b; }

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 3, sum = 0;
	for (long i = 1; i <= n; i++)
		sum += scale(i, 0x100000000L);
	printf("%ld\n", sum);
	return 0;
}
