#!/bin/sh
# bench/exporter.sh [flags of bench/exporter]: issue 25's exporter targets
# (root): a 10,000-key table scraped one request at a time and by 50
# concurrent scrapers for 60 s, torn statistics counted, the exporter's
# memory sampled. Writes bench/RESULTS-exporter.md. About 90 seconds.
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d /tmp/bpftap-exporter.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/bpftap ./bench/exporter
"$bin/exporter" -bpftap "$bin/bpftap" "$@"
