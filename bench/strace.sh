#!/bin/sh
# bench/strace.sh [ROUNDS] [COUNT]: examples/strace.stp against strace -f on
# a syscall-heavy command (root): dd copying COUNT single bytes (2 calls a
# byte), run time of the whole command line, untraced, under strace -f and
# under bpftap's strace.stp, both writing to /dev/null; interleaved rounds,
# medians, and the time each adds to the untraced run.
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-5}
count=${2:-200000}
bin=$(mktemp -d /tmp/bpftap-strace.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/bpftap
cmd="dd if=/dev/zero of=/dev/null bs=1 count=$count status=none"
timed() { # timed NAME CMD...: wall seconds of CMD
	start=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; end=$(date +%s.%N)
	echo "$1 $(echo "$end - $start" | bc)" | sed "s/^[^ ]*/$name/"
}
for r in $(seq "$rounds"); do
	name=untraced timed $cmd
	name=strace timed strace -f -o /dev/null $cmd
	name=bpftap timed "$bin/bpftap" -o /dev/null examples/strace.stp -c "$cmd"
done | awk '
	{ v[$1, ++n[$1]] = $2 }
	function median(k,   i, j, t, a, m) { m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
	END { u = median("untraced"); s = median("strace"); b = median("bpftap")
		printf "%-10s %8s %8s\n", "case", "seconds", "added"
		printf "%-10s %8.3f %8s\n", "untraced", u, ""
		printf "%-10s %8.3f %8.3f\n", "strace -f", s, s - u
		printf "%-10s %8.3f %8.3f\n", "strace.stp", b, b - u
		printf "strace -f adds %.1fx what strace.stp adds\n", (s - u) / (b - u) }'
