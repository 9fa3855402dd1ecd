#!/bin/sh
# bench/uprobes.sh [ROUNDS]: the cost of user-space probes (root). uloop
# (bench/uprobes/uloop.c) calls a function, or passes a sys/sdt.h marker,
# in a tight loop pinned to CPU 1; ns per iteration untraced, under bpftap
# and under bpftrace counting hits (a uprobe, a USDT marker), interleaved;
# the dormant cost of a semaphore-guarded marker against an unguarded
# one (both untraced); then the time from launching bpftap to its probes
# attached, and from SIGINT to its exit, on all 1,000 functions of a
# generated program. Prints medians; bench/RESULTS-uprobes.md has a run.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-9}
setup uprobes
gcc -O2 -o "$bin/uloop" bench/uprobes/uloop.c
u=$bin/uloop
nf=100000 nm=1000000 # a uprobe hit on a function costs microseconds here (see RESULTS-uprobes.md)

# attached NAME PATTERN CMD...: start CMD on CPU 0, wait (at most 60 s)
# until its output matches PATTERN, run work under it, print NAME and the
# ns per iteration.
attached() {
	name=$1 pattern=$2; shift 2
	taskset -c 0 "$@" >"$bin/out" 2>&1 & pid=$!
	i=0
	until grep -Eq "$pattern" "$bin/out" || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
	sleep 0.5
	echo "$name $(work)"
	kill -INT $pid; wait $pid 2>/dev/null || true
}

for r in $(seq "$rounds"); do
	work() { taskset -c 1 "$u" func $nf; }
	echo "func_untraced $(work)"
	attached func_bpftap '^Pass 5: attached' "$bin/bpftap" -v -e "global n; probe process(\"$u\").function(\"hit\") { n++ }"
	attached func_bpftrace '^Attaching' bpftrace -e "uprobe:$u:hit { @n = count(); }"
	work() { taskset -c 1 "$u" mark $nm; }
	echo "mark_untraced $(work)"
	attached mark_bpftap '^Pass 5: attached' "$bin/bpftap" -v -e "global n; probe process(\"$u\").mark(\"mark\") { n++ }"
	attached mark_bpftrace '^Attaching' bpftrace -e "usdt:$u:bench:mark { @n = count(); }"
	work() { taskset -c 1 "$u" guarded $nm; }
	echo "guarded_untraced $(work)"
done >"$bin/hits"
awk "$median"'
END { printf "%-18s %8s %8s\n", "case", "ns/iter", "added"
	split("func_untraced func_bpftap func_bpftrace mark_untraced mark_bpftap mark_bpftrace guarded_untraced", ks, " ")
	for (i = 1; i <= 7; i++) { k = ks[i]; m = median(k); split(k, p, "_"); b = median(p[1] == "guarded" ? "mark_untraced" : p[1] "_untraced")
		printf "%-18s %8.2f %8.2f\n", k, m, m - b } }' "$bin/hits"

# The attach time: a program of 1,000 functions, all probed.
python3 - "$bin/many.c" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(1000):
        f.write("__attribute__((noinline)) long fn%04d(long x) { return x + %d; }\n" % (i, i))
    f.write("int main(void) { long s = 0;\n" + "".join(" s = fn%04d(s);\n" % i for i in range(1000)) + " return s == 0; }\n")
PY
gcc -O1 -o "$bin/many" "$bin/many.c"
for r in $(seq "$rounds"); do
	start=$(date +%s%N)
	"$bin/bpftap" -v -e "global n; probe process(\"$bin/many\").function(\"fn*\") { n++ }" >/dev/null 2>"$bin/out" & pid=$!
	until grep -q '^Pass 5: attached' "$bin/out"; do sleep 0.005; done
	up=$(date +%s%N)
	kill -INT $pid; wait $pid 2>/dev/null || true
	echo "attach_ms $(( (up - start) / 1000000 ))"
	echo "detach_ms $(( ($(date +%s%N) - up) / 1000000 ))"
done | awk "$median"'END { printf "1,000 functions: launch to attached %d ms, SIGINT to exit %d ms (medians)\n", median("attach_ms"), median("detach_ms") }'
