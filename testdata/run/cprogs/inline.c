/* inline N: adds the squares of N and N+1, square() inlined twice into
 * add_squares(), itself inlined into main(); built with -g -O2 for the
 * .inline tests (uprobe_dwarf). */
#include <stdio.h>
#include <stdlib.h>

static inline int square(int v)
{
	return v * v;
}

static int add_squares(int a, int b)
{
	return square(a) + square(b);
}

int main(int argc, char **argv)
{
	int a = argc > 1 ? atoi(argv[1]) : 3;
	printf("%d\n", add_squares(a, a + 1));
	return 0;
}
