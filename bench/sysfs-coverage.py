#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""sysfs-coverage.py MOUNT - how much of each device's own sysfs attributes
a driverfs mount of this machine shows (run by hand, as root or not: it only
reads). For every device directory of MOUNT/root with a devpath, each
readable regular file of /sys<devpath> (the top level of the device's
directory; subdirectories are not counted yet) is read from sysfs and from
the tree: present with the same bytes, present but different (counters and
other volatile values differ between the two reads), or missing. Prints the
totals and the missing and differing names by frequency."""
import collections
import os
import sys


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return e.errno


def main():
    mnt = sys.argv[1] if len(sys.argv) > 1 else "/devices"
    same = differ = missing = unreadable = 0
    miss_names, diff_names = collections.Counter(), collections.Counter()
    root = os.path.join(mnt, "root")
    for dirpath, dirnames, filenames in os.walk(root):
        if "devpath" not in filenames:
            continue
        devpath = read(os.path.join(dirpath, "devpath"))
        if not isinstance(devpath, bytes):
            continue
        sysdir = "/sys" + devpath.decode().strip()
        try:
            entries = list(os.scandir(sysdir))
        except OSError:
            continue
        for e in entries:
            if not e.is_file(follow_symlinks=False):
                continue
            want = read(e.path)
            if not isinstance(want, bytes):
                unreadable += 1
                continue
            got = read(os.path.join(dirpath, e.name))
            if got == want:
                same += 1
            elif isinstance(got, bytes):
                differ += 1
                diff_names[e.name] += 1
            else:
                missing += 1
                miss_names[e.name] += 1
    total = same + differ + missing
    print(f"readable sysfs attribute files: {total} ({unreadable} more unreadable here)")
    print(f"  same bytes in the tree: {same} ({100.0 * same / max(total, 1):.1f}%)")
    print(f"  different:              {differ} ({100.0 * differ / max(total, 1):.1f}%)")
    print(f"  missing:                {missing} ({100.0 * missing / max(total, 1):.1f}%)")
    print("missing by name:", ", ".join(f"{n} {c}" for n, c in miss_names.most_common(30)))
    print("different by name:", ", ".join(f"{n} {c}" for n, c in diff_names.most_common(30)))


main()
