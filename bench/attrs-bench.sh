#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# attrs-bench.sh - the sysfs attributes driverfsd passes through, against
# their floor and against sysfs (run as root, by hand; it only reads the
# machine's devices). driverfsd serves this machine's tree; the files it
# passes through (its files of size 4096 under root/, read live: docs/
# design.md §6.7) are listed; the same files are read, in the same order,
# ROUNDS times (default 7) interleaved from three places:
#   driverfs   the mount (an open, a read and a release round trip each, and
#              the daemon's own read of sysfs);
#   minfs      build/minfs --open serving a copy of their values: the FUSE
#              floor of a value read live (open, read with direct_io,
#              release, no work behind them);
#   sysfs      the files themselves, under /sys.
# Prints the medians of the time to read them all and of one read's p50 and
# p99, and the ratios driverfs/minfs (the target is 1.3) and driverfs/sysfs;
# and the mount's time less the sysfs column's (the kernel's own work for
# each value, which the floor does not do) against the floor.
# TRANSPORT=dev takes every FUSE request through /dev/fuse. Where the
# kernel offers FUSE passthrough the kernel reads the mount's files itself
# (no READ round trip: docs/design.md §6.4); PASSTHROUGH=0 gives the daemon
# --no-passthrough, every read through it. DRIVERFSD_OPTS gives the daemon
# more options (words split at spaces). AGAINST_OPTS="--handover" (what the
# systemd unit runs) serves the same tree a second time with those options
# beside the first, in its own column "other", read in the same rounds.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build}
rounds=${ROUNDS:-7}
work=$(mktemp -d /tmp/driverfs-attrs.XXXXXX)
mnt=$work/driverfs tmp=$work/tmpfs min=$work/minfs list=$work/files sys_list=$work/sys-files
other=$work/other
# shellcheck source=bench/bench-lib.sh
. "$here/bench/bench-lib.sh"
trap 'clean_up "$mnt" "$other" "$min" "$tmp"' EXIT
need_root "tmpfs, the machine's tree"
set_transport
mkdir -p "$mnt" "$tmp" "$min" "$other"

own=()
[ "${PASSTHROUGH:-1}" = 0 ] && own=(--no-passthrough)
read -r -a opts <<<"${DRIVERFSD_OPTS:-}"
read -r -a against <<<"${AGAINST_OPTS:-}"
# in the foreground (--handover goes with -f), in this script's background
"$build/driverfsd" -f "${transport[@]}" "${own[@]}" "${opts[@]}" "$mnt" 2>/dev/null &
wait_mount "$mnt" $!
if [ ${#against[@]} -gt 0 ]; then
	"$build/driverfsd" -f "${transport[@]}" "${against[@]}" "$other" 2>/dev/null &
	wait_mount "$other" $!
fi
mount -t tmpfs -o size=1g driverfs-attrs "$tmp"
# the passed-through files, their values copied, and their sysfs paths
/usr/bin/python3 - "$mnt" "$tmp" "$list" "$sys_list" <<'EOF'
import os
import sys

mnt, tmp, listing, sys_listing = sys.argv[1:]
root = os.path.join(mnt, "root")
names, sys_names = [], []
devpaths = {}
for top, dirs, files in os.walk(root):
    dirs[:] = [d for d in dirs if d != "pm"]
    if "devpath" in files:
        with open(os.path.join(top, "devpath")) as f:
            devpaths[top] = f.read().strip()
    dev, rel = top, ""
    while dev not in devpaths and dev != root:
        dev, part = os.path.split(dev)
        rel = os.path.join(part, rel)
    if dev not in devpaths:
        continue
    for name in files:
        p = os.path.join(top, name)
        st = os.lstat(p)
        if name == "kernel_driver" or st.st_size != 4096 or not st.st_mode & 0o444:
            continue
        try:
            with open(p, "rb") as f:
                value = f.read()
        except OSError:
            continue  # what sysfs refuses (EIO ...) is no read to time
        r = os.path.relpath(p, mnt)
        os.makedirs(os.path.join(tmp, os.path.dirname(r)), exist_ok=True)
        with open(os.path.join(tmp, r), "wb") as f:
            f.write(value)
        names.append(r)
        sys_names.append(os.path.join(devpaths[dev], rel, name).lstrip("/"))
with open(listing, "w") as f:
    f.write("\n".join(names) + "\n")
with open(sys_listing, "w") as f:
    f.write("\n".join(sys_names) + "\n")
EOF
"$build/minfs" --open "${transport[@]}" "$tmp" "$min" 2>/dev/null
n=$(wc -l < "$list")

declare -A res=()
for _ in $(seq "$rounds"); do
	places="d:$mnt:$list m:$min:$list s:/sys:$sys_list"
	[ ${#against[@]} -eq 0 ] || places+=" o:$other:$list"
	for k in $places; do
		IFS=: read -r w dir files <<<"$k"
		"$build/walk" --files "$files" "$dir" >/dev/null # warm
		line=$("$build/walk" --files "$files" "$dir")
		res[all_$w]+="$(echo "$line" | field 5) "
		res[p50_$w]+="$(echo "$line" | field 7) "
		res[p99_$w]+="$(echo "$line" | field 8) "
	done
done
echo "attrs-bench $(date -u +%F) on $(nproc) cores: $n passed-through files, $rounds rounds; $(uptime)"
echo "driverfs: driverfsd -f ${transport[*]} ${own[*]} ${opts[*]}"
[ ${#against[@]} -eq 0 ] || echo "other: driverfsd -f ${transport[*]} ${against[*]}"
printf "%-24s %10s %10s %10s %9s %9s" measure driverfs minfs sysfs d/minfs d/sysfs
[ ${#against[@]} -eq 0 ] && echo || printf " %10s %9s %9s\n" other o/minfs o/d
for m in all p50 p99; do
	d=$(med "${m}_d") mi=$(med "${m}_m") s=$(med "${m}_s")
	case $m in
	all) label="read them all (s)" ;;
	p50) label="one read p50 (us)" ;;
	p99) label="one read p99 (us)" ;;
	esac
	printf "%-24s %10.4f %10.4f %10.4f %8.2fx %8.2fx" "$label" "$d" "$mi" "$s" \
		"$(ratio "$d" "$mi")" "$(ratio "$d" "$s")"
	if [ ${#against[@]} -eq 0 ]; then
		echo
	else
		o=$(med "${m}_o")
		printf " %10.4f %8.2fx %8.2fx\n" "$o" "$(ratio "$o" "$mi")" "$(ratio "$o" "$d")"
	fi
done
# The daemon reads each value from sysfs, which the floor (a tmpfs copy)
# does not: the kernel's show() of the attribute (PCI config-space reads
# and the like) is in the driverfs column and in the sysfs one, not in the
# floor's. Less that cost, the mount against its floor:
d=$(med all_d) mi=$(med all_m) s=$(med all_s)
printf "%-24s %10.4f %10s %10s %8.2fx\n" "read all, less sysfs's" \
	"$(echo "$d - $s" | bc -l)" "" "" "$(ratio "$(echo "$d - $s" | bc -l)" "$mi")"
