/* Markers for the process.mark tests: app:tick with a number and a label
   (guarded by its semaphore, which the kernel raises while a probe is
   attached), app:wide with a 64-bit value (its semaphore unread).
   Usage: ticks N. */
#define _SDT_HAS_SEMAPHORES 1
__attribute__((section(".probes"))) unsigned short app_tick_semaphore, app_wide_semaphore;
#include <sys/sdt.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 1;
	const char *labels[] = {"zero", "one", "two", "three"};
	size_t touched = 0; /* a uprobe cannot fault a page in: read them first */
	for (int i = 0; i < 4; i++)
		touched += strlen(labels[i]);
	if (touched == 0)
		return 1;
	for (int i = 0; i < n; i++) {
		if (app_tick_semaphore)
			DTRACE_PROBE2(app, tick, i, labels[i & 3]);
		DTRACE_PROBE1(app, wide, 0x123456789abcdefL * (i + 1));
	}
	return 0;
}
