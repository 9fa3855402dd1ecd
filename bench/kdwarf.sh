#!/bin/sh
# bench/kdwarf.sh [ROUNDS [VMLINUX]]: what reading the kernel's DWARF costs
# bpftap (bench/kdwarf), on the host, from Debian 12's 6.1 debug file as
# the guests keep it (internal/guest Image.Debuginfo: the vmlinux of
# linux-image-RELEASE-dbg, debug sections only; `make test-guest` fetches
# it), each operation in a fresh process, rounds interleaved: medians of
# wall time and peak RSS, and bpftap's open against Go's own reader
# (debug/elf's DWARF(), which copies every section), as a ratio.
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-9}
vmlinux=${2:-$(ls /var/cache/bpftap-guest/bookworm/linux-image-6.1.*-amd64/vmlinux.debug 2>/dev/null | tail -1)}
[ -r "$vmlinux" ] || { echo "no vmlinux debug file: run the guests' kernel_dwarf case first (make test-guest)" >&2; exit 1; }
bin=$(mktemp -d /tmp/bpftap-kdwarf.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/kdwarf" ./bench/kdwarf
cat "$vmlinux" >/dev/null # in the page cache, as after the first run
ops="goopen open declared statement wide readwrite global inline"
for r in $(seq "$rounds"); do
	for op in $ops; do "$bin/kdwarf" -op "$op" "$vmlinux"; done
done >"$bin/out"
echo "$vmlinux, $rounds rounds, medians"
awk -v ops="$ops" '
	{ t[$1, ++n[$1]] = $4; m[$1, n[$1]] = $6; items[$1] = $2 }
	function median(a, k,   i, j, x, v, c) { c = n[k]; for (i = 1; i <= c; i++) v[i] = a[k, i]
		for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
		return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2 }
	END {
		printf "| operation | items | seconds | peak RSS MiB |\n|---|---:|---:|---:|\n"
		split(ops, o, " ")
		for (i = 1; i in o; i++) printf "| %s | %d | %.3f | %d |\n", o[i], items[o[i]], median(t, o[i]), median(m, o[i])
		printf "\nopen: %.2fx the time and %.2fx the memory of Go'"'"'s reader (goopen)\n", median(t, "open") / median(t, "goopen"), median(m, "open") / median(m, "goopen")
	}' "$bin/out"
