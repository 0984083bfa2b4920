#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""sysfs-coverage.py MOUNT - how much of each device's own sysfs attributes
a driverfs mount of this machine shows (run by hand, as root or not: it only
reads). For every device directory of MOUNT/root with a devpath, each
readable regular file of /sys<devpath> and of its attribute directories
(not power/, which the tree shows as pm/, nor devices or the glue holding
them) is read from sysfs and from the tree: present with the same bytes, present but different (counters and
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


def is_attr_dir(path, top):
    """A subdirectory the tree shows: no device, no glue holding devices."""
    if top and os.path.basename(path) == "power":
        return False
    if os.path.exists(os.path.join(path, "uevent")):
        return False
    try:
        return not any(os.path.exists(os.path.join(e.path, "uevent"))
                       for e in os.scandir(path) if e.is_dir(follow_symlinks=False))
    except OSError:
        return False


def attribute_files(sysdir, rel="", depth=0):
    """(entry, path under the device) of each regular file the tree may show."""
    try:
        entries = list(os.scandir(os.path.join(sysdir, rel)))
    except OSError:
        return
    for e in entries:
        r = os.path.join(rel, e.name)
        if e.is_file(follow_symlinks=False):
            yield e, r
        elif e.is_dir(follow_symlinks=False) and depth < 7 and is_attr_dir(e.path, depth == 0):
            yield from attribute_files(sysdir, r, depth + 1)


def main():
    mnt = sys.argv[1] if len(sys.argv) > 1 else "/devices"
    same = differ = missing = unreadable = 0
    miss_names, diff_names = collections.Counter(), collections.Counter()
    root = os.path.join(mnt, "root")
    for dirpath, dirnames, filenames in os.walk(root):
        if "devpath" not in filenames:
            continue
        # driverfsd's devpath: the longest of devpath, driverfs:devpath ...
        own = "devpath"
        while "driverfs:" + own in filenames:
            own = "driverfs:" + own
        devpath = read(os.path.join(dirpath, own))
        if not isinstance(devpath, bytes):
            continue
        sysdir = "/sys" + devpath.decode().strip()
        for e, rel in attribute_files(sysdir):
            want = read(e.path)
            if not isinstance(want, bytes):
                unreadable += 1
                continue
            got = read(os.path.join(dirpath, rel))
            if got == want:
                same += 1
            elif isinstance(got, bytes):
                differ += 1
                diff_names[rel] += 1
            else:
                missing += 1
                miss_names[rel] += 1
    total = same + differ + missing
    print(f"readable sysfs attribute files: {total} ({unreadable} more unreadable here)")
    print(f"  same bytes in the tree: {same} ({100.0 * same / max(total, 1):.1f}%)")
    print(f"  different:              {differ} ({100.0 * differ / max(total, 1):.1f}%)")
    print(f"  missing:                {missing} ({100.0 * missing / max(total, 1):.1f}%)")
    print("missing by name:", ", ".join(f"{n} {c}" for n, c in miss_names.most_common(30)))
    print("different by name:", ", ".join(f"{n} {c}" for n, c in diff_names.most_common(30)))


main()
