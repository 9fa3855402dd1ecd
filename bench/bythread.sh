#!/bin/sh
# bench/bythread.sh [ROUNDS]: what an entry/return pair keyed by thread adds
# per call (root). Probes on getppid's entry and return: doing nothing
# (pair: the cost of the two programs), saving and deleting
# start[tid() + 0] (hash: the key is not the tid() call itself, so the
# array stays a hash keyed by thread, as every such array was before task
# storage), and saving and deleting start[tid()] (task: task-local storage).
#
# First table: getppid() in a loop pinned to CPU 1, ns per call untraced,
# under the empty-program floor and under each case, interleaved; the
# median ns added and the ratio to the floor's. Second table: the two
# programs' own run time per call (the sum of their averages in bpftap -t,
# the kernel's BPF statistics, which also pay for the measuring), the
# median over the rounds; it holds when the machine is too busy for the
# first to be steady.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-9}
setup bythread
pair='global n; probe syscall.getppid, syscall.getppid.return { if (pid() == 0) n++ }'
hash='global start; probe syscall.getppid { start[tid() + 0] = 1 } probe syscall.getppid.return { delete start[tid() + 0] }'
task='global start; probe syscall.getppid { start[tid()] = 1 } probe syscall.getppid.return { delete start[tid()] }'
work() { "$bin/getppid" -n 1000000 -cpu 1; }
timed() { # timed NAME SCRIPT: print NAME and the script's programs' ns per call
	"$bin/bpftap" -t -e "$2" -c "$bin/getppid -n 300000 -cpu 1" 2>&1 |
		awk -v n="$1" '/avg/ { match($0, /\/[0-9]+avg/); s += substr($0, RSTART + 1, RLENGTH - 4) } END { print n, s }'
}
for r in $(seq "$rounds"); do
	echo "untraced $(work)"
	traced floor "$bin/floor" -prog empty
	traced pair "$bin/bpftap" -v -e "$pair"
	traced hash "$bin/bpftap" -v -e "$hash"
	traced task "$bin/bpftap" -v -e "$task"
done | per_call "untraced floor pair hash task"
echo
for r in $(seq "$rounds"); do
	timed pair "$pair"
	timed hash "$hash"
	timed task "$task"
done | awk "$median"'
	END { printf "%-12s %12s\n", "case", "programs ns"
		split("pair hash task", ks, " ")
		for (i = 1; i <= 3; i++) printf "%-12s %12.1f\n", ks[i], median(ks[i]) }'
