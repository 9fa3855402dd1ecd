#!/bin/sh
# bench/json.sh [ROUNDS] [CALLS]: what --json costs against text output on
# a printf flood (issue 25's target: at most 1.2x). Two floods, each run
# as text and as JSON, interleaved, ROUNDS times (default 7), output to a
# new file (its writes are part of the cost; the last run's file is
# removed first, so that no run pays for truncating another's output):
#   kernel  a kernel probe printing a record per getppid() call of the -c
#           workload (CALLS calls, default 300000, pinned to CPU 1): the
#           ring buffer, the decoding and the rendering of every record;
#   user    a begin probe printing CALLS lines in a loop: the interpreter
#           and the rendering.
# With BASE=REV in the environment (a git revision), the bpftap of REV runs
# too, in the same rounds, each of its runs beside the same run of this
# tree: an A/B comparison on a busy machine.
# Measures bpftap's CPU time (user + system, GNU time) per run and prints,
# per build and flood, the median of each mode, their ratio, the median
# of each round's ratio (the JSON run over the text run just before it:
# steadier on a machine whose speed changes from one run to the next) and
# the bytes written; records lost to a full ring make the script fail
# (they would flatter the slower mode). Root; about 1 minute at the
# defaults.
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-7}
calls=${2:-300000}
bin=$(mktemp -d /tmp/bpftap-json.XXXXXX)
trap 'rm -rf "$bin"' EXIT
mkdir "$bin/this"
go build -o "$bin/this/" ./cmd/bpftap ./bench/getppid
builds=this
if [ -n "${BASE:-}" ]; then
	mkdir "$bin/base" "$bin/src"
	git archive "$BASE" | tar -x -C "$bin/src"
	(cd "$bin/src" && go build -o "$bin/base/" ./cmd/bpftap)
	builds="this base"
fi
kernel='probe kernel.trace("raw_syscalls:sys_enter") { if (pid() == target()) printf("%d %s: %s %d\n", $id, execname(), "sys_enter", cpu()) }'
user="probe begin { for (i = 0; i < $calls; i++) printf(\"%d %s: %s %d\\n\", i, \"getppid\", \"sys_enter\", i % 2) exit() }"
run() { # run BUILD FLOOD MODE: prints BUILD FLOOD MODE cpu-seconds bytes
	flag=; [ "$3" = json ] && flag=--json
	rm -f "$bin/out"
	if [ "$2" = kernel ]; then
		/usr/bin/time -f '%U %S' -o "$bin/time" "$bin/$1/bpftap" $flag -s 64 -o "$bin/out" -c "$bin/this/getppid -n $calls -cpu 1" -e "$kernel" 2>"$bin/err" >/dev/null
	else
		/usr/bin/time -f '%U %S' -o "$bin/time" "$bin/$1/bpftap" $flag -DMAXACTION=100000000 -o "$bin/out" -e "$user" 2>"$bin/err"
	fi
	if grep -q 'transport failures\|"lost"' "$bin/err" "$bin/out"; then echo "records lost: raise -s" >&2; exit 1; fi
	echo "$1 $2 $3 $(awk '{ print $1 + $2 }' "$bin/time") $(wc -c < "$bin/out")"
}
for r in $(seq "$rounds"); do
	for flood in kernel user; do
		for build in $builds; do
			run $build $flood text
			run $build $flood json
		done
	done
done | awk -v builds="$builds" '
	{ k = $1 " " $2 " " $3; v[k, ++n[k]] = $4; bytes[k] = $5 }
	function median(a, m,   i, j, t) {
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
	function medianOf(k,   i, a) { for (i = 1; i <= n[k]; i++) a[i] = v[k, i]; return median(a, n[k]) }
	function roundRatio(k,   i, a) { for (i = 1; i <= n[k " text"]; i++) a[i] = v[k " json", i] / v[k " text", i]; return median(a, n[k " text"]) }
	END { printf "%-6s %-8s %10s %10s %8s %8s %12s %12s\n", "build", "flood", "text cpu s", "json cpu s", "ratio", "by round", "text bytes", "json bytes"
		nb = split(builds, bs, " "); split("kernel user", fs, " ")
		for (i = 1; i <= 2; i++) for (b = 1; b <= nb; b++) { k = bs[b] " " fs[i]; t = medianOf(k " text"); j = medianOf(k " json")
			printf "%-6s %-8s %10.3f %10.3f %8.2f %8.2f %12d %12d\n", bs[b], fs[i], t, j, j / t, roundRatio(k), bytes[k " text"], bytes[k " json"] } }'
