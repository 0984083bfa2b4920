#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""check-docs - docs/design.md and tests/README.md held to the tree they
describe: every function, path and test they cite exists, and every test
file is listed in tests/README.md (issue 35 item 1).

  check-docs.py [SOURCE_ROOT]

What is cited is what is in backquotes:
  - `name()`: a function or macro; it must be defined, declared or called
    somewhere in src/, tests/ or include/ (a word followed by "(");
  - a path starting with src/, tests/, contrib/, man/, bench/, docs/,
    scripts/, include/ or .ci/ (or a bare test file: test_x.py, test-x.c),
    wildcards allowed: it must match a file or directory, from the top of
    the tree or from the citing document's directory;
  - `test_file.py::test_name`: the test function must be in that file.
Names of the kernel's, libfuse's and other projects' own functions are
cited too; those go in KNOWN below, each with where it comes from.
Exit 1 with one line per problem, FILE:LINE: what."""
import glob
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = ["docs/design.md", "tests/README.md"]
PREFIXES = ("src/", "tests/", "contrib/", "man/", "bench/", "docs/", "scripts/", "include/",
            ".ci/")
CODE_DIRS = ("src", "tests", "include", "bench", "scripts")

# Functions of other code the documents cite (the kernel's fs/fuse and
# driver core, libfuse, libudev, libc, systemd): not this tree's.
KNOWN = {
    # Linux, drivers/base/power/main.c
    "dpm_wait_for_suppliers",
    # Linux, drivers/base/core.c (a deferred probe's reason, design §6.10)
    "dev_err_probe",
    # Linux, drivers/pci/remove.c (the unplug's unbind, design §9.1)
    "pci_stop_dev",
    # Linux, drivers/vfio/container.c
    "vfio_ioctl_set_iommu",
    # Linux, fs/fuse/ (inode.c, iomode.c, dev_uring.c)
    "fuse_change_attributes_i", "fuse_file_io_open", "fuse_inode_uncached_io_start",
    "fuse_uring_register", "fuse_uring_cancel",
}


def code_words():
    """Every identifier followed by "(" in the tree's C, Python and shell."""
    words = set()
    for d in CODE_DIRS:
        for top, dirs, files in os.walk(os.path.join(ROOT, d)):
            dirs[:] = [x for x in dirs if not x.startswith(("build", "."))]
            for f in files:
                if not f.endswith((".c", ".h", ".py", ".sh", ".in")):
                    continue
                try:
                    text = open(os.path.join(top, f), errors="replace").read()
                except OSError:
                    continue
                words.update(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", text))
    return words


def path_exists(p, doc):
    """@p from the top of the tree, or from @doc's directory."""
    for base in (ROOT, os.path.join(ROOT, os.path.dirname(doc))):
        full = os.path.join(base, p)
        if glob.glob(full) if any(c in p for c in "*?[") else os.path.exists(full):
            return True
    return False


def bare_test_exists(name):
    """test_x.py, test-x.c, helpers/x.c ... somewhere under tests/."""
    return bool(glob.glob(os.path.join(ROOT, "tests", "**", name), recursive=True))


def main():
    words = code_words()
    problems = []
    cited_tests = set()
    for doc in DOCS:
        with open(os.path.join(ROOT, doc)) as f:
            lines = f.read().split("\n")
        for no, line in enumerate(lines, 1):
            for span in re.findall(r"`([^`]+)`", line):
                span = span.strip()
                # "dm_*_metrics()", "_put()": a family of names, not one
                for fn in re.findall(r"(?<![*A-Za-z0-9_])([A-Za-z][A-Za-z0-9_]*)\(\)", span):
                    if fn not in words and fn not in KNOWN:
                        problems.append(f"{doc}:{no}: no function {fn}() in the tree")
                m = re.fullmatch(r"(?:\S*/)?(test_[A-Za-z0-9_]+\.py)::(test_[A-Za-z0-9_]+)(?:\[.*\])?",
                                 span)
                if m:
                    files = glob.glob(os.path.join(ROOT, "tests", "**", m.group(1)),
                                      recursive=True)
                    if not files:
                        problems.append(f"{doc}:{no}: no test file {m.group(1)}")
                    elif not any(re.search(rf"\bdef {m.group(2)}\(", open(p).read())
                                 for p in files):
                        problems.append(f"{doc}:{no}: no test {m.group(2)} in {m.group(1)}")
                    cited_tests.add(m.group(1))
                    continue
                for word in span.split():
                    word = word.strip(",;:()")
                    if word.startswith(PREFIXES) and re.fullmatch(r"[A-Za-z0-9_./*?\[\]+-]+",
                                                                  word):
                        if not path_exists(word.rstrip("/"), doc):
                            problems.append(f"{doc}:{no}: no such path {word}")
                    elif re.fullmatch(r"test[_-][A-Za-z0-9_*-]+\.(py|c|sh)", word):
                        cited_tests.add(word)
                        if not bare_test_exists(word):
                            problems.append(f"{doc}:{no}: no test file {word}")
    # every test file is listed in tests/README.md
    readme = open(os.path.join(ROOT, "tests", "README.md")).read()
    for pattern in ("tests/mount/test_*.py", "tests/unit/test-*.c", "tests/vm/guest/test_*.sh",
                    "tests/vm/test_*.py", "tests/completion/test_*.py"):
        for p in sorted(glob.glob(os.path.join(ROOT, pattern))):
            name = os.path.basename(p)
            stem = re.sub(r"^test[-_]|\.(py|c|sh)$", "", name)
            if name not in readme and f"`{stem}`" not in readme:
                problems.append(f"tests/README.md: {os.path.relpath(p, ROOT)} is not listed")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
