#!/bin/sh
# bench/json.sh [ROUNDS] [CALLS]: what --json costs against text output on
# a printf flood (issue 25's target: at most 1.2x). Two floods, each run
# as text and as JSON, interleaved, ROUNDS times (default 7), output to a
# file (its writes are part of the cost):
#   kernel  a kernel probe printing a record per getppid() call of the -c
#           workload (CALLS calls, default 300000, pinned to CPU 1): the
#           ring buffer, the decoding and the rendering of every record;
#   user    a begin probe printing CALLS lines in a loop: the interpreter
#           and the rendering.
# Measures bpftap's CPU time (user + system, GNU time) per run and prints,
# per flood, the median of each mode, their ratio and the bytes written;
# records lost to a full ring make the script fail (they would flatter the
# slower mode). Root; about 1 minute at the defaults.
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-7}
calls=${2:-300000}
bin=$(mktemp -d /tmp/bpftap-json.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/bpftap ./bench/getppid
kernel='probe kernel.trace("raw_syscalls:sys_enter") { if (pid() == target()) printf("%d %s: %s %d\n", $id, execname(), "sys_enter", cpu()) }'
user="probe begin { for (i = 0; i < $calls; i++) printf(\"%d %s: %s %d\\n\", i, \"getppid\", \"sys_enter\", i % 2) exit() }"
run() { # run FLOOD MODE: prints FLOOD MODE cpu-seconds bytes
	flag=; [ "$2" = json ] && flag=--json
	if [ "$1" = kernel ]; then
		/usr/bin/time -f '%U %S' -o "$bin/time" "$bin/bpftap" $flag -s 64 -o "$bin/out" -c "$bin/getppid -n $calls -cpu 1" -e "$kernel" 2>"$bin/err" >/dev/null
	else
		/usr/bin/time -f '%U %S' -o "$bin/time" "$bin/bpftap" $flag -DMAXACTION=100000000 -o "$bin/out" -e "$user" 2>"$bin/err"
	fi
	if grep -q 'transport failures\|"lost"' "$bin/err" "$bin/out"; then echo "records lost: raise -s" >&2; exit 1; fi
	echo "$1 $2 $(awk '{ print $1 + $2 }' "$bin/time") $(wc -c < "$bin/out")"
}
for r in $(seq "$rounds"); do
	for flood in kernel user; do
		run $flood text
		run $flood json
	done
done | awk '
	{ k = $1 " " $2; v[k, ++n[k]] = $3; bytes[k] = $4 }
	function median(k,   i, j, t, a, m) { m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
	END { printf "%-8s %10s %10s %8s %12s %12s\n", "flood", "text cpu s", "json cpu s", "ratio", "text bytes", "json bytes"
		split("kernel user", fs, " ")
		for (i = 1; i <= 2; i++) { f = fs[i]; t = median(f " text"); j = median(f " json")
			printf "%-8s %10.3f %10.3f %8.2f %12d %12d\n", f, t, j, j / t, bytes[f " text"], bytes[f " json"] } }'
