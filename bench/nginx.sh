#!/bin/sh
# bench/nginx.sh [nginx flags]: the seed-001 benchmark, nginx throughput
# under wrk while system calls are counted (root; apt-get install nginx wrk
# bpftrace libbpf-tools). Builds bpftap, the floor tool and the benchmark,
# then runs it in a private mount namespace with tracefs and debugfs
# mounted. Writes bench/RESULTS-nginx.md; about 16 minutes here with the
# defaults (30 rounds of 9 cases, each 2 s run between untraced runs).
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d /tmp/bpftap-nginx.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/bpftap ./bench/floor ./bench/nginx
unshare -m --propagation private sh -c '
  mountpoint -q /sys/kernel/debug || mount -t debugfs nodev /sys/kernel/debug
  mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
  exec "$@"' sh "$bin/nginx" -bin "$bin" "$@"
