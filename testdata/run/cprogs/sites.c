/* A program with many distinct user stacks for the stack map tests: main
 * calls leaf() through site() from 32 call sites, argv[1] rounds of them
 * (default 1). Built at -O0 with frame pointers so that the kernel can
 * walk its user stack: leaf, site, the call site in main, main's callers;
 * every call site is a stack of its own, 32 in all, the first call of a
 * round always the same. */
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void leaf(void)
{
	sink++;
}

__attribute__((noinline)) void site(void)
{
	leaf();
}

#define SITES4 site(); site(); site(); site();
#define SITES32 SITES4 SITES4 SITES4 SITES4 SITES4 SITES4 SITES4 SITES4

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	for (int i = 0; i < rounds; i++) {
		SITES32
	}
	return 0;
}
