#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs-bench.sh [N ...] - the filesystem benchmark (run as root, by hand).
# For each size N (default 1000 10000 100000) a synthetic sysfs-shaped
# snapshot of N devices (bench/gen-snapshot.py) is served by
# `driverfsd --snapshot`, copied to a tmpfs, and served from memory by
# build/minfs, the minimal FUSE server (the floor FUSE sets). The three are
# walked side by side, interleaved, ROUNDS times (default 5):
#   warm walk+read   the second of two walks in a row (build/walk: every
#                    directory listed, every file opened, read and closed);
#   stat             lstat of every entry, warm;
#   read latency     p50/p99 of one warm file read (open, read, close);
#   cold walk+read   a fresh mount after the kernel's caches were dropped, with
#                    the FUSE requests the server answered per entry walked.
# Prints the medians and the ratios driverfs/tmpfs and driverfs/minfs, the
# daemon's load time and memory, and /sys/devices on the host per entry.
# LOAD_ONLY=1: only the load time and memory (after load, after one walk).
# SNAPDIR=DIR: keep the snapshots in DIR (snap-N.json) and reuse them.
# ATTRS=1: snapshots with the sysfs attributes of real hardware as a saved
# machine keeps them (gen-snapshot.py --attrs; snap-attrs-N.json): the
# memory a snapshot's saved values take, beside the live-shaped default.
# Both servers take requests over io_uring where the kernel offers it (the
# script sets the fuse module's enable_uring=Y when it has the parameter);
# TRANSPORT=dev takes them all through /dev/fuse (--no-io-uring).
# DRIVERFSD_OPTS gives driverfsd more options (bench-lib.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build}
rounds=${ROUNDS:-5}
sizes=("$@")
[ "$#" -gt 0 ] || sizes=(1000 10000 100000)
py=/usr/bin/python3
work=$(mktemp -d /tmp/driverfs-bench.XXXXXX)
mnt=$work/driverfs tmp=$work/tmpfs min=$work/minfs
# shellcheck source=bench/bench-lib.sh
. "$here/bench/bench-lib.sh"
trap 'clean_up "$mnt" "$min" "$tmp"' EXIT
need_root "drop_caches, tmpfs"
set_transport
set_daemon_opts
mkdir -p "$mnt" "$tmp" "$min"
# unmounts $1, waits for the server $2 to exit; prints the requests it logged ($3)
stop() {
	fusermount3 -u "$1"
	while kill -0 "$2" 2>/dev/null; do sleep 0.01; done
	sed -n 's/.*fuse requests: \([0-9]*\).*/\1/p' "$3" | tail -1
}
start_driverfs() {
	"$build/driverfsd" -f --snapshot "$snap" "${transport[@]}" "${dopts[@]}" "$mnt" 2>"$work/driverfs.log" &
	dpid=$!
	wait_mount "$mnt" "$dpid"
}
start_minfs() {
	"$build/minfs" -f "${transport[@]}" "$tmp" "$min" 2>"$work/minfs.log" &
	mpid=$!
	wait_mount "$min" "$mpid"
}
# the background daemon serving $snap: the oldest process of that command
# line, not its unmount watcher (a fork of it)
daemon_pid() { pgrep -of "driverfsd --snapshot $snap"; }
# the load time ($t0..$t1) and the daemon's RSS after load and after a walk
print_load() {
	printf "%-8s %-24s %9.3fs   (%.0f devices/s)\n" "$n" "load (mount ready)" \
		"$(echo "$t1 - $t0" | bc -l)" "$(echo "$n / ($t1 - $t0)" | bc -l)"
	printf "%-8s %-24s %8.2f KiB/device after load, %.2f after a walk (RSS %d, %d KiB)\n" \
		"$n" "daemon memory" "$(ratio "$rss_load" "$n")" "$(ratio "$rss_walk" "$n")" \
		"$rss_load" "$rss_walk"
}

if [ "${#transport[@]}" -gt 0 ] || [ "$(cat "$fuse_param" 2>/dev/null)" != Y ]; then
	via="/dev/fuse"
else
	via="io_uring"
fi
echo "fs-bench $(date -u +%F) on $(nproc) cores, FUSE requests over $via${dopts[*]:+, driverfsd ${dopts[*]}}; $(uptime)"
# m/tmpfs is minfs against tmpfs: what FUSE itself costs, which no server
# can win back; d/minfs is what driverfs adds to it
printf "%-8s %-24s %10s %10s %10s %8s %8s %8s\n" devices measure driverfs tmpfs minfs d/tmpfs \
	m/tmpfs d/minfs
