# SPDX-License-Identifier: LGPL-2.1-or-later
"""The bad-input matrix: every writable file of several mounted testbeds
(pm/ runtime-PM controls, exec drivers from drivers.d, USB and PCI trees)
gets an empty write, an empty line, more than 4096 bytes, binary garbage, a
value in two write() calls and a write at an offset. Each is refused with
the errno docs/design.md §6.5 gives (EINVAL; EFBIG for the overlong one), the value
read back is what it was, and the daemon still serves the mount."""
import errno
import os
import stat
import tempfile

import pytest

from harness import Daemon, drivers_config, has_devpath, own

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBEDS = os.path.join(HERE, "..", "testbeds")

# A value each writable file accepts, to cut in two and to write at an
# offset. A number has no cut whose halves are both bad (each write() is a
# whole value, as in sysfs), so numeric files get no cut.
VALID = {"power": "suspend", "control": "auto", "wakeup": "enabled",
         "autosuspend_delay_ms": None}

GARBAGE = [
    b"\x00",
    b"suspend\x00",
    b"\xff\xfe\xfd",
    b"on\nsuspend\n",
    b"sus\npend",
    b"\x00\xff\n\x00resume",
    b" suspend",
    b"suspend \n",
    b"\n",
]


def take_all_args(tmp):
    """A --config whose drivers.d has an exec driver taking every PCI device."""
    return ["--config", drivers_config(tmp, {"10-all.conf": (
        "[Driver]\nName=take-all\nBus=pci\nPriority=500\n"
        "[Hooks]\nSuspend=/bin/true\nResume=/bin/true\n")}, "[PM]\nHookTimeout=5\n")]


def writable_files(d):
    """Every writable file driverfsd checks itself. A device's own sysfs
    attributes passed through are left out: the kernel checks what is
    written to them (a testbed's plain file takes anything), and
    test_sysfs_attrs.py has the kernel's refusals come back."""
    out = []
    sysfs = d.testbed.get_root_dir() + "/sys" if d.testbed else None
    devpaths = {}  # device directory -> its devpath
    for top, dirs, files in os.walk(os.path.join(d.mnt, "root")):
        if has_devpath(files) and sysfs:
            devpaths[top] = read(own(top, "devpath")).decode().strip()
        # the device this directory belongs to (an attribute directory's
        # is the nearest one up with a devpath)
        dev, rel = top, ""
        while dev not in devpaths and dev != d.mnt:
            dev, part = os.path.split(dev)
            rel = os.path.join(part, rel)
        for name in files:
            path = os.path.join(top, name)
            if not os.lstat(path).st_mode & 0o222:
                continue
            # sysfs:NAME is sysfs's NAME, beside driverfsd's own NAME
            sysfs_name = name[len("sysfs:"):] if name.startswith("sysfs:") and not rel else name
            if dev in devpaths and not (name == "power" and not rel) and \
                    os.path.isfile(sysfs + devpaths[dev] + "/" + os.path.join(rel, sysfs_name)):
                continue
            out.append(path)
    return sorted(out)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write_calls(path, chunks, offset=0):
    """Writes each chunk with its own write() on one descriptor; the errno
    of each (0 when it was taken), and the byte counts written."""
    fd = os.open(path, os.O_WRONLY)
    results = []
    try:
        for chunk in chunks:
            try:
                n = os.pwrite(fd, chunk, offset) if offset else os.write(fd, chunk)
                results.append((0, n))
            except OSError as e:
                results.append((e.errno, 0))
    finally:
        os.close(fd)
    return results


def cases(name):
    """(label, chunks, offset, errnos each chunk may give)."""
    yield "empty", [b""], 0, {0, errno.EINVAL}  # the kernel may not pass it on
    yield "empty line", [b"\n"], 0, {errno.EINVAL}
    yield "4097 bytes", [b"a" * 4097], 0, {errno.EFBIG}
    yield "64 KiB", [b"suspend\n" * 8192], 0, {errno.EFBIG}
    for g in GARBAGE:
        yield f"garbage {g!r}", [g], 0, {errno.EINVAL}
    valid = VALID.get(name)
    if valid:
        half = len(valid) // 2
        yield "cut in two", [valid[:half].encode(), valid[half:].encode()], 0, {errno.EINVAL}
    yield "at offset 1", [(valid or "5").encode()], 1, {errno.EINVAL}
    yield "at offset 4096", [(valid or "5").encode()], 4096, {errno.EINVAL}


def check_matrix(d):
    files = writable_files(d)
    assert files, "no writable file in the mount"
    names = {os.path.basename(p) for p in files}
    failures = []
    for path in files:
        name = os.path.basename(path)
        before = read(path)
        for label, chunks, offset, allowed in cases(name):
            results = write_calls(path, chunks, offset)
            for err, n in results:
                if err not in allowed or (err == 0 and n != 0):
                    failures.append(f"{path}: {label}: errno {err} ({n} bytes taken), "
                                    f"expected one of {sorted(allowed)}")
            after = read(path)
            if after != before:
                failures.append(f"{path}: {label}: value {before!r} became {after!r}")
            assert d.proc.poll() is None, f"the daemon died on {path} {label}:\n" + d.output()
        assert d.is_mounted() and os.listdir(d.mnt), "the mount is gone"
    assert not failures, "\n".join(failures[:40])
    return names


@pytest.mark.parametrize("testbed,want", [
    ("small-pci.umockdev", {"power", "control"}),
    ("usb-tree.umockdev", {"power", "control"}),
    ("real/fido2.umockdev", {"power"}),
    ("2002-example.umockdev", {"power"}),
])
def test_bad_writes(testbed, want):
    d = Daemon(os.path.join(TESTBEDS, testbed))
    try:
        names = check_matrix(d)
        assert want <= names, f"expected writable {sorted(want)}, found {sorted(names)}"
    finally:
        d.stop()


def test_bad_writes_with_exec_drivers():
    """The server testbed with an exec driver holding every PCI function:
    its power files go through the PM engine and the driver's hooks."""
    with tempfile.TemporaryDirectory(prefix="driverfs-bad-") as tmp:
        d = Daemon(os.path.join(TESTBEDS, "server-2dom.umockdev"), take_all_args(tmp))
        try:
            driver = d.path("bus", "pci", "drivers", "take-all")
            assert os.listdir(driver), "the exec driver holds no device"
            names = check_matrix(d)
            assert {"power", "control"} <= names, sorted(names)
            # the files still work: a good write after all the bad ones
            nic = d.path("bus", "pci", "devices", sorted(os.listdir(
                d.path("bus", "pci", "devices")))[-1])
            with open(os.path.join(nic, "power"), "w") as f:
                f.write("suspend")
            assert read(os.path.join(nic, "power")) == b"suspended\n"
            with open(os.path.join(nic, "power"), "w") as f:
                f.write("resume")
            assert read(os.path.join(nic, "power")) == b"on\n"
        finally:
            d.stop()
