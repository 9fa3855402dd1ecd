/* callee N: helper() is called from one() and from two(); main calls
 * one() N times (default 3), two() twice, from two call sites, and
 * three() once, which calls callee_twin.c's own static helper(); one()
 * has twice() inlined. Built -g -O2 for the .callee tests: GCC describes
 * the calls in the DWARF (DW_TAG_call_site). noipa keeps the functions
 * whole and called (no inlining, cloning or IPA changes). */
#include <stdlib.h>

long three(long x);

static volatile long sink;

__attribute__((noipa)) long helper(long x)
{
	sink += x;
	return sink;
}

static inline __attribute__((always_inline)) long twice(long x)
{
	return x * 2 + sink;
}

__attribute__((noipa)) long one(long x)
{
	return helper(twice(x)) + 1;
}

__attribute__((noipa)) long two(long x)
{
	return helper(x + 100) + 2;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	long sum = 0;
	for (int i = 0; i < n; i++)
		sum += one(i);
	sum += two(1);
	sum += two(2);
	sum += three(7);
	return sum == 42;
}
