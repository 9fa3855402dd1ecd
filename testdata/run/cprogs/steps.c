/* The workload of testdata/run/uprobe_multi.stp: step1 ... step4, called
   1 ... 4 times a round, and puts, called once a round through the PLT;
   the number of rounds is the first argument. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long step1(long x) { return x + 1; }
__attribute__((noinline)) long step2(long x) { return x + 2; }
__attribute__((noinline)) long step3(long x) { return x + 3; }
__attribute__((noinline)) long step4(long x) { return x + 4; }

int main(int argc, char **argv) {
	long rounds = argc > 1 ? atol(argv[1]) : 1, s = 0;
	for (long r = 0; r < rounds; r++) {
		s = step1(s);
		for (int i = 0; i < 2; i++)
			s = step2(s);
		for (int i = 0; i < 3; i++)
			s = step3(s);
		for (int i = 0; i < 4; i++)
			s = step4(s);
		puts("round");
	}
	return s == rounds * 30 ? 0 : 1;
}
