/* The seed's compute-bound OpenMP program (STaKTAU's second benchmark
 * stands in for a ray tracer): one parallel region of pure arithmetic,
 * almost no system calls. Prints a checksum and its own run time.
 *   compute [ITERATIONS]   (default 200000000) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 200000000;
	double acc = 0, t0 = omp_get_wtime();
#pragma omp parallel for reduction(+ : acc)
	for (long i = 0; i < n; i++) {
		double x = (double)(i % 1000) * 1e-3;
		acc += x * x / (1.0 + x);
	}
	printf("%.3f %.6f\n", acc, omp_get_wtime() - t0);
	return 0;
}
