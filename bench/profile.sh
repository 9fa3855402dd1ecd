#!/bin/sh
# bench/profile.sh [ROUNDS]: the cost of sampling profiles (issue 11):
# the run time of a CPU-bound program (sha256sum of 256 MiB in tmpfs, one
# process) untraced, under bpftap's timer.profile-style sampler at 99 Hz
# and 999 Hz (perf.sw.cpu_clock.hz(N), the kernel stack counted as a key
# in the kernel), and under bpftrace's `profile:hz:N { @[kstack] =
# count(); }`. Cases are interleaved in each round; the table gives the
# median seconds and the median ratio to the same round's untraced run.
# Writes bench/RESULTS-profile.md (root; about 10 s a round).
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-5}
bin=$(mktemp -d /tmp/bpftap-profile.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/bpftap
head -c 256M /dev/zero >"$bin/data"

work() { /usr/bin/time -f %e sha256sum "$bin/data" 2>&1 >/dev/null | tail -1; }

# traced NAME READY CMD...: start CMD, wait for READY on its standard
# error or output (at most 30 s), time the work, stop CMD.
traced() {
	name=$1 ready=$2; shift 2
	"$@" >"$bin/out" 2>&1 & pid=$!
	i=0
	until grep -q "$ready" "$bin/out" || [ $i -ge 300 ]; do sleep 0.1; i=$((i + 1)); done
	echo "$name $(work)"
	kill -INT $pid; wait $pid 2>/dev/null || true
}

# the end probe prints nothing: the run is timed, not the report
bpftap_script='global s; probe perf.sw.cpu_clock.hz(HZ) { s[backtrace()] <<< 1 } probe end { delete s }'
for r in $(seq "$rounds"); do
	echo "untraced $(work)"
	for hz in 99 999; do
		traced "bpftap-$hz" 'Pass 5: attached' "$bin/bpftap" -v -e "$(printf '%s' "$bpftap_script" | sed "s/HZ/$hz/")"
		traced "bpftrace-$hz" 'Attaching' bpftrace -e "profile:hz:$hz { @[kstack] = count(); } END { clear(@); }"
	done
done >"$bin/times"

awk '
	{ t[$1, ++n[$1]] = $2; if ($1 == "untraced") base[n[$1]] = $2; else r[$1, n[$1]] = $2 / base[n[$1]] }
	function median(a, k, m,   i, j, x, v) { for (i = 1; i <= m; i++) v[i] = a[k, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
		return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
	END {
		printf "| case | s (median) | × untraced (median of rounds) |\n|---|---:|---:|\n"
		split("untraced bpftap-99 bpftrace-99 bpftap-999 bpftrace-999", order, " ")
		for (i = 1; i <= 5; i++) { k = order[i]; printf "| %s | %.2f | %s |\n", k, median(t, k, n[k]), k == "untraced" ? "1" : sprintf("%.3f", median(r, k, n[k])) }
	}' "$bin/times" >"$bin/table"

{
	echo "# Sampling profile overhead"
	echo
	echo "Written by \`bench/profile.sh\`, $(date -u '+%Y-%m-%d %H:%M UTC'); $rounds rounds; $(nproc) CPUs, kernel $(uname -r), $(bpftrace --version)."
	echo "Workload: sha256sum of 256 MiB (one CPU-bound process, not pinned). The samplers run on every CPU and keep"
	echo "the kernel stack of each sample as a key (bpftap \`s[backtrace()] <<< 1\`, bpftrace \`@[kstack] = count()\`)."
	echo
	cat "$bin/table"
	echo
	echo "A short run on a shared 2-CPU machine: differences under a few percent are noise."
} >bench/RESULTS-profile.md
cat bench/RESULTS-profile.md
