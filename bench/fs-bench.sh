#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs-bench.sh [N ...] - the filesystem benchmark (run as root, by hand):
# for each size N (default 1000 10000 100000), a synthetic sysfs-shaped
# snapshot of N devices is served by driverfsd --snapshot and copied to a
# tmpfs; the two are walked side by side, interleaved, ROUNDS times each
# (default 5): a full walk and read (warm: after a first walk; cold: after
# dropping the kernel's caches), and a stat of every entry (warm). The host's
# /sys/devices is walked too, as a reference per file. Prints the medians and
# the ratios to tmpfs, the load time and the daemon's memory per device.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build}
rounds=${ROUNDS:-5}
sizes=("${@:-1000 10000 100000}")
[ "$#" -gt 0 ] || sizes=(1000 10000 100000)
py=/usr/bin/python3
work=$(mktemp -d /tmp/driverfs-bench.XXXXXX)
mnt=$work/driverfs tmp=$work/tmpfs
mkdir -p "$mnt" "$tmp"

cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	umount "$tmp" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "fs-bench: run as root (drop_caches, tmpfs)" >&2; exit 2; }

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# seconds of one walk (field 5 of walk's line); fails on any error
walk() {
	local out
	out=$("$build/walk" "$@")
	[ "$(echo "$out" | cut -d' ' -f6)" = 0 ] || { echo "fs-bench: errors walking $*: $out" >&2; exit 1; }
	echo "$out" | cut -d' ' -f5
}
# the same for sysfs, where some attributes refuse reads (EIO, ENODEV)
walk_sys() { "$build/walk" "$@" | cut -d' ' -f5; }

sys_files=$("$build/walk" /sys/devices | cut -d' ' -f2)
printf "%-8s %-22s %10s %10s %8s\n" devices measure driverfs tmpfs ratio
for n in "${sizes[@]}"; do
	snap=$work/snap-$n.json
	$py "$here/bench/gen-snapshot.py" "$n" "$snap"
	t0=$(date +%s.%N)
	"$build/driverfsd" --snapshot "$snap" "$mnt" 2>/dev/null
	t1=$(date +%s.%N)
	pid=$(pgrep -nf "driverfsd --snapshot $snap")
	mount -t tmpfs -o size=8g driverfs-bench "$tmp"
	cp -a "$mnt/." "$tmp/"
	files=$("$build/walk" "$mnt" | cut -d' ' -f2)
	walk "$tmp" >/dev/null

	declare -A res=()
	for r in $(seq "$rounds"); do
		# warm: the second of two walks in a row
		walk "$mnt" >/dev/null; res[warm_d]+="$(walk "$mnt") "
		walk "$tmp" >/dev/null; res[warm_t]+="$(walk "$tmp") "
		res[stat_d]+="$(walk --stat "$mnt") "; res[stat_t]+="$(walk --stat "$tmp") "
		drop; res[cold_d]+="$(walk "$mnt") "
		drop; res[cold_t]+="$(walk "$tmp") "
	done
	for m in warm stat cold; do
		d=$(echo ${res[${m}_d]} | tr ' ' '\n' | median)
		t=$(echo ${res[${m}_t]} | tr ' ' '\n' | median)
		label=$([ $m = stat ] && echo "stat every entry" || echo "$m walk+read")
		printf "%-8s %-22s %9.3fs %9.3fs %7.2fx\n" "$n" "$label" "$d" "$t" \
			"$(echo "$d / $t" | bc -l)"
	done
	rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
	printf "%-8s %-22s %9.3fs   (%d files; %.0f devices/s)\n" "$n" "load (mount ready)" \
		"$(echo "$t1 - $t0" | bc -l)" "$files" "$(echo "$n / ($t1 - $t0)" | bc -l)"
	printf "%-8s %-22s %8.2f KiB per device (RSS %d KiB)\n" "$n" "daemon memory" \
		"$(echo "$rss / $n" | bc -l)" "$rss"
	fusermount3 -u "$mnt"
	umount "$tmp"
	rm -f "$snap"
done
sys=$(for r in $(seq "$rounds"); do walk_sys /sys/devices; done | median)
printf "host     %-22s %9.3fs for %d sysfs files: %.1f us per file\n" "sysfs walk+read" "$sys" \
	"$sys_files" "$(echo "$sys / $sys_files * 1000000" | bc -l)"
