/* Built with callee.c: a second helper(), static to this file, which
 * three() calls; callee.c's one() and two() call callee.c's (a .callee
 * probe tells the two apart by the call's DWARF, not by the name). */
static volatile long other;

__attribute__((noipa)) static long helper(long x)
{
	other += x * 3;
	return other;
}

__attribute__((noipa)) long three(long x)
{
	return helper(x) + 3;
}
