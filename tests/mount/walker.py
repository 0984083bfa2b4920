# SPDX-License-Identifier: LGPL-2.1-or-later
"""A reader for the hotplug stress test: walks the mount over and over
(every directory listed, every file read, every link read) until the file
STOP exists, then prints one JSON line: walks, files read, errors by name,
and the unexpected ones (anything but ENOENT and ENODEV, which a device
removed under the walk rightly gives) with their paths.

    walker.py MOUNT STOP"""
import errno
import json
import os
import sys

EXPECTED = {errno.ENOENT, errno.ENODEV}


def walk(top, counts, unexpected):
    stack = [top]
    while stack:
        path = stack.pop()
        try:
            entries = list(os.scandir(path))
        except OSError as e:
            note(e, path, counts, unexpected)
            continue
        for e in entries:
            try:
                if e.is_symlink():
                    os.readlink(e.path)
                elif e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                else:
                    with open(e.path, "rb") as f:
                        f.read()
                    counts["files"] += 1
            except OSError as err:
                note(err, e.path, counts, unexpected)


def note(e, path, counts, unexpected):
    name = errno.errorcode.get(e.errno, str(e.errno))
    counts["errors"][name] = counts["errors"].get(name, 0) + 1
    if e.errno not in EXPECTED and len(unexpected) < 20:
        unexpected.append(f"{path}: {e}")


def main():
    top, stop = sys.argv[1], sys.argv[2]
    counts = {"walks": 0, "files": 0, "errors": {}}
    unexpected = []
    while not os.path.exists(stop):
        walk(top, counts, unexpected)
        counts["walks"] += 1
    counts["unexpected"] = unexpected
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
