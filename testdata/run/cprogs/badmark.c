/* A marker with an operand bpftap cannot read between two it can:
   app:mixed's arguments are the constant 7, the SSE register %xmm0 (not
   a general-purpose register) and the constant 9. */
#include <sys/sdt.h>

int main(void) {
	__asm__ __volatile__(STAP_PROBE_ASM(app, mixed, -4@$7 8@%xmm0 8@$9));
	return 0;
}
