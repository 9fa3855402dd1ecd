/* The seed's syscall-heavy OpenMP program (STaKTAU's first benchmark): π by
 * a reduction, recomputed in many small parallel regions, so that the run
 * is mostly the OpenMP runtime starting and synchronizing its threads (with
 * OMP_WAIT_POLICY=passive, through futex system calls). Prints π and its
 * own run time in seconds.
 *   pi [REGIONS]   (default 2000) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	long regions = argc > 1 ? atol(argv[1]) : 2000, steps = 20000;
	double pi = 0, step = 1.0 / steps, t0 = omp_get_wtime();
	for (long r = 0; r < regions; r++) {
		double sum = 0;
#pragma omp parallel for reduction(+ : sum)
		for (long i = 0; i < steps; i++) {
			double x = (i + 0.5) * step;
			sum += 4.0 / (1.0 + x * x);
		}
		pi = sum * step;
	}
	printf("%.9f %.6f\n", pi, omp_get_wtime() - t0);
	return 0;
}
