#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# ab-bench.sh OLD_BUILD NEW_BUILD [N ...] - two builds of driverfsd side by
# side (run as root, by hand): does a change slow the filesystem down?
# For each size N (default 10000) a synthetic snapshot of N devices
# (bench/gen-snapshot.py) is served by both builds' driverfsd --snapshot at
# once; N "live" serves this machine's own tree instead (reads only: every
# file is read, nothing written). Both mounts are walked interleaved ROUNDS
# times (default 7; the order of the two alternates from round to round):
# the cold walk+read (the first on a fresh mount: every lookup, listing and
# read goes to the daemon), the warm walk+read (the second of two walks),
# the warm stat of every entry and the warm read latency p50/p99
# (build/walk of NEW_BUILD). Prints the medians, new/old,
# and whether each is within 10% of the old build's. The load time (mount
# ready) of each is measured once per round too, on a fresh mount.
# TRANSPORT=dev takes every request through /dev/fuse (--no-io-uring).
# DRIVERFSD_OPTS gives both builds' driverfsd more options (bench-lib.sh);
# OLD_OPTS and NEW_OPTS each side's own: `OLD_OPTS= NEW_OPTS=--handover
# ab-bench.sh build build live` measures what the systemd unit serves
# against the default.
set -euo pipefail

[ "$#" -ge 2 ] || { echo "usage: ab-bench.sh OLD_BUILD NEW_BUILD [N ...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
shift 2
build=$new
rounds=${ROUNDS:-7}
sizes=("$@")
[ "$#" -gt 0 ] || sizes=(10000)
work=$(mktemp -d /tmp/driverfs-ab.XXXXXX)
# shellcheck source=bench/bench-lib.sh
. "$here/bench/bench-lib.sh"
trap 'clean_up "$work/old" "$work/new"' EXIT
need_root "like fs-bench.sh"
for b in "$old" "$new"; do
	[ -x "$b/driverfsd" ] || { echo "ab-bench: no driverfsd in $b" >&2; exit 2; }
done
set_transport
set_daemon_opts
mkdir -p "$work/old" "$work/new"

# each side's own options besides DRIVERFSD_OPTS: OLD_OPTS="" NEW_OPTS=--handover
# with the same build twice and the size "live" puts what the systemd unit
# serves beside the default
read -r -a old_opts <<<"${OLD_OPTS:-}"
read -r -a new_opts <<<"${NEW_OPTS:-}"
for v in old new; do
	declare -n o=${v}_opts
	case " ${o[*]} " in
	*" --handover "*)
		[ "${sizes[*]}" = live ] || {
			echo "ab-bench: --handover serves a live machine: the size must be live" >&2
			exit 2
		}
		;;
	esac
	unset -n o
done

# mounts build $1's daemon at $work/$2 (in the background: it returns once
# the tree is served) and prints the seconds that took
mount_one() {
	local t0 t1
	declare -n o=${2}_opts
	t0=$(date +%s.%N)
	if [ "$snap" != live ]; then
		"$1/driverfsd" --snapshot "$snap" "${transport[@]}" "${dopts[@]}" "${o[@]}" \
			"$work/$2" 2>/dev/null
	elif [[ " ${o[*]} " = *" --handover "* ]]; then
		# in the foreground only (as under systemd), served once its
		# root answers
		"$1/driverfsd" -f "${transport[@]}" "${dopts[@]}" "${o[@]}" "$work/$2" &>/dev/null &
		until mountpoint -q "$work/$2" && [ -d "$work/$2/root" ]; do sleep 0.01; done
	else
		"$1/driverfsd" "${transport[@]}" "${dopts[@]}" "${o[@]}" "$work/$2" 2>/dev/null
	fi
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}
unmount_one() {
	local pid
	# the daemon of that mount (two builds may be the same directory)
	pid=$(pgrep -of "$1/driverfsd .*$work/$2\$") || true
	fusermount3 -u "$work/$2"
	while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
}

echo "ab-bench $(date -u +%F) on $(nproc) cores; old $old ($(git -C "$old/.." rev-parse --short HEAD 2>/dev/null || echo ?)), new $new ($(git -C "$new/.." rev-parse --short HEAD 2>/dev/null || echo ?))${dopts[*]:+; driverfsd ${dopts[*]}}${old_opts[*]:+; old ${old_opts[*]}}${new_opts[*]:+; new ${new_opts[*]}}; $(uptime)"
printf "%-8s %-24s %10s %10s %8s %s\n" devices measure old new new/old "within 10%"
for n in "${sizes[@]}"; do
	snap=live
	WALK_ERRORS_OK=
	if [ "$n" = live ]; then
		WALK_ERRORS_OK=1 # what sysfs fails to read fails in the mounts too
	else
		snap=$work/snap-$n.json
		/usr/bin/python3 "$here/bench/gen-snapshot.py" "$n" "$snap"
	fi
	export WALK_ERRORS_OK
	declare -A res=()
	for r in $(seq "$rounds"); do
		order="old new"
		[ $((r % 2)) -eq 0 ] && order="new old"
		for v in $order; do
			b=$old
			[ "$v" = new ] && b=$new
			res[load_$v]+="$(mount_one "$b" "$v") "
		done
		for v in $order; do
			res[cold_$v]+="$(walk "$work/$v" | field 5) "
		done
		for v in $order; do
			warm_round "$v" "$work/$v"
		done
		unmount_one "$old" old
		unmount_one "$new" new
	done
	for m in cold warm stat p50 p99 load; do
		o=$(med ${m}_old) w=$(med ${m}_new)
		label=$(label_of $m)
		q=$(ratio "$w" "$o")
		ok=no
		[ "$(echo "$q <= 1.10" | bc -l)" = 1 ] && ok=yes
		printf "%-8s %-24s %10.3f %10.3f %7.2fx %s\n" "$n" "$label" "$o" "$w" "$q" "$ok"
	done
	unset res
done
