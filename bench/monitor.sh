#!/bin/sh
# bench/monitor.sh [ROUNDS] [SECONDS] [CALLS]: what --monitor=1 costs (issue 38's
# target: at most 1% of one CPU with a 10,000-key array). For each of
# bench/monitor/*.stp (the same 10,000 keys kept by the interpreter, in
# generations, in their BPF map) and each mode (plain, --monitor=1),
# interleaved, ROUNDS times (default 5): bpftap runs in a terminal (a tmux
# server of its own: --monitor needs one) against a workload of about
# CALLS system calls a second (default 2,000; bench/getppid in a loop,
# the target's children; from 10,000 on, every key changes between two
# reads), and once the array is full its CPU time (utime + stime of
# /proc/PID/stat) is read over SECONDS (default 30). Prints every run,
# then per script the median ticks of each mode and what the screen adds,
# in % of one CPU: the difference of the medians, and the median of each
# round's difference (the two runs of a round are neighbours in time). Root, tmux; about 20 minutes at the defaults.
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-5}
seconds=${2:-30}
calls=${3:-2000}
hz=$(getconf CLK_TCK)
bin=$(mktemp -d /tmp/bpftap-monitor.XXXXXX)
sock=
workload=
cleanup() {
	[ -z "$sock" ] || tmux -S "$sock" kill-server 2>/dev/null || true
	[ -z "$workload" ] || kill "$workload" 2>/dev/null || true
}
trap 'cleanup; rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/bpftap ./bench/getppid

# fail WHAT: says what went wrong, with the terminal's last screen.
fail() {
	echo "bench/monitor.sh: $1; the terminal:" >&2
	tmux -S "$sock" capture-pane -p >&2 || true
	exit 1
}

# run SCRIPT MODE: appends "SCRIPT MODE TICKS" to $bin/runs.
run() {
	flag=; [ "$2" = monitor ] && flag=--monitor=1
	sock=$bin/tmux-$1-$2-$r # a server per run: one being killed refuses sessions
	sh -c "$bin/getppid -n 10000 -cpu 1; while :; do $bin/getppid -n $calls -cpu 1; sleep 1; done" >/dev/null 2>&1 &
	workload=$!
	rm -f "$bin/pid"
	# the pane outlives bpftap, to show why it ended early
	tmux -S "$sock" -f /dev/null new-session -d -x 160 -y 45 \
		"sh -c 'echo \$\$ > $bin/pid; exec $bin/bpftap -DMAXACTION=100000 $flag -x $workload bench/monitor/$1.stp'; echo bpftap ended: \$?; sleep 3600"
	i=0 # attached: bpftap holds a BPF link
	until [ -s "$bin/pid" ] && ls -l "/proc/$(cat "$bin/pid")/fd" 2>/dev/null | grep -q bpf_link; do
		[ $i -lt 600 ] || fail "$1 $2: no probe attached within 60 s"
		sleep 0.1; i=$((i + 1))
	done
	pid=$(cat "$bin/pid")
	sleep 8 # 10,000 keys: the first burst and a few seconds more
	before=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	sleep "$seconds"
	after=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null) || fail "$1 $2: bpftap ended during the measure"
	if [ "$2" = monitor ] && ! tmux -S "$sock" capture-pane -p | grep -q '^a: 10000 keys'; then
		fail "$1: the screen does not show 10000 keys"
	fi
	cleanup
	echo "$1 $2 $((after - before))" >> "$bin/runs"
	echo "# $1 $2 $((after - before))"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds of ${seconds} s, $calls calls a second; $hz ticks/s"
for r in $(seq "$rounds"); do
	for script in memory generations map; do
		run $script plain
		run $script monitor
	done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v hz="$hz" -v secs="$seconds" '
	{ v[$1, $2, ++n[$1, $2]] = $3 }
	function median(k1, k2,   i, j, t, a, m) { m = n[k1, k2]; for (i = 1; i <= m; i++) a[i] = v[k1, k2, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
	END {
		printf "| storage | plain, ticks | --monitor=1, ticks | added (medians), %% of one CPU | added (each round), %% | plain, %% | --monitor=1, %% |\n|---|---|---|---|---|---|---|\n"
		split("memory generations map", s, " ")
		cpu = 100 / (hz * secs)
		for (i = 1; i <= 3; i++) { k = s[i]; p = median(k, "plain"); m = median(k, "monitor")
			for (r = 1; r <= n[k, "plain"]; r++) v[k, "added", ++n[k, "added"]] = v[k, "monitor", r] - v[k, "plain", r]
			printf "| %s | %g | %g | %.2f | %.2f | %.2f | %.2f |\n", k, p, m, (m - p) * cpu, median(k, "added") * cpu, p * cpu, m * cpu } }' "$bin/runs"
