# SPDX-License-Identifier: LGPL-2.1-or-later
"""Snapshots: driverfsd --save writes the model as JSON; --snapshot serves a
saved model read-only. A save, load and save again gives identical bytes,
and the snapshot's mount shows exactly what the live mount showed."""
import errno
import os
import stat
import subprocess
import sys
import tempfile

import gi
import pytest

from harness import CTL, DAEMON, Daemon, has_devpath, umockdev_env, own

gi.require_version("UMockdev", "1.0")
from gi.repository import UMockdev  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "2002-example.umockdev")
GEN_SNAPSHOT = os.path.join(HERE, "..", "..", "bench", "gen-snapshot.py")


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
                   "version": doc["version"], "buses": doc["buses"], "format": doc["format"]},
                  f, indent=3)
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


def test_save_refuses_what_is_not_a_regular_file(saved):
    """--save and driverfsctl save to a fifo (no reader: the open blocked
    forever), a character device (/dev/null) or a directory are refused
    with the reason, at once, and leave it as it was; to a symlink of the
    caller's, replace the file it points to and keep the link."""
    tmp, first = saved
    with open(first) as f:
        expected = f.read()
    fifo = os.path.join(tmp, "pipe")
    os.mkfifo(fifo)
    for target, kind in ((fifo, "a fifo"), ("/dev/null", "a character device"),
                         (tmp, "a directory")):
        r = subprocess.run([DAEMON, "--snapshot", first, "--save", target],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0
        assert f"{target}: not a regular file ({kind})" in r.stderr, r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    d = Daemon(None, ["--snapshot", first])
    try:
        r = subprocess.run([CTL, "-m", d.mnt, "save", fifo], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 1, r.stderr
        assert f"{fifo}: not a regular file (a fifo)" in r.stderr, r.stderr
    finally:
        d.stop()
    os.unlink(fifo)

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


def _truncate_when_loading(path, proc):
    """Truncates @path to a few bytes as soon as @proc has it mapped or open
    (polled in /proc); whether it did."""
    real = os.path.realpath(path)
    maps, fds = f"/proc/{proc.pid}/maps", f"/proc/{proc.pid}/fd"
    while proc.poll() is None:
        try:
            with open(maps) as f:
                held = real in f.read()
            for fd in [] if held else os.listdir(fds):
                try:
                    held = held or os.readlink(os.path.join(fds, fd)) == real
                except OSError:
                    pass
        except OSError:
            continue
        if held:
            os.truncate(path, 100)
            return True
    return False


@pytest.mark.parametrize("run", range(3))
def test_a_snapshot_truncated_while_loading_is_an_error_not_a_crash(tmp_path, run):
    """A snapshot that shrinks while driverfsd loads it is a short read: the
    load fails with a message, or has it all, never dies of SIGBUS (it was
    mapped: a page past the new end faulted). Truncated as soon as the
    daemon holds it (mapped or open), in /proc."""
    big = tmp_path / "big.json"
    subprocess.run([sys.executable, GEN_SNAPSHOT, "--attrs", "5000", str(big)], check=True)
    out = tmp_path / "out.json"
    proc = subprocess.Popen([DAEMON, "--snapshot", str(big), "--save", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        truncated = _truncate_when_loading(str(big), proc)
        err = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {err}"
    if proc.returncode:
        assert str(big) in err and "not JSON" in err, err
    else:
        assert not truncated or os.path.getsize(out) > 100


def tree(mnt):
    """{relative path: (kind, content or link target or read error, mode)} of
    a mount, less the pm/ directories: they pass the machine's sysfs
    through, live, and a snapshot has no machine behind it; and less the
    binding control files (a device's binding, the top's bindings) and
    the top's metrics and journal, the serving daemon's state and counters,
    and its devices_deferred, the kernel's deferred probes (debugfs's, a
    live machine's). Everything else
    a snapshot (format 2) keeps: values as bytes, binary ones too, modes,
    attribute directories."""
    out = {}
    for top, dirs, files in os.walk(mnt):
        # driverfsd's own pm/ and binding wherever they are (driverfs:pm
        # where a device of the kernel's is called pm: docs/design.md §6.2)
        # (a child device called pm is no pm/: it has a devpath)
        pm, binding = os.path.basename(own(top, "pm")), os.path.basename(own(top, "binding"))
        dirs[:] = [d for d in dirs
                   if d != pm or has_devpath(os.listdir(os.path.join(top, d)))]
        files = [f for f in files if f != binding and
                 (f not in ("bindings", "metrics", "power_log", "devices_deferred") or
                  top != mnt)]
        for name in dirs + files:
            p = os.path.join(top, name)
            rel = os.path.relpath(p, mnt)
            st = os.lstat(p)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p), st.st_mode)
            elif os.path.isdir(p):
                out[rel] = ("dir", None, st.st_mode)
            else:
                try:
                    with open(p, "rb") as f:
                        value = f.read()
                except OSError as e:
                    value = e.errno
                out[rel] = ("file", value, st.st_mode)
    return out


def test_snapshot_mount_shows_what_the_live_mount_showed(saved):
    tmp, first = saved
    live = Daemon(TESTBED)
    snap = Daemon(None, ["--snapshot", first])
    try:
        a, b = tree(live.mnt), tree(snap.mnt)
        assert set(a) == set(b), sorted(set(a) ^ set(b))[:10]
        # a snapshot is read-only (mounted ro): its writable files show
        # with their modes, as they were
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
            with open(snap.path("power"), "w") as f:
                f.write("suspend")
        assert e.value.errno == errno.EROFS
        with open(snap.path("power")) as f:
            assert f.read() == "on\n"
    finally:
        snap.stop()


@pytest.mark.parametrize("text, message", [
    ('{"format": "driverfs-snapshot", "version": 1, "buses": [], ', "first.json"),
    ('{"format": "something-else", "version": 1, "buses": [], "classes": [], "devices": []}',
     "not a driverfs-snapshot file of version 1 to 2"),
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
     "not a driverfs-snapshot file of version 1 to 2"),
    ('{"format": "driverfs-snapshot", "version": 3, "buses": [], "classes": [], "devices": []}',
     "not a driverfs-snapshot file of version 1 to 2"),
    # format 2's files and directories, each checked
] + [('{"format": "driverfs-snapshot", "version": 2, "buses": [], "classes": [], "devices": ['
      '{"path": "a", "values": {}, %s}]}' % member, message) for member, message in [
    ('"files": {"x": {"mode": "0844", "text": ""}}', "devices[0] a: file x: not a valid"),
    ('"files": {"x": {"mode": "-644", "text": ""}}', "devices[0] a: file x: not a valid"),
    ('"files": {"x": {"mode": "0644", "text": "", "base64": ""}}', "file x: not a valid"),
    ('"files": {"x": {"mode": "0644", "base64": "Zg="}}', "file x: not a valid"),
    ('"files": {"x": {"mode": "0644", "text": 7}}', "file x: not a valid"),
    ('"files": {"x": {"mode": "0644", "colour": "red"}}', "file x: not a valid"),
    ('"files": {"x": {"mode": "0644", "error": "EWHATEVER"}}', "file x: not a valid"),
    ('"files": {"x": {"mode": "0644", "error": "EIO", "text": ""}}', "file x: not a valid"),
    ('"files": {"..": {"mode": "0644"}}', "file ..: not a valid"),
    ('"files": {"x": "0644"}', "file x: not a valid"),
    ('"dirs": {"q": {"values": {"a/b": "1"}}}', "value q/a/b: not a valid"),
    ('"dirs": {"q": {"values": {"a": "1"}, "files": {"a": {"mode": "0644"}}}}',
     "file q/a: listed twice"),
    ('"dirs": {"q": []}', "directory q: not a valid"),
    # nine levels: one more than sysfs's attribute directories get
    ('"dirs": {"d": ' + '{"dirs": {"d": ' * 8 + '{}' + '}}' * 8 + '}',
     "directory d/d/d/d/d/d/d/d/d: not a valid"),
    ('"dirs": {"d": ' + '{"dirs": {"d": ' * 7 + '{}' + '}}' * 7 + '}, "files": {"x": 1}',
     "file x: not a valid"),
    ('"files": []', "values, files and dirs must be objects"),
    # names with control characters (issue 30 item 1: defence in depth;
    # they reach shells and terminals): ESC, BEL, newline, tab, DEL, C1
    ('"files": {"x\\u0085": {"mode": "0444", "text": ""}}', "not a valid"),
    ('"dirs": {"q\\u001b": {}}', "not a valid"),
]] + [('{"format": "driverfs-snapshot", "version": 2, "buses": [], "classes": [], "devices": ['
       '%s]}' % device, message) for device, message in [
    ('{"path": "a\\u001b[2J", "values": {}}', "devices[0]: its path is no valid name (UTF-8 "
     "without control characters)"),
    ('{"path": "a", "devpath": "/devices/a\\n", "values": {}}', "devices[0]: its devpath"),
    ('{"path": "a", "sysname": "a\\u009b", "values": {}}', "devices[0]: its sysname"),
    ('{"path": "a", "bus": "p\\u0007", "values": {}}', "devices[0]: its bus"),
    ('{"path": "a", "class": "c\\u007f", "values": {}}', "devices[0]: its class"),
    ('{"path": "a", "class": "c", "interface": "i\\t", "values": {}}', "its interface"),
    ('{"path": "a", "driver": "d\\r", "values": {}}', "devices[0]: its driver"),
    ('{"path": "a", "kernel_driver": "d\\u0080", "values": {}}', "its kernel_driver"),
    ('{"path": "a", "values": {"x\\u001b": "1"}}', "devices[0] a: Invalid argument"),
]] + [('{"format": "driverfs-snapshot", "version": 2, %s, "devices": []}' % top, message)
      for top, message in [
    ('"buses": [{"name": "pci\\u001b", "drivers": []}], "classes": []',
     "buses[0]: needs a valid name (UTF-8 without control characters)"),
    ('"buses": [{"name": "pci", "drivers": [{"name": "e\\u009b", "kind": "kernel", '
     '"priority": 0}]}], "classes": []', "buses[0].drivers[0]: needs name (UTF-8 without"),
    ('"buses": [], "classes": [{"name": "n\\net", "interfaces": []}]', "classes[0]: needs"),
    ('"buses": [], "classes": [{"name": "net", "interfaces": ["a\\u0007"]}]',
     "classes[0].interfaces[0]: not a valid name (UTF-8 without control characters)"),
]])
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


def test_a_name_that_is_not_utf8_is_refused(saved):
    """A path, a bus and a file whose names hold bytes that are not UTF-8
    (0x9b alone is CSI to an 8-bit terminal): refused, nothing saved."""
    tmp, _ = saved
    bad = os.path.join(tmp, "bad", "notutf8.json")
    os.makedirs(os.path.dirname(bad), exist_ok=True)
    for doc, message in (
            (b'"buses": [], "devices": [{"path": "a\x9b", "values": {}}]',
             "devices[0]: its path is no valid name"),
            (b'"buses": [{"name": "p\xff", "drivers": []}], "devices": []', "buses[0]: needs"),
            (b'"buses": [], "devices": [{"path": "a", "values": {}, '
             b'"files": {"x\xc3": {"mode": "0444", "text": ""}}}]', "not a valid")):
        with open(bad, "wb") as f:
            f.write(b'{"format": "driverfs-snapshot", "version": 2, "classes": [], ' + doc + b'}')
        r = subprocess.run([DAEMON, "--snapshot", bad, "--save", bad + ".out"],
                           capture_output=True, text=True, errors="replace")
        assert r.returncode != 0
        assert message in r.stderr, r.stderr
        assert not os.path.exists(bad + ".out")


FORMAT_1 = os.path.join(HERE, "..", "fuzz", "snapshot", "usbkbd.json")


def test_a_format_1_snapshot_still_loads(tmp_path):
    """A file of the previous format loads and is saved again in this one,
    every value kept; its mount serves them."""
    import json
    out = tmp_path / "again.json"
    r = subprocess.run([DAEMON, "--snapshot", FORMAT_1, "--save", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(FORMAT_1) as f:
        old = json.load(f)
    new = json.loads(out.read_text())
    assert old["version"] == 1 and new["version"] == 2
    assert [d["path"] for d in old["devices"]] == [d["path"] for d in new["devices"]]
    for a, b in zip(old["devices"], new["devices"]):
        assert a["values"] == b["values"], a["path"]
        assert "files" not in b and "dirs" not in b
    snap = Daemon(None, ["--snapshot", FORMAT_1])
    try:
        dev = next(d for d in old["devices"] if d["values"].get("serial"))
        with open(snap.path("root", *dev["path"].split("/"), "serial")) as f:
            assert f.read() == dev["values"]["serial"] + "\n"
    finally:
        snap.stop()


USB_TESTBED = os.path.join(HERE, "..", "testbeds", "usb-tree.umockdev")


def test_sanitize_masks_identifiers_and_drops_binary(tmp_path):
    """--sanitize, on driverfsd --save and driverfsctl save alike: serial
    numbers and the other identifiers masked, binary values (USB
    descriptors) dropped, nothing else changed; both write the same file."""
    import json

    tb = UMockdev.Testbed.new()
    assert tb.add_from_file(USB_TESTBED)
    plain, masked = tmp_path / "plain.json", tmp_path / "masked.json"
    for out, extra in ((plain, []), (masked, ["--sanitize"])):
        r = subprocess.run([DAEMON, "--save", str(out)] + extra, env=umockdev_env(tb),
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    a, b = json.loads(plain.read_text()), json.loads(masked.read_text())
    serials = [(d["path"], d["values"]["serial"]) for d in a["devices"]
               if d["values"].get("serial")]
    assert serials, "the testbed's USB devices have serial numbers"
    text = masked.read_text()
    for _, serial in serials:
        assert json.dumps(serial) not in text
    assert '"base64"' in plain.read_text() and '"base64"' not in text

    def files(doc):
        out = {}
        for d in doc["devices"]:
            for k, v in d["values"].items():
                out[(d["path"], k)] = v
            for k, v in d.get("files", {}).items():
                if "base64" not in v:
                    out[(d["path"], k)] = v.get("text")
        return out
    fa, fb = files(a), files(b)
    assert set(fb) <= set(fa)
    changed = {k for k in fb if fa[k] != fb[k]}
    assert {k for k in changed if k[1] == "serial"} == {(p, "serial") for p, _ in serials}
    assert all(fb[k].startswith("[REMOVED]") or "[REMOVED]" in fb[k] for k in changed)
    # driverfsctl save --sanitize of the sanitized snapshot's mount: the same
    snap = Daemon(None, ["--snapshot", str(masked)])
    try:
        again = tmp_path / "again.json"
        r = subprocess.run([CTL, "-m", snap.mnt, "save", "--sanitize", str(again)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert again.read_text() == text
    finally:
        snap.stop()
    r = subprocess.run([DAEMON, "--sanitize"], capture_output=True, text=True)
    assert r.returncode != 0 and "--sanitize goes with --save" in r.stderr
