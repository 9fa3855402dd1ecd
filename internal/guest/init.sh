#!/bin/sh
# /init of bpftap's test guests (internal/guest): mounts the kernel's file
# systems, reports the kernel's features, runs the bench (/bench/run) if
# there is one, every case (/cases/NAME.cmd in
# /cases/NAME) and Go test binary (/tests/PKG.test in /tests/PKG, with the
# flags in /tests/PKG.flags), then powers off. Each run is shown on the console between "=== BEGIN" and
# "=== END ... status=N" lines, and framed on the results port, its
# streams base64-encoded, for the host to read exactly.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TMPDIR=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
# /run as a system has it, where bpftap keeps its cache for the boot
# (root's: /run/bpftap).
mkdir -p /run && mount -t tmpfs -o mode=0755 tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
mount -t bpf bpf /sys/fs/bpf
hostname bpftap-guest
# The kernel's configuration where scripts look for it (stap's
# @kernel_config; Debian's kernels have no /proc/config.gz).
[ -e /boot/config ] && mv /boot/config "/boot/config-$(uname -r)"
# The results port (the kernel's command line says which: bpftap_results),
# once the modules it needs are loaded.
results=${bpftap_results:-/dev/ttyS1}
# load NAME...: insmod /modules/NAME.ko for each module not loaded yet, in
# the order given (each after those it depends on).
load() {
	for m in "$@"; do
		[ -d "/sys/module/$m" ] || insmod "/modules/$m.ko" || return
	done
}

# unload NAME...: rmmod the modules named that /modules/boot does not name,
# last first: those a case loaded, so that later runs see the guest as it
# booted (a failure shows on the console).
unload() {
	for m in $(echo "$@" | tr ' ' '\n' | sed '1!G;h;$!d'); do
		grep -qw "$m" /modules/boot || [ ! -d "/sys/module/$m" ] || rmmod "$m"
	done
}

# The modules every case may use (/modules/boot: binfmt_misc, whose BTF
# tests read); a failure shows on the console, and as a module missing from
# the features.
load $(cat /modules/boot)
for i in 1 2 3 4 5 6 7 8 9 10; do
	[ -e "$results" ] && break
	sleep 1
done

# frame KIND NAME STATUS: the last run's output, on the console and framed
# in the results.
frame() {
	echo "=== BEGIN $1 $2"
	cat /tmp/stdout
	if [ -s /tmp/stderr ]; then
		echo "--- stderr"
		cat /tmp/stderr
	fi
	echo "=== END $1 $2 status=$3"
	{
		echo "@@begin $1 $2"
		echo "@@stdout"
		base64 /tmp/stdout
		echo "@@stderr"
		base64 /tmp/stderr
		echo "@@status $3"
	} >$results
}

# features: what the kernel offers the kinds of kernel probes.
features() {
	echo "kernel $(uname -r)"
	echo "cpus $(nproc)"
	echo "event_sources" $(ls /sys/bus/event_source/devices)
	echo "filter_functions $(wc -l </sys/kernel/tracing/available_filter_functions)"
	echo "btf" $(ls /sys/kernel/btf)
	# kallsyms names: kprobe sessions (6.10), trampolines (fentry), uprobe-multi
	# (6.6); bpf_kprobe_multi_link_attach is there even without CONFIG_FPROBE.
	for sym in bpf_session_cookie bpf_trampoline_link_prog bpf_uprobe_multi_link_attach; do
		echo "$sym $(grep -c " $sym\$" /proc/kallsyms)"
	done
}

features >/tmp/stdout 2>/tmp/stderr
frame info features $?

# A bench (Initramfs.Bench) runs first, alone, in /tmp.
if [ -x /bench/run ]; then
	(cd /tmp && exec /bench/run) </dev/null >/tmp/stdout 2>/tmp/stderr
	frame bench run $?
fi

# pids: the processes now running, kernel threads and all.
pids() {
	for dir in /proc/[0-9]*; do echo "${dir#/proc/}"; done
}

# reap PIDS: kills the processes that are not in PIDS and not the kernel's
# threads (which have no command line): what a case left running. A case
# that timed out leaves its bpftap behind, which would write into the
# next case's output. Parents go first (in the order of their ids), so
# that no shell lives to report its child "Killed" into the case's stderr.
reap() {
	for pid in $(pids | sort -n); do
		case " $1 " in *" $pid "*) continue ;; esac
		line=
		read -r line 2>/dev/null <"/proc/$pid/cmdline"
		[ -n "$line" ] && kill -9 "$pid" 2>/dev/null
	done
}

for cmd in /cases/*.cmd; do
	[ -e "$cmd" ] || continue
	name=$(basename "$cmd" .cmd)
	# A case's own modules (/cases/NAME.modules) load first, and unload after.
	mods=$(cat "/cases/$name.modules" 2>/dev/null)
	# its time limit in seconds: /cases/NAME.timeout (Initramfs.caseLimit)
	limit=$(cat "/cases/$name.timeout")
	# the DWARF of the kernel and its modules where the debug package puts
	# it (/debuginfo/links), for the cases that read it only
	# (/cases/NAME.debuginfo)
	dbg=
	[ -e "/cases/$name.debuginfo" ] && dbg=/debuginfo/links
	[ -z "$dbg" ] || while read -r src at; do mkdir -p "${at%/*}" && ln -sf "$src" "$at"; done <"$dbg"
	before=$(echo $(pids))
	(cd "/cases/$name" && load $mods && exec timeout "$limit" sh "$cmd") </dev/null >/tmp/stdout 2>/tmp/stderr
	status=$?
	reap "$before"
	frame case "$name" $status
	unload $mods
	[ -z "$dbg" ] || while read -r src at; do rm -f "$at"; done <"$dbg"
done

for bin in /tests/*.test; do
	[ -e "$bin" ] || continue
	pkg=$(basename "$bin" .test)
	mkdir -p "/tests/$pkg"
	flags=$(cat "/tests/$pkg.flags" 2>/dev/null)
	limit=$(cat "/tests/$pkg.timeout")
	(cd "/tests/$pkg" && exec timeout "$limit" "$bin" -test.v -test.count=1 $flags) </dev/null >/tmp/stdout 2>/tmp/stderr
	frame go "$pkg" $?
done

echo "@@done" >$results
echo "=== ALL DONE"
poweroff -f
