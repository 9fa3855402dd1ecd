/* The workload of bench/uprobes.sh: `uloop MODE N` calls, N times in a
   tight loop, a function (MODE func), a sys/sdt.h marker (mark), or a
   marker guarded by its semaphore (guarded: fires only while a tracer
   has raised the semaphore), then prints the ns per iteration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

/* With semaphores every marker has one; bench:mark never reads its own. */
__attribute__((section(".probes"))) unsigned short bench_mark_semaphore, bench_guarded_semaphore;

__attribute__((noinline)) long hit(long x) { __asm__ volatile(""); return x + 1; }

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "func";
	long n = argc > 2 ? atol(argv[2]) : 1000000, s = 0;
	double t0 = now();
	if (strcmp(mode, "func") == 0)
		for (long i = 0; i < n; i++) s = hit(s);
	else if (strcmp(mode, "mark") == 0)
		for (long i = 0; i < n; i++) { DTRACE_PROBE1(bench, mark, i); __asm__ volatile(""); }
	else
		for (long i = 0; i < n; i++) { if (bench_guarded_semaphore) DTRACE_PROBE1(bench, guarded, i); __asm__ volatile(""); }
	printf("%.2f\n", (now() - t0) / n);
	return s < 0;
}
