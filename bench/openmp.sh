#!/bin/sh
# bench/openmp.sh [openmp flags]: the seed-004 benchmark, the cost of a
# per-thread system-call profile to OpenMP programs (root; gcc, bpftrace).
# Builds bpftap, the two C programs (gcc -O2 -fopenmp) and the benchmark,
# then runs it in a private mount namespace with tracefs mounted. Writes
# bench/RESULTS-openmp.md; a few minutes with the defaults.
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d /tmp/bpftap-openmp.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/bpftap ./bench/openmp
for p in pi compute; do gcc -O2 -fopenmp -o "$bin/$p" "bench/openmp/programs/$p.c"; done
unshare -m --propagation private sh -c '
  mountpoint -q /sys/kernel/debug || mount -t debugfs nodev /sys/kernel/debug
  mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
  exec "$@"' sh "$bin/openmp" -bin "$bin" "$@"
