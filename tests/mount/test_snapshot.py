# SPDX-License-Identifier: LGPL-2.1-or-later
"""Snapshots: driverfsd --save writes the model as JSON; --snapshot serves a
saved model read-only. A save, load and save again gives identical bytes,
and the snapshot's mount shows exactly what the live mount showed."""
import errno
import os
import stat
import subprocess
import tempfile

import gi
import pytest

from harness import DAEMON, Daemon, umockdev_env

gi.require_version("UMockdev", "1.0")
from gi.repository import UMockdev  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "2002-example.umockdev")


@pytest.fixture(scope="module")
def saved():
    tmp = tempfile.TemporaryDirectory(prefix="driverfs-snap-")
    tb = UMockdev.Testbed.new()
    assert tb.add_from_file(TESTBED)
    first = os.path.join(tmp.name, "first.json")
    r = subprocess.run([DAEMON, "--save", first], env=umockdev_env(tb), capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    yield tmp.name, first
    tmp.cleanup()


def test_save_load_save_is_identical(saved):
    tmp, first = saved
    second = os.path.join(tmp, "second.json")
    r = subprocess.run([DAEMON, "--snapshot", first, "--save", second], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    with open(first, "rb") as a, open(second, "rb") as b:
        assert a.read() == b.read()


def test_members_in_any_order_load_the_same(saved):
    """The loader reads devices as it parses them when the other members came
    first (as driverfsd writes them), else it comes back to them at the end:
    a file with "devices" first, spaced and indented differently, loads into
    the same model. Read from a pipe, which cannot be mapped, too."""
    import json
    import threading
    tmp, first = saved
    with open(first) as f:
        expected = f.read()
    doc = json.loads(expected)
    reordered = os.path.join(tmp, "reordered.json")
    with open(reordered, "w") as f:
        json.dump({"devices": doc["devices"], "classes": doc["classes"], "extra": [1, {"a": 2}],
                   "version": 1, "buses": doc["buses"], "format": doc["format"]}, f, indent=3)
    again = os.path.join(tmp, "again.json")
    r = subprocess.run([DAEMON, "--snapshot", reordered, "--save", again], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    with open(again) as f:
        assert f.read() == expected
    fifo = os.path.join(tmp, "in-pipe")
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: open(fifo, "w").write(expected), daemon=True)
    writer.start()
    r = subprocess.run([DAEMON, "--snapshot", fifo, "--save", again], capture_output=True,
                       text=True, timeout=60)
    writer.join(60)
    assert r.returncode == 0, r.stderr
    with open(again) as f:
        assert f.read() == expected


def test_save_writes_into_what_is_not_a_regular_file(saved):
    """--save to a fifo (like /dev/null or a terminal) writes into it and leaves
    it a fifo; to a symlink, replaces the file it points to and keeps the link.
    (Renaming a temporary file over the target replaced /dev/null with a
    regular file once.)"""
    import threading
    tmp, first = saved
    with open(first) as f:
        expected = f.read()
    fifo = os.path.join(tmp, "pipe")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()), daemon=True)
    reader.start()
    r = subprocess.run([DAEMON, "--snapshot", first, "--save", fifo], capture_output=True,
                       text=True, timeout=60)
    reader.join(60)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got == [expected]

    target = os.path.join(tmp, "target.json")
    with open(target, "w") as f:
        f.write("old\n")
    link = os.path.join(tmp, "link.json")
    os.symlink(target, link)
    r = subprocess.run([DAEMON, "--snapshot", first, "--save", link], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert os.path.islink(link) and os.readlink(link) == target
    with open(target) as f:
        assert f.read() == expected
    assert not [n for n in os.listdir(tmp) if ".json." in n]  # no temporary file left


def saveable(value):
    """Whether a snapshot (format 1) keeps a value read from the tree: UTF-8
    text without a NUL, shorter than a page, and one newline after it
    (src/snapshot/format.c, dm_snapshot_file_is_kept())."""
    if not value.endswith(b"\n"):
        return False
    value = value[:-1]
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\0" not in value and len(value) < 4096


def tree(mnt, live=False):
    """{relative path: (kind, content or link target, mode)} of a mount, less
    the pm/ directories: they pass the machine's sysfs through, live, and a
    snapshot has no machine behind it; nor, in the live mount, the device's
    other attribute directories, which a snapshot does not keep. Of the live mount's values read from
    sysfs (its files of size 4096: docs/design.md §6.6), those a snapshot
    does not keep (binary) are left out, and their modes are compared
    without write bits: a snapshot serves them as read-only static values."""
    out = {}
    for top, dirs, files in os.walk(mnt):
        dirs[:] = [d for d in dirs if d != "pm"]
        if live and os.path.relpath(top, mnt).split(os.sep)[0] == "root":
            # a device's attribute directories (queue/ ...) are sysfs's,
            # and a snapshot (format 1) keeps none: only device directories
            # (each has a power file) are compared
            dirs[:] = [d for d in dirs if os.path.islink(os.path.join(top, d))
                       or os.path.isfile(os.path.join(top, d, "power"))]
        for name in dirs + files:
            p = os.path.join(top, name)
            rel = os.path.relpath(p, mnt)
            st = os.lstat(p)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p), st.st_mode)
            elif os.path.isdir(p):
                out[rel] = ("dir", None, st.st_mode)
            else:
                with open(p, "rb") as f:
                    value = f.read()
                mode = st.st_mode
                if st.st_size == 4096 and name != "kernel_driver":
                    if live and not saveable(value):
                        continue
                    mode &= ~0o222
                out[rel] = ("file", value, mode)
    return out


