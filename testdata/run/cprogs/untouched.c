/* Strings in pages the process never touches, for the user string reads
   of uprobe programs (testdata/run/usdt_untouched.stp): each string is
   read only by the probes, and sits in read-only data 64 KiB away from
   anything else (the kernel maps the 64 KiB around a faulting address
   with it), one of them across a page boundary. The marker app:tick
   passes a string literal's address, as DTRACE_PROBE2(app, tick, i,
   label) does at -O2; greet is a function whose argument is one.
   Usage: untouched N. */
#include <sys/sdt.h>
#include <stdlib.h>

static const struct {
	char pad[65536];
	char label[16];
	char pad2[65536 - 16 - 6];
	char across[32]; /* 6 bytes in one page, the rest in the next */
} strs __attribute__((aligned(65536))) = {.label = "untouched label", .across = "across two pages"};

__attribute__((noinline)) void greet(const char *s) { __asm__ volatile("" : : "r"(s) : "memory"); }

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 1;
	for (int i = 0; i < n; i++) {
		DTRACE_PROBE2(app, tick, i, strs.label);
		greet(strs.across);
	}
	return 0;
}
