/* The workload of testdata/run/perf_counter.stp: touch(n) writes a byte
   to each of n fresh pages of its own (n page faults: a mapping of less
   than 2 MiB holds no huge page), nap(ms) sleeps ms milliseconds (a
   context switch at least), spin(ms) keeps the CPU busy ms milliseconds
   of its own time; crowd(n) runs n threads that all sleep at once, until
   the last has started (a program with more live threads than an array
   of MAXMAPENTRIES holds, whatever the machine's speed).
   Usage: perfcount [THREADS]. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) long touch(long n) {
	long size = n * sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	for (long i = 0; i < size; i += sysconf(_SC_PAGESIZE))
		p[i] = 1;
	munmap((void *)p, size);
	return n;
}

__attribute__((noinline)) long nap(long ms) {
	struct timespec t = {ms / 1000, ms % 1000 * 1000000};
	nanosleep(&t, NULL);
	return ms;
}

__attribute__((noinline)) long spin(long ms) {
	struct timespec start, now;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
	while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
	return ms;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static long waiting, released;

/* waiter counts itself in, then sleeps until crowd releases them all. */
static void *waiter(void *arg) {
	pthread_mutex_lock(&lock);
	waiting++;
	pthread_cond_broadcast(&changed);
	while (!released)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
	return arg;
}

__attribute__((noinline)) long crowd(long n) {
	pthread_t *threads = calloc(n, sizeof *threads);
	long started = 0;
	while (started < n && pthread_create(&threads[started], NULL, waiter, NULL) == 0)
		started++;
	pthread_mutex_lock(&lock);
	while (waiting < started)
		pthread_cond_wait(&changed, &lock);
	released = 1;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
	for (long i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	return started;
}

int main(int argc, char **argv) {
	touch(64);
	nap(10);
	spin(50);
	if (argc > 1)
		crowd(atol(argv[1]));
	return 0;
}
