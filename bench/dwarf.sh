#!/bin/sh
# bench/dwarf.sh [ROUNDS [FUNCTIONS]]: what reading a program's DWARF costs
# (root). A generated C program of FUNCTIONS functions (default 18,000:
# about 10 MB, built with gcc -g -O1), each taking a pointer to a
# structure of its own; start-up, launch to exit of a whole run
# (`-c "big 1"`), of a probe reading `$p->a` through the DWARF against the
# same probe reading `user_long(pointer_arg(1))`, and, when BPFTAP_BASE
# names another bpftap binary, of that probe under it (start-up of a
# script without DWARF forms before and after). Then the BPF instructions
# of a `$x` read against `int_arg(1)`'s (-p3), and the cost per hit of
# each on bench/uprobes/uloop.c built with -g at -O2 (a register) and -O0
# (the frame, after the prologue). Rounds interleaved; medians, ratios.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-9}
nfuncs=${2:-18000}
setup dwarf
/usr/bin/python3 - "$bin/big.c" "$nfuncs" <<'PY'
import sys
n = int(sys.argv[2])
with open(sys.argv[1], "w") as f:
    f.write("#include <stdlib.h>\n")
    for i in range(n):
        f.write("struct s%05d { long a; int b; short c; char name[16]; struct s%05d *next; double d; unsigned e:3, g:5; long h[4]; };\n" % (i, i))
        f.write("__attribute__((noinline)) long fn%05d(struct s%05d *p, long x) { long t = 0; for (int i = 0; i < x; i++) t += p->a + p->h[i & 3] + p->b; return t + p->c; }\n" % (i, i))
    m = n // 2
    f.write("int main(int argc, char **argv) { struct s%05d s = {.a = 7}; return fn%05d(&s, argc > 1 ? atol(argv[1]) : 1) != 7 + 0; }\n" % (m, m))
PY
gcc -g -O1 -o "$bin/big" "$bin/big.c"
fn=$(printf 'fn%05d' $((nfuncs / 2)))
echo "program: $nfuncs functions, $(stat -c %s "$bin/big") bytes"

# run NAME BPFTAP BODY: one whole run of BODY on $fn, launch to exit, ms
run() {
	start=$(date +%s%N)
	"$2" -e "global n; probe process(\"$bin/big\").function(\"$fn\") { $3 } probe end { if (n != 7) println(\"wrong: \", n) }" -c "$bin/big 1" >"$bin/out" 2>&1
	if [ -s "$bin/out" ]; then cat "$bin/out" >&2; exit 1; fi
	echo "$1 $(( ($(date +%s%N) - start) / 100000 ))"
}
for r in $(seq "$rounds"); do
	run dwarf "$bin/bpftap" 'n = $p->a'
	run regs "$bin/bpftap" 'n = user_long(pointer_arg(1))'
	if [ -n "${BPFTAP_BASE:-}" ]; then run base "$BPFTAP_BASE" 'n = user_long(pointer_arg(1))'; fi
done >"$bin/startup"
awk "$median"'
END { d = median("dwarf") / 10; g = median("regs") / 10
	printf "start-up, launch to exit: $p->a %.1f ms, user_long(pointer_arg(1)) %.1f ms: %.2fx\n", d, g, d / g
	if (n["base"]) { b = median("base") / 10; printf "without DWARF forms: %.1f ms, BPFTAP_BASE %.1f ms: %.2fx\n", g, b, g / b } }' "$bin/startup"

# The programs, and the cost per hit.
for opt in O2 O0; do
	gcc -g -$opt -o "$bin/uloop_$opt" bench/uprobes/uloop.c
	for body in 'n += $x' 'n += int_arg(1)'; do
		echo "-$opt $body: $("$bin/bpftap" -p3 -e "global n; probe process(\"$bin/uloop_$opt\").function(\"hit\") { $body }" | grep -c '^\s*[0-9]*:') BPF instructions"
	done
done
nf=100000
for r in $(seq "$rounds"); do
	for opt in O2 O0; do
		u=$bin/uloop_$opt
		work() { taskset -c 1 "$u" func $nf; }
		echo "untraced_$opt $(work)"
		traced "dwarf_$opt" "$bin/bpftap" -v -e "global n; probe process(\"$u\").function(\"hit\") { n += \$x }"
		traced "regs_$opt" "$bin/bpftap" -v -e "global n; probe process(\"$u\").function(\"hit\") { n += int_arg(1) }"
	done
done >"$bin/hits"
awk "$median"'
END { for (i = 1; i <= 2; i++) { o = i == 1 ? "O2" : "O0"; u = median("untraced_" o); d = median("dwarf_" o) - u; g = median("regs_" o) - u
	printf "per hit, -%s: $x %.0f ns, int_arg(1) %.0f ns added: %.3fx\n", o, d, g, d / g } }' "$bin/hits"
