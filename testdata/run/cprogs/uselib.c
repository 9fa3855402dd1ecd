#include <stdio.h>
long lib_scale(long a, int b);
int main(void) { printf("%ld\n", lib_scale(0x100000000L, -3)); return 0; }