def test_snapshot_mount_shows_what_the_live_mount_showed(saved):
    tmp, first = saved
    live = Daemon(TESTBED)
    snap = Daemon(None, ["--snapshot", first])
    try:
        a, b = tree(live.mnt, live=True), tree(snap.mnt)
        assert set(a) == set(b), sorted(set(a) ^ set(b))[:10]
        # a snapshot is read-only: its writable files show as they were
        diff = [p for p in a if a[p] != b[p]]
        assert diff == [], [(p, a[p], b[p]) for p in diff[:5]]
        assert len(a) > 1000
    finally:
        snap.stop()
        live.stop()


def test_snapshot_mount_is_read_only(saved):
    tmp, first = saved
    snap = Daemon(None, ["--snapshot", first])
    try:
        with pytest.raises(OSError) as e:
            with open(snap.path("root", "power"), "w") as f:
                f.write("suspend")
        assert e.value.errno == errno.EROFS
        with open(snap.path("root", "power")) as f:
            assert f.read() == "on\n"
    finally:
        snap.stop()


@pytest.mark.parametrize("text, message", [
    ('{"format": "driverfs-snapshot", "version": 1, "buses": [], ', "first.json"),
    ('{"format": "something-else", "version": 1, "buses": [], "classes": [], "devices": []}',
     "not a driverfs-snapshot version 1 file"),
    ('{"format": "driverfs-snapshot", "version": 1, "buses": [], "classes": [], "devices": ['
     '{"path": "a/b", "values": {}}]}', "devices[0] a/b: its parent is not listed before it"),
    ('{"format": "driverfs-snapshot", "version": 1, "buses": [], "classes": [], "devices": ['
     '{"path": "a", "values": {}, "power": "sleeping"}]}', "devices[0]"),
    ('{"format": "driverfs-snapshot", "version": 1, "buses": [], "classes": [], "devices": ['
     '{"path": "a", "values": {}}, {"path": "a", "values": {}}]}', "devices[1] a: listed twice"),
    ('{"format": "driverfs-snapshot", "version": 1, "buses": [], "classes": [], "devices": ['
     '{"path": "a", "values": {}}, 7]}', "devices[1]: not an object"),
    ('{"format": "driverfs-snapshot", "version": 1, "buses": [], "classes": [], "devices": ['
     '{"path": "a", "values": {}} {"path": "b", "values": {}}]}', "not JSON (',' expected"),
    ('{"format": "driverfs-snapshot", "version": 1, "buses": [], "classes": [], "devices": [], '
     '"buses": []}', '"buses" given twice'),
    ('{"format": "driverfs-snapshot", "version": 1, "buses": [], "classes": [], "devices": []} x',
     "more after the end"),
    ('{"devices": [{"path": "a", "values": {}}], "format": "driverfs-snapshot", "version": 1, '
     '"buses": [], "classes": []', "not JSON"),
    ('{"format": "driverfs-snapshot", "version": 1, "buses": [], "classes": []}',
     "not a driverfs-snapshot version 1 file"),
])
def test_bad_snapshot_is_refused_with_a_clear_message(saved, text, message):
    tmp, _ = saved
    bad = os.path.join(tmp, "bad", "first.json")
    os.makedirs(os.path.dirname(bad), exist_ok=True)
    with open(bad, "w") as f:
        f.write(text)
    r = subprocess.run([DAEMON, "--snapshot", bad, "--save", bad + ".out"], capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr
    assert not os.path.exists(bad + ".out")
