# bench/lib.sh: what the per-call benchmarks (argstr.sh, bythread.sh) share;
# sourced from the repository's root with `set -eu`.

# setup NAME: build bpftap, the getppid workload and the floor into $bin, a
# temporary directory removed at exit.
setup() {
	bin=$(mktemp -d "/tmp/bpftap-$1.XXXXXX")
	trap 'rm -rf "$bin"' EXIT
	go build -o "$bin/" ./cmd/bpftap ./bench/getppid ./bench/floor
}

# traced NAME CMD...: start CMD on CPU 0, wait until it says on its
# standard error that its programs are attached (bpftap -v's "Pass 5:
# attached", the floor's "floor: attached"; at most 60 s), run the
# workload (work, defined by the caller) under it, print NAME and the
# workload's ns per call.
traced() {
	name=$1; shift
	taskset -c 0 "$@" >/dev/null 2>"$bin/stderr" & pid=$!
	i=0
	until grep -Eq '^(Pass 5: attached|floor: attached)' "$bin/stderr" || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
	sleep 0.2
	echo "$name $(work)"
	kill -INT $pid; wait $pid 2>/dev/null || true
}

# median is an awk program that reads lines "NAME VALUE" and defines
# median(NAME).
median='
	{ v[$1, ++n[$1]] = $2 }
	function median(k,   i, j, t, a, m) { m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }'

# per_call "CASES": read the lines traced printed (the cases "untraced"
# and "floor" among them) and print, for each of CASES in order, the
# median ns per call, the ns added to the untraced median and the ratio of
# that to the floor's.
per_call() {
	awk -v cases="$1" "$median"'
	END { u = median("untraced"); f = median("floor") - u
		printf "%-12s %8s %8s %8s\n", "case", "ns/call", "added", "x floor"
		c = split(cases, ks, " ")
		for (i = 1; i <= c; i++) { k = ks[i]; m = median(k)
			printf "%-12s %8.1f %8.1f %8s\n", k, m, m - u, k == "untraced" ? "" : sprintf("%.2f", (m - u) / f) } }'
}
