/* A kernel module's layout in a relocatable object: each function in a
 * section of its own, each at offset 0 of it, as a module's .text and
 * .init.text are (TestModuleLayout). */
int counter = 3;
static long hits;

__attribute__((section(".init.text"), noinline)) int setup(int start)
{
	counter = start * 2;
	return counter + 1;
}

__attribute__((noinline)) long handle(long n, int *seen)
{
	hits += n;
	if (seen)
		*seen = counter;
	return hits;
}
