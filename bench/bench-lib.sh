# shellcheck shell=bash disable=SC2154
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench-lib.sh - what the filesystem benchmarks share (sourced, not run):
# medians, walks that fail on any error, waiting for a mount.
# Needs $build (the build directory whose walk is used).

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# one walk's line; fails on any error
walk() {
	local out
	out=$("$build/walk" "$@")
	[ "$(echo "$out" | cut -d' ' -f6)" = 0 ] || { echo "bench: errors walking $*: $out" >&2; exit 1; }
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
