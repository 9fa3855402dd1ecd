/* label N: sums 0, 1, ... until the sum passes 100 or N terms, then jumps
 * to the label done; built with -g for the .label tests (uprobe_dwarf). */
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

int main(int argc, char **argv)
{
	work(argc > 1 ? atoi(argv[1]) : 20);
	return 0;
}
