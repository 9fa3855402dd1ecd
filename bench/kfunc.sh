#!/bin/sh
# bench/kfunc.sh [flags]: issue 23's targets for kernel.function, measured in
# the guest kernels (Debian's 6.1 and 6.12 under qemu's TCG; see
# bench/kfunc/main.go and docs/guest-kernels.md). Needs qemu-system-x86,
# busybox-static, gcc with a static libc, and bpftrace on the host (copied
# into the guests with its libraries). Writes bench/RESULTS-kfunc.md's tables.
# About 40 minutes with -parallel on a 2-core host; flags: bench/kfunc.sh -h.
set -eu
cd "$(dirname "$0")/.."
exec go run ./bench/kfunc -o bench/RESULTS-kfunc.md "$@"
