/* request N: handles a request N times over, then picks one of two;
 * built with -g at -O0 and -O2 for the DWARF tests (uprobe_dwarf.stp,
 * internal/debuginfo): a pointer to a structure with a char array, a
 * string, a nested structure, bitfields and a pointer to another. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct inner {
	long a;
	short b;
};

struct request {
	char path[32];
	const char *name;
	int len;
	struct inner in;
	unsigned flags : 3, mode : 5;
	struct request *next;
};

long counter = 7;

__attribute__((noinline)) long handle(struct request *req, int n)
{
	long sum = 0;
	for (int i = 0; i < n; i++)
		sum += req->len * i + req->in.a + req->in.b + req->flags;
	counter += sum;
	return sum;
}

__attribute__((noinline)) struct request *pick(struct request *a, struct request *b, long which)
{
	return which ? b : a;
}

int main(int argc, char **argv)
{
	static struct request r = {.name = "first", .len = 42, .in = {.a = -5, .b = 9}, .flags = 5, .mode = 17};
	static struct request s = {.name = "second", .len = 7};
	strcpy(r.path, "/index.html");
	strcpy(s.path, "/two");
	r.next = &s;
	int n = argc > 1 ? atoi(argv[1]) : 3;
	/* the strings' pages are in memory when probes without page faults
	 * (before sleepable uprobes, Linux 6.1) read them */
	volatile size_t touched = strlen(r.name) + strlen(s.name);
	(void)touched;
	printf("%ld\n", handle(&r, n));
	printf("%s\n", pick(&r, &s, n > 2)->name);
	return 0;
}
