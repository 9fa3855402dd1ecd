#!/bin/sh
# bench/run.sh [harness flags]: bpftap's benchmark against its peers (root).
# Builds the workload, the floor tool, bpftap and the harness, then runs the
# harness in a private mount namespace with debugfs and tracefs mounted
# (bpftrace and stapbpf look for tracepoints there; the mounts vanish with
# the namespace). Writes bench/RESULTS.md. Flags: bench/run.sh -h.
# About 8 minutes with the defaults; e.g. -rounds 3 -oracle-rounds 0 is quicker.
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d /tmp/bpftap-bench.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./bench/harness ./bench/getppid ./bench/floor
# bpftap is measured only if the tree builds; its rows say why otherwise.
go build -o "$bin/" ./cmd/bpftap 2>"$bin/bpftap-build.log" || echo "bench: bpftap does not build; see its rows" >&2
unshare -m --propagation private sh -c '
  mountpoint -q /sys/kernel/debug || mount -t debugfs nodev /sys/kernel/debug
  mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
  exec "$@"' sh "$bin/harness" -bin "$bin" "$@"
