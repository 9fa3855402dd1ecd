#!/bin/sh
# bench/argstr.sh [ROUNDS [CALL]]: what `syscall.*` with argstr on every
# call adds per call (root). lseek(fd, 0, SEEK_CUR) in a loop pinned to CPU
# 1, ns per call untraced, under the empty-program floor, under bpftap's
# syscall_any (name only) and under bpftap's syscall.* formatting argstr on
# every call (lseek's alias: fildes, offset, whence_str), interleaved;
# prints the median ns added by each and the ratio to the floor's. CALL
# umask makes umask(022) calls instead, which the second program of the
# merged entry serves, after a tail call from the first; CALL faccessat
# makes faccessat(AT_FDCWD, "/nonexistent/bpftap-bench", F_OK) calls, whose
# path bpftap reads in the kernel and quotes in user space.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-9}
call=${2:-lseek}
setup argstr
work() { "$bin/getppid" -call "$call" -n 1000000 -cpu 1; }
for r in $(seq "$rounds"); do
	echo "untraced $(work)"
	traced floor "$bin/floor" -prog empty
	traced syscall_any "$bin/bpftap" -v -e 'global n; probe syscall_any { if (pid() == 0) n++ }'
	traced argstr "$bin/bpftap" -v -e 'global n; probe syscall.* { if (pid() == 0) printf("%s(%s)\n", name, argstr) }'
done | per_call "untraced floor syscall_any argstr"
