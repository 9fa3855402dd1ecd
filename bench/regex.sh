#!/bin/sh
# bench/regex.sh [ROUNDS]: what a =~ match in a kernel probe costs per event
# (root). getppid in a loop pinned to CPU 1 (its comm, "getppid", is the
# subject) under five probes on raw_syscalls:sys_enter, run with -t,
# interleaved: no string work (pid() == 0), a string comparison of
# execname(), a match the automaton settles at the first character
# (^(nginx|sshd)$: Dead after 'g'), one that reads the whole name and its
# end ((nginx|sshd)$) and one whose pattern names a non-ASCII character
# (é|(nginx|sshd)$: a comparison chain for such characters, none here);
# then Debian's regex.stp pattern on a 61-byte path (a literal stored into
# a local on every event), beside a comparison of that local.
# Prints per case the median over rounds of the mean run time of the
# program (-t's report: the kernel's own BPF statistics, which add the cost
# of reading the clock to every case alike), and of the ns per call the
# workload measured (wall-clock, noisier).
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-9}
bin=$(mktemp -d /tmp/bpftap-regex.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/bpftap ./bench/getppid
path=/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.d/gconv-modules
traced() { # traced NAME BODY: the workload under bpftap -t; prints NAME run-ns call-ns
	taskset -c 0 "$bin/bpftap" -t -e "global n; probe kernel.trace(\"raw_syscalls:sys_enter\") { $2 }" >"$bin/out" 2>&1 & pid=$!
	sleep 1.5
	call=$("$bin/getppid" -n 1000000 -cpu 1)
	kill -INT $pid; wait $pid 2>/dev/null || true
	echo "$1 $(sed -n 's/.*nsecs: [0-9]*min\/\([0-9]*\)avg.*/\1/p' "$bin/out") $call"
}
for r in $(seq "$rounds"); do
	traced pid 'if (pid() == 0) n++'
	traced strcmp 'if (execname() == "nginx") n++'
	traced re_first 'if (execname() =~ "^(nginx|sshd)$") n++'
	traced re_whole 'if (execname() =~ "(nginx|sshd)$") n++'
	traced re_utf8 'if (execname() =~ "é|(nginx|sshd)$") n++'
	traced path_cmp "s = \"$path\"; if (s == \"nginx\") n++"
	traced re_path "s = \"$path\"; if (s =~ \"(\\\\.tar\\\\.(gz|bz2|xz)|\\\\.zip|\\\\.tgz|\\\\.tbz)\$\") n++"
done | awk '
	{ run[$1, ++n[$1]] = $2; call[$1, n[$1]] = $3 }
	function median(v, k,   i, j, t, a, m) { m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
	END { printf "%-10s %10s %10s %10s\n", "case", "ns/run", "vs cmp", "ns/call"
		split("pid strcmp re_first re_whole re_utf8 path_cmp re_path", ks, " ")
		for (i = 1; i <= 7; i++) { k = ks[i]; m = median(run, k); s = median(run, k == "re_path" ? "path_cmp" : "strcmp")
			printf "%-10s %10.1f %10s %10.1f\n", k, m, k ~ /^re_/ ? sprintf("%+.1f", m - s) : "", median(call, k) } }'
