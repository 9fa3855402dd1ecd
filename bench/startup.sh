#!/bin/sh
# bench/startup.sh [startup flags]: the start-up benchmark of issues 27 and
# 39 (root). Builds bpftap and the tool, then runs every case as a user
# types it: bpftap on the machine as it is, bpftrace in a private mount
# namespace with tracefs and debugfs mounted (it looks for tracepoints
# there; the mounts vanish with the namespace). Prints the report (-o FILE
# writes it); bench/RESULTS-startup.md keeps the runs quoted.
# Each run starts 50 ms after the one before it (-settle: the kernel makes
# a tracepoint's first attach wait out the grace period of the previous
# run's detach; suite.run in bench/startup/main.go says more).
# About 10 s a round on a quiet machine (9 rounds by default; twice that
# with -before BINARY, another build of bpftap run in the same rounds:
# build it CGO_ENABLED=0, as this script builds its own).
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d /tmp/bpftap-startup.XXXXXX)
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/" ./cmd/bpftap ./bench/startup # as make builds it
"$bin/startup" -bpftap "$bin/bpftap" "$@"
