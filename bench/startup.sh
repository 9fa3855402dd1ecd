#!/bin/sh
# bench/startup.sh [startup flags]: the start-up benchmark of issue 27 (root).
# Builds bpftap and the tool, then runs it in a private mount namespace
# with tracefs and debugfs mounted (bpftrace looks for tracepoints there;
# the mounts vanish with the namespace). Writes bench/RESULTS-startup.md.
# About 20 s a round on a quiet machine (9 rounds by default).
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d /tmp/bpftap-startup.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/bpftap ./bench/startup
unshare -m --propagation private sh -c '
  mountpoint -q /sys/kernel/debug || mount -t debugfs nodev /sys/kernel/debug
  mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
  exec "$@"' sh "$bin/startup" -bpftap "$bin/bpftap" "$@"
