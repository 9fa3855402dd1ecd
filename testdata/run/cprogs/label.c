/* label N: sums 0, 1, ... until the sum passes 100 or N terms, then jumps
 * to the label done; then scales 1.5 by N; built with -g for the .label
 * tests and the -O0 prologue (uprobe_dwarf). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int work(int n)
{
	int total = 0;
	for (int i = 0; i < n; i++) {
		total += i;
		if (total > 100)
			goto done;
	}
	total = -total;
done:
	printf("%d\n", total);
	return total;
}

/* a double's parameters come in another register file: at -O0 a probe
 * reading n moves after the prologue */
__attribute__((noinline)) double scaled(double f, int n)
{
	return f * n;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	work(n);
	printf("%g\n", scaled(1.5, n));
	return 0;
}