for n in "${sizes[@]}"; do
	if [ "${ATTRS:-0}" = 1 ]; then
		snap=${SNAPDIR:-$work}/snap-attrs-$n.json
		[ -f "$snap" ] || $py "$here/bench/gen-snapshot.py" --attrs "$n" "$snap"
	else
		snap=${SNAPDIR:-$work}/snap-$n.json
		[ -f "$snap" ] || $py "$here/bench/gen-snapshot.py" "$n" "$snap"
	fi
	t0=$(date +%s.%N)
	"$build/driverfsd" --snapshot "$snap" "${transport[@]}" "${dopts[@]}" "$mnt" 2>/dev/null
	t1=$(date +%s.%N)
	pid=$(daemon_pid)
	rss_load=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
	if [ -n "${LOAD_ONLY:-}" ]; then
		line=$(walk "$mnt")
		rss_walk=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
		print_load
		fusermount3 -u "$mnt"
		continue
	fi
	mount -t tmpfs -o size=16g driverfs-bench "$tmp"
	cp -a "$mnt/." "$tmp/"
	line=$("$build/walk" "$mnt")
	entries=$(( $(echo "$line" | field 1) + $(echo "$line" | field 2) + $(echo "$line" | field 3) ))
	walk "$tmp" >/dev/null
	start_minfs

	declare -A res=()
	for r in $(seq "$rounds"); do
		for k in d:$mnt t:$tmp m:$min; do
			warm_round "${k%%:*}" "${k#*:}"
		done
		[ "$r" -eq 1 ] && rss_walk=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
		# cold: fresh servers, the kernel's caches dropped
		fusermount3 -u "$mnt"
		while kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
		stop "$min" "$mpid" "$work/minfs.log" >/dev/null
		start_driverfs
		drop; res[cold_d]+="$(walk "$mnt" | field 5) "
		res[req_d]+="$(stop "$mnt" "$dpid" "$work/driverfs.log") "
		drop; res[cold_t]+="$(walk "$tmp" | field 5) "
		start_minfs
		drop; res[cold_m]+="$(walk "$min" | field 5) "
		res[req_m]+="$(stop "$min" "$mpid" "$work/minfs.log") "
		"$build/driverfsd" --snapshot "$snap" "${transport[@]}" "${dopts[@]}" "$mnt" 2>/dev/null
		pid=$(daemon_pid)
		start_minfs
	done
	for m in warm stat p50 p99 cold; do
		d=$(med ${m}_d) t=$(med ${m}_t) mi=$(med ${m}_m)
		printf "%-8s %-24s %10.3f %10.3f %10.3f %7.2fx %7.2fx %7.2fx\n" "$n" "$(label_of $m)" "$d" "$t" \
			"$mi" "$(ratio "$d" "$t")" "$(ratio "$mi" "$t")" "$(ratio "$d" "$mi")"
	done
	# the latency targets are against tmpfs: how much of the gap is FUSE's
	for p in p50 p99; do
		d=$(med ${p}_d) t=$(med ${p}_t) mi=$(med ${p}_m)
		printf "%-8s %-24s driverfs %.2fx tmpfs = FUSE floor (minfs) %.2fx tmpfs x driverfs %.2fx minfs\n" \
			"$n" "read latency $p" "$(ratio "$d" "$t")" "$(ratio "$mi" "$t")" "$(ratio "$d" "$mi")"
	done
	rd=$(med req_d) rm_=$(med req_m)
	printf "%-8s %-24s %10d %10s %10d   per entry: driverfs %.2f, minfs %.2f (%d entries)\n" \
		"$n" "cold FUSE requests" "$rd" - "$rm_" "$(ratio "$rd" "$entries")" \
		"$(ratio "$rm_" "$entries")" "$entries"
	printf "%-8s %-24s %s\n" "$n" "cold requests by op" \
		"$(sed -n 's/.*fuse requests: [0-9]* //p' "$work/driverfs.log" | tail -1)"
	print_load
	fusermount3 -u "$mnt"
	fusermount3 -u "$min"
	umount "$tmp"
	[ -n "${SNAPDIR:-}" ] || rm -f "$snap"
	unset res
done
[ -z "${LOAD_ONLY:-}" ] || exit 0
# the host's sysfs, per entry (its size is the host's)
line=$("$build/walk" /sys/devices)
sys_entries=$(( $(echo "$line" | field 1) + $(echo "$line" | field 2) + $(echo "$line" | field 3) ))
sys=$(for r in $(seq "$rounds"); do "$build/walk" /sys/devices | field 5; done | median)
sys_stat=$(for r in $(seq "$rounds"); do "$build/walk" --stat /sys/devices | field 5; done | median)
printf "host     %-24s %9.3fs for %d entries: %.2f us per entry (stat: %.2f us)\n" \
	"/sys/devices walk+read" "$sys" "$sys_entries" "$(echo "$sys / $sys_entries * 1000000" | bc -l)" \
	"$(echo "$sys_stat / $sys_entries * 1000000" | bc -l)"
