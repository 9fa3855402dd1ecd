/* A shared library's marker, with a semaphore, for TestUprobe. */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

unsigned short lib_call_semaphore __attribute__((section(".probes")));
static long lib_total = 5;

int lib_call(int x)
{
	lib_total += x;
	if (lib_call_semaphore)
		DTRACE_PROBE2(lib, call, x, lib_total);
	return x;
}
