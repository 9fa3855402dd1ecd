/* A shared library for the function probe tests: lib_scale is probed in
   libscale.so, called by uselib. */
__attribute__((noinline)) long lib_scale(long a, int b) { return a * b - 1; }
