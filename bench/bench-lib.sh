# shellcheck shell=bash disable=SC2154,SC2034
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench-lib.sh - what the filesystem benchmarks share (sourced, not run):
# medians, walks that fail on any error, waiting for a mount, the FUSE
# transport, the clean-up, the warm rounds and the measures' labels.
# Needs $build (the build directory whose walk is used) and $work.

# The median of the numbers on standard input, one or more per line (blank
# lines, such as the one a list's trailing space leaves, are not numbers).
median() { tr -s ' ' '\n' | sort -g | awk 'NF {v[++n] = $1} END {print v[int((n + 1) / 2)]}'; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# one walk's line; fails on any error, unless WALK_ERRORS_OK is set (a
# live machine's tree, where some attributes fail their reads as sysfs does)
walk() {
	local out
	out=$("$build/walk" "$@")
	[ -n "${WALK_ERRORS_OK:-}" ] || [ "$(echo "$out" | cut -d' ' -f6)" = 0 ] ||
		{ echo "bench: errors walking $*: $out" >&2; exit 1; }
	echo "$out"
}
field() { cut -d' ' -f"$1"; }
ratio() { echo "$1 / $2" | bc -l; }
# waits for the server $2, started in the foreground, to have mounted $1
# (loading 10^5 devices may take minutes on a busy machine)
wait_mount() {
	while ! mountpoint -q "$1"; do
		kill -0 "$2" 2>/dev/null || { echo "bench: the server of $1 exited" >&2; exit 1; }
		sleep 0.01
	done
}

# The FUSE transport the servers take, in ${transport[@]}: TRANSPORT=dev
# puts every request through /dev/fuse (--no-io-uring); otherwise the fuse
# module is told to offer io_uring where it has the parameter.
fuse_param=/sys/module/fuse/parameters/enable_uring
transport=()
set_transport() {
	if [ "${TRANSPORT:-}" = dev ]; then
		transport=(--no-io-uring)
	elif [ -e "$fuse_param" ]; then
		echo Y >"$fuse_param"
	fi
}
# DRIVERFSD_OPTS: more options for every driverfsd serving a snapshot
# (words split at spaces), into the array dopts. Such a bench cannot take
# --handover, which serves a live machine only: what it changes in
# serving, requests through /dev/fuse, is TRANSPORT=dev; attrs-bench.sh
# runs --handover itself (AGAINST_OPTS).
set_daemon_opts() {
	read -r -a dopts <<<"${DRIVERFSD_OPTS:-}"
	case " ${DRIVERFSD_OPTS:-} " in
	*" --handover "*)
		echo "$(basename "$0"): --handover serves a live machine, not a snapshot:" \
			"TRANSPORT=dev serves as it does (/dev/fuse); attrs-bench.sh runs it" >&2
		exit 2
		;;
	esac
}
# Unmounts each mount given (FUSE or tmpfs), quietly, then removes $work.
clean_up() {
	local m
	for m in "$@"; do
		fusermount3 -u "$m" 2>/dev/null || umount "$m" 2>/dev/null || true
	done
	rm -rf "$work"
}
# Exits (2) unless run as root; $1 says why root is needed.
need_root() {
	[ "$(id -u)" -eq 0 ] || { echo "$(basename "$0"): run as root ($1)" >&2; exit 2; }
}
# One warm round of the tree @2 into res[MEASURE_@1] (an associative array
# of the caller's): the second of two walks and reads, its read latency
# p50 and p99, and a stat of every entry.
warm_round() {
	local line
	walk "$2" >/dev/null
	line=$(walk "$2")
	res[warm_$1]+="$(echo "$line" | field 5) "
	res[p50_$1]+="$(echo "$line" | field 7) "
	res[p99_$1]+="$(echo "$line" | field 8) "
	res[stat_$1]+="$(walk --stat "$2" | field 5) "
}
# The median of res[@1].
med() { echo "${res[$1]}" | median; }
# How a measure is printed.
label_of() {
	case $1 in
	warm) echo "warm walk+read (s)" ;;
	stat) echo "warm stat all (s)" ;;
	p50) echo "read latency p50 (us)" ;;
	p99) echo "read latency p99 (us)" ;;
	cold) echo "cold walk+read (s)" ;;
	load) echo "load (s)" ;;
	esac
}
