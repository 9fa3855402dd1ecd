#!/bin/sh
# bench/argstr.sh [ROUNDS]: what `syscall.*` with argstr on every call adds
# per call (root). lseek(fd, 0, SEEK_CUR) in a loop pinned to CPU 1, ns per
# call untraced, under the empty-program floor, under bpftap's syscall_any
# (name only) and under bpftap's syscall.* formatting argstr on every call
# (lseek's alias: fildes, offset, whence_str), interleaved; prints the
# median ns added by each and the ratio to the floor's.
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-9}
bin=$(mktemp -d /tmp/bpftap-argstr.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/bpftap ./bench/getppid ./bench/floor
work() { "$bin/getppid" -call lseek -n 1000000 -cpu 1; }
traced() { # traced NAME CMD...: run the workload under CMD, print NAME ns
	name=$1; shift
	taskset -c 0 "$@" >/dev/null 2>&1 & pid=$!
	sleep 1.5
	echo "$name $(work)"
	kill -INT $pid; wait $pid 2>/dev/null || true
}
for r in $(seq "$rounds"); do
	echo "untraced $(work)"
	traced floor "$bin/floor" -prog empty
	traced syscall_any "$bin/bpftap" -e 'global n; probe syscall_any { if (pid() == 0) n++ }'
	traced argstr "$bin/bpftap" -e 'global n; probe syscall.* { if (pid() == 0) printf("%s(%s)\n", name, argstr) }'
done | awk '
	{ v[$1, ++n[$1]] = $2 }
	function median(k,   i, j, t, a, m) { m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
	END { u = median("untraced"); f = median("floor") - u
		printf "%-12s %8s %8s %8s\n", "case", "ns/call", "added", "x floor"
		split("untraced floor syscall_any argstr", ks, " ")
		for (i = 1; i <= 4; i++) { k = ks[i]; m = median(k)
			printf "%-12s %8.1f %8.1f %8s\n", k, m, m - u, k == "untraced" ? "" : sprintf("%.2f", (m - u) / f) } }'
