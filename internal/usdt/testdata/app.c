/* The markers TestUprobe attaches to, built at -O0 and -O2, PIE and not,
   with and without a semaphore for app:tick, and with a shared library
   (lib.c) when LIB is defined. Usage: app N; prints how many of its N
   ticks found the semaphore set (all of them without a semaphore). */
#ifdef SEMAPHORE
#define _SDT_HAS_SEMAPHORES 1
#define SEMA __attribute__((section(".probes")))
unsigned short app_ops_semaphore SEMA, app_wide_semaphore SEMA, app_tick_semaphore SEMA;
#define TICK_ENABLED() __builtin_expect(app_tick_semaphore, 0)
#else
#define TICK_ENABLED() 1
#endif
#include <sys/sdt.h>
#include <stdio.h>
#include <stdlib.h>

long counter = 7;
static int table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
struct s { char c; short h; int i; long l; unsigned char uc; };
static int enabled;
/* A uprobe reads user memory without faulting pages in: main touches
   table, which only the note refers to, so that its page is present. */
volatile int sink;

#ifdef LIB
int lib_call(int x);
#else
static int lib_call(int x) { return x; }
#endif

__attribute__((noinline)) void work(struct s *p, int k, signed char sc, unsigned long ul)
{
	DTRACE_PROBE6(app, ops, p->i, p->h, sc, table[k], counter, ul);
	DTRACE_PROBE3(app, wide, p->c, p->uc, -5);
	if (TICK_ENABLED()) {
		enabled++;
		DTRACE_PROBE2(app, tick, p->l, "label");
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	struct s v = {-3, -300, -70000, -5000000000L, 200};
	sink = table[n & 7];
	for (int i = 0; i < n; i++)
		work(&v, lib_call(i) & 7, -7, 0xfffffffffffffff0UL);
	printf("%d\n", enabled);
	return 0;
}
