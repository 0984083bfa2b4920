# SPDX-License-Identifier: LGPL-2.1-or-later
"""driverfsctl diff A B (issue 19 item 4, docs/design.md §6.9): a mount and
snapshots compared. A mount equals its own save and driverfsd --save's;
after hotplug (a keyboard plugged in, a value changed, a driver unbound)
the diff of the saved tree and the mount names exactly that; a stick moved
to another port is one move with its subtree; volatile files never count;
a hostile snapshot's text is shown escaped; bad input is trouble (2).
Expectations come from the testbed and the events the test made."""
import json
import os
import subprocess

import pytest

from harness import CTL, DAEMON, Daemon, umockdev_env, has_devpath, own
from hotplug_util import KBD, STICK, TESTBED, blocks, devpath, drop_driver, under, wait_event, without
from volatile import is_volatile


def diff(*args):
    return subprocess.run([CTL, "diff", *map(str, args)], capture_output=True, text=True)


def save(mnt, out):
    r = subprocess.run([CTL, "-m", mnt, "save", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.fixture
def d(tmp_path):
    daemon = Daemon(without(tmp_path, KBD))
    yield daemon
    daemon.stop()


def place_of(d, path):
    """The path under root/ of the device at sysfs @path."""
    for top, dirs, files in os.walk(d.path("root")):
        if has_devpath(files):
            with open(own(top, "devpath")) as f:
                if f.read().strip() == path:
                    return os.path.relpath(top, d.path("root"))
    raise AssertionError(f"{path} is not in the mount")


def test_a_mount_equals_its_saves(d, tmp_path):
    a = tmp_path / "a.json"
    save(d.mnt, a)
    for pair in ((a, d.mnt), (d.mnt, a), (d.mnt, d.mnt)):
        r = diff(*pair)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.splitlines()[-1].startswith("# 0 added, 0 removed, 0 moved, 0 ")
    # driverfsd --save of the same testbed: the same tree
    b = tmp_path / "b.json"
    r = subprocess.run([DAEMON, "--save", str(b)], env=umockdev_env(d.testbed),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = diff("--json", a, b)
    assert r.returncode == 0, r.stdout
    doc = json.loads(r.stdout)
    assert doc["devices"] == {"added": [], "removed": [], "moved": []}
    assert doc["changes"] == doc["values"] == []
    assert doc["volatile_skipped"] > 0


def test_after_hotplug_the_diff_names_what_happened(d, tmp_path):
    before = tmp_path / "before.json"
    save(d.mnt, before)
    # a keyboard plugged in: its subtree added
    added = [b for b in blocks(TESTBED) if under(b, KBD)]
    for b in added:
        assert d.testbed.add_from_string(b + "\n")
        wait_event(d, "add", devpath(b))
    kbd = place_of(d, KBD)
    # a value changed, a volatile one too
    stick = place_of(d, STICK)
    d.testbed.set_attribute("/sys" + STICK, "serial", "NEWSERIAL0001\n")
    d.testbed.set_attribute("/sys" + STICK, "urbnum", "99999\n")
    d.testbed.uevent("/sys" + STICK, "change")
    wait_event(d, "change", STICK)
    # the stick's interface unbound from usb-storage
    # (the kernel's way: the driver link and DRIVER= go from sysfs)
    iface = STICK + "/" + os.path.basename(STICK) + ":1.0"
    drop_driver(d.testbed, iface)
    d.testbed.uevent("/sys" + iface, "unbind")
    wait_event(d, "unbind", iface)

    r = diff("--json", before, d.mnt)
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["devices"]["removed"] == [] and doc["devices"]["moved"] == []
    assert doc["devices"]["added"][0] == kbd
    assert len(doc["devices"]["added"]) == len(added)
    assert all(p == kbd or p.startswith(kbd + "/") for p in doc["devices"]["added"])
    assert {"path": stick, "name": "serial", "a": "4C530001230816115324",
            "b": "NEWSERIAL0001"} in doc["values"]
    assert not [v for v in doc["values"] if is_volatile(v["name"])]
    assert {"path": place_of(d, iface), "member": "kernel_driver", "a": "usb-storage",
            "b": None} in doc["changes"]
    # the text says the same, the keyboard as one subtree
    r = diff(before, d.mnt)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[:2] == [f"--- {before}", f"+++ {d.mnt}"]
    assert f"+ device root/{kbd} (and {len(added) - 1} below it)" in lines
    assert f'~ root/{stick}/serial: "4C530001230816115324" -> "NEWSERIAL0001"' in lines
    assert f'~ root/{place_of(d, iface)} kernel_driver: "usb-storage" -> (none)' in lines
    assert not any("urbnum" in x for x in lines)


def test_a_moved_stick_is_one_move(d, tmp_path):
    a = tmp_path / "a.json"
    save(d.mnt, a)
    doc = json.loads(a.read_text())
    stick = place_of(d, STICK)
    hub = os.path.dirname(stick)
    moved = os.path.join(os.path.dirname(hub), "1-1.4")
    n = 0
    for dev in doc["devices"]:
        if dev["path"] == stick or dev["path"].startswith(stick + "/"):
            dev["path"] = moved + dev["path"][len(stick):]
            n += 1
    b = tmp_path / "b.json"
    b.write_text(json.dumps(doc))
    r = diff("--json", a, b)
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert out["devices"]["moved"] == [{"from": stick, "to": moved, "below": n - 1}]
    assert out["devices"]["added"] == out["devices"]["removed"] == []
    assert out["values"] == out["changes"] == []
    r = diff(a, b)
    assert f"> device root/{stick} -> root/{moved} (and {n - 1} below it)" in r.stdout


def test_hostile_text_is_escaped_and_bad_input_is_trouble(d, tmp_path):
    a = tmp_path / "a.json"
    save(d.mnt, a)
    doc = json.loads(a.read_text())
    dev = doc["devices"][3]
    dev["values"]["evil"] = "x\x1b]0;owned\x07\ny"
    doc["buses"][0]["drivers"].append({"name": "bad\x1b[2J", "kind": "kernel",
                                       "priority": 0})
    b = tmp_path / "b.json"
    b.write_text(json.dumps(doc))
    r = diff(a, b)
    assert r.returncode == 1
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert f'+ root/{dev["path"]}/evil: "x\\x1b]0;owned\\x07\\ny"' in r.stdout
    assert "bad\\x1b[2J" in r.stdout
    # trouble: exit 2, the file named
    for bad, why in ((tmp_path / "missing.json", "no such file"),
                     ("garbage", "not a snapshot"),
                     ('{"format": "driverfs-snapshot", "devices": [{"path": 1}]}',
                      'devices[0]: no "path"'),
                     ('{"format": "driverfs-snapshot", "devices": [{"path": ""}, '
                      '{"path": ""}]}', "listed twice")):
        if isinstance(bad, str):
            f = tmp_path / "bad.json"
            f.write_text(bad)
            bad = f
        r = diff(a, bad)
        assert r.returncode == 2 and why in r.stderr and r.stdout == "", (bad, r.stderr)
    for args in ((a,), (a, a, a), ("--nope", a, a)):
        assert diff(*args).returncode == 2
