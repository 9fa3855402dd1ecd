#!/bin/sh
# bench/tpdispatch.sh [ROUNDS [BEFORE]]: what kernel.trace("syscalls:...")
# probes add per system call (root), the syscalls:* events served from
# raw_syscalls:sys_enter with a dispatch on the number (sema's
# syscalltrace.go) beside, with BEFORE (another bpftap, such as main's),
# the same script on the 360 events of its own. getppid in a loop pinned
# to CPU 1 and timed by its thread's CPU time (a busy machine's other work left
# out), the tracer on CPU 0, interleaved rounds; prints the median ns
# added by each case and the ratio to the empty program's (the floor):
#   dispatched  kernel.trace("syscalls:sys_enter_*") reading $__syscall_nr
#   own         the same with BEFORE, one classic event per call
#   others4     four other calls' events, kept on their own events: what a
#               call outside a narrow set pays for it (nothing)
#   others5     five other calls, dispatched: what a call outside the set
#               pays once the set is served from the raw tracepoint
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-9}
before=${2:-}
setup tpdispatch
work() { "$bin/getppid" -n 1000000 -cpu 1 -clock thread; }
all='global n; probe kernel.trace("syscalls:sys_enter_*") { if (pid() == 0) n <<< $__syscall_nr }'
others() { # the events of the first $1 of five calls that are not getppid
	printf 'global n; probe %s { if (pid() == 0) n <<< $__syscall_nr }' "$(echo read write openat close lseek | tr ' ' '\n' | head -n "$1" |
		sed 's/.*/kernel.trace("syscalls:sys_enter_&")/' | paste -sd, -)"
}
cases="untraced floor dispatched others4 others5"
[ -n "$before" ] && cases="$cases own"
for r in $(seq "$rounds"); do
	echo "untraced $(work)"
	traced floor "$bin/floor" -prog empty
	traced dispatched "$bin/bpftap" -v -e "$all"
	traced others4 "$bin/bpftap" -v -e "$(others 4)"
	traced others5 "$bin/bpftap" -v -e "$(others 5)"
	if [ -n "$before" ]; then traced own "$before" -v -e "$all"; fi
done | per_call "$cases"
