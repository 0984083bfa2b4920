# SPDX-License-Identifier: LGPL-2.1-or-later
"""The volatile files, as docs/snapshot.md ("Volatile values") lists them:
the one list, which src/snapshot/format.c holds too (the unit test
snapshot-format keeps the two equal). A rule is a name, "*SUFFIX" or "DIR/"
(every file under a directory of that name)."""
import os
import re

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                   "snapshot.md")


def rules():
    with open(DOC) as f:
        text = f.read()
    section = text.split("\n## Volatile values\n", 1)[1].split("\n## ", 1)[0]
    items = re.findall(r"^- .*?(?=^\S|\Z)", section, re.M | re.S)
    return [w for item in items for w in re.findall(r"`([^`]+)`", item)]


RULES = rules()
NAMES = {r for r in RULES if not r.startswith("*") and not r.endswith("/")}
SUFFIXES = tuple(r[1:] for r in RULES if r.startswith("*"))
DIRS = {r[:-1] for r in RULES if r.endswith("/")}


def is_volatile(path):
    """Whether the file at @path (a path in a mount, or under a device) is
    volatile."""
    parts = path.split("/")
    name = parts[-1]
    return (name in NAMES or (name.endswith(SUFFIXES) and
                              any(len(name) > len(s) for s in SUFFIXES if name.endswith(s)))
            or any(p in DIRS for p in parts[:-1]))
