#!/bin/sh
# bench/soak.sh [SECONDS [SCRIPT]] (root): a soak. Runs SCRIPT for
# SECONDS (600 by default) while a getppid loop and a 10 µs sleep loop keep
# every CPU busy with system calls and timer interrupts, then prints the
# script's verdict. Exits 1 unless it reports 0 differences. SCRIPT is
# bench/soak.stp by default, the nesting soak (kernel.trace("*") updating
# per-CPU globals beside shared atomic twins); bench/resetsoak.stp is the
# read-and-reset soak (the same counts added up and deleted by a 10 ms
# timer).
set -eu
cd "$(dirname "$0")/.."
secs=${1:-600}
script=${2:-bench/soak.stp}
bin=$(mktemp -d /tmp/bpftap-soak.XXXXXX)
loads=""
trap 'kill $loads 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/bpftap ./bench/getppid
out="$bin/out"
"$bin/bpftap" "$script" -T "$secs" >"$out" 2>&1 &
tracer=$!
sleep 2 # attach (every tracepoint) before the load starts
for cpu in $(seq 0 $(($(nproc) - 1))); do
  (while :; do "$bin/getppid" -cpu "$cpu" -n 5000000 >/dev/null; done) &
  loads="$loads $!"
  (while :; do sleep 0.00001; done) &
  loads="$loads $!"
done
wait "$tracer" || true
cat "$out"
grep -q 'differences 0$' "$out"
