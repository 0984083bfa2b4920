# SPDX-License-Identifier: LGPL-2.1-or-later
"""Class drivers and class/<class>/drivers/ (issue 21, docs/design.md §7.6),
on the USB tree testbed: each class lists the drivers of its devices' bus
parents as links <bus>:<driver>, exactly those the testbed's sysfs binds,
and follows a bind and an unbind; an exec driver with Class= drives the
class devices: a directory in its class's drivers/, a driver link from each
device it drives, its hooks run at the class device's place in the PM walk
(a disk's suspend before its controller's, its resume after, rolled back
when the controller refuses); --check-config refuses Bus= with Class= and a
driver with neither."""
import os
import subprocess
import tempfile

import pytest

from harness import DAEMON, Daemon, drivers_config
from hotplug_util import STICK, TESTBED
from test_binding import Kernel, write_once

HIDS = ["0003:05F3:0007.0001", "0003:05F3:0007.0002"]
HID_PARENTS = ["/devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1.2/1-1.2.1/1-1.2.1:1.0",
               "/devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1.2/1-1.2.1/1-1.2.1:1.1"]


def expected(sys_root):
    """{class: {"<bus>:<driver>"}} from the testbed's sysfs: for each class
    device, the driver of the nearest device at or above it that is on a
    bus (a device of no subsystem, such as ata1, is on the bus "sys" and
    has no driver: docs/design.md §6.1)."""
    out = {}
    classes = os.path.join(sys_root, "class")
    for cls in os.listdir(classes):
        want = set()
        for name in os.listdir(os.path.join(classes, cls)):
            d = os.path.realpath(os.path.join(classes, cls, name))
            while d.startswith(os.path.join(sys_root, "devices")):
                sub = os.path.join(d, "subsystem")
                if os.path.islink(sub) and "/bus/" in os.readlink(sub):
                    drv = os.path.join(d, "driver")
                    if os.path.islink(drv):
                        want.add(os.path.basename(os.readlink(sub)) + ":" +
                                 os.path.basename(os.readlink(drv)))
                    break
                if not os.path.islink(sub) and os.path.exists(os.path.join(d, "uevent")):
                    break  # on the bus "sys"
                d = os.path.dirname(d)
        out[cls] = want
    return out


def listed(mnt):
    """{class: {link names}} of the mount's class/<class>/drivers/, each
    link checked to lead to its bus driver's directory."""
    out = {}
    for cls in os.listdir(os.path.join(mnt, "class")):
        top = os.path.join(mnt, "class", cls, "drivers")
        names = set()
        for name in os.listdir(top):
            path = os.path.join(top, name)
            if not os.path.islink(path):
                continue
            bus, drv = name.split(":", 1)
            assert os.readlink(path) == f"../../../bus/{bus}/drivers/{drv}", path
            assert os.path.isdir(path), path
            names.add(name)
        out[cls] = names
    return out


def test_class_drivers_lists_the_drivers_of_its_devices():
    d = Daemon(TESTBED)
    try:
        sys_root = os.path.join(d.testbed.get_root_dir(), "sys")
        want, got = expected(sys_root), listed(d.mnt)
        for cls in got:
            assert got[cls] == want.get(cls, set()), (cls, got[cls], want.get(cls))
        # the testbed's own: the disks' SCSI devices bound to sd, the HID
        # devices under the input and hidraw class devices to hid-generic
        assert "scsi:sd" in got["block"], got["block"]
        assert "hid:hid-generic" in got["hidraw"] and "hid:hid-generic" in got["input"]
        assert sum(len(v) for v in got.values()) >= 4
        # a name that is not there, and one of another class
        assert not os.path.lexists(d.path("class", "block", "drivers", "hid:hid-generic"))
        assert not os.path.lexists(d.path("class", "block", "drivers", "nosuch:x"))
    finally:
        d.stop()


def test_class_drivers_are_found_once_per_change():
    # issue 30 item 3c: the names of class/<class>/drivers/ are looked up
    # at each access (the kernel keeps none: they follow bindings the
    # notifier does not follow name by name), and each lookup walked the
    # class's devices to find them; now they are found once per change of
    # the model and kept (the daemon counts it: "class/*/drivers/ N
    # times" in its log at exit). test_class_drivers_follows_an_unbind_and_a_bind
    # shows a change seen at once.
    d = Daemon(TESTBED)
    try:
        link = d.path("class", "block", "drivers", "scsi:sd")
        for _ in range(50):
            assert os.readlink(link) == "../../../bus/scsi/drivers/sd"
            assert os.path.isdir(link)
            assert not os.path.lexists(d.path("class", "block", "drivers", "nosuch:x"))
        built, = d.counted_at_exit(r"class/\*/drivers/ (\d+) times",
                                   "the class drivers' lists it builds")
        # once or so: the old code walked the class at each of the 150
        # lookups
        assert built <= 3, built
    finally:
        d.stop()


def add_hid_drivers(root):
    """The HID bus's bind and unbind files (the testbed has them for
    hid-generic) as kbind expects them."""
    drv = os.path.join(root, "sys/bus/hid/drivers/hid-generic")
    os.makedirs(drv, exist_ok=True)
    for f in ("bind", "unbind"):
        open(os.path.join(drv, f), "a").close()


def test_class_drivers_follows_an_unbind_and_a_bind(tmp_path):
    k = Kernel(str(tmp_path))
    d = Daemon(TESTBED, prepare=add_hid_drivers,
               extra_env=k.env("hid-generic=" + " ".join(HIDS)))
    k.serve(d)
    try:
        top = d.path("class", "hidraw", "drivers")
        assert "hid:hid-generic" in os.listdir(top)  # listed, and kept by the kernel
        drv = d.path("bus", "hid", "drivers", "hid-generic")
        # one unbound: the other HID device still has it
        assert write_once(os.path.join(drv, "unbind"), HIDS[0]) == 0
        d.wait_status(lambda line: line.startswith(
            f"STATUS=hotplug unbind {HID_PARENTS[0]}/{HIDS[0]} "))
        assert "hid:hid-generic" in os.listdir(top)
        # both: gone from hidraw's and input's
        assert write_once(os.path.join(drv, "unbind"), HIDS[1]) == 0
        d.wait_status(lambda line: line.startswith(
            f"STATUS=hotplug unbind {HID_PARENTS[1]}/{HIDS[1]} "))
        assert "hid:hid-generic" not in os.listdir(top)
        assert not os.path.lexists(os.path.join(top, "hid:hid-generic"))
        assert "hid:hid-generic" not in os.listdir(d.path("class", "input", "drivers"))
        # bound again: back
        assert write_once(os.path.join(drv, "bind"), HIDS[1]) == 0
        d.wait_status(lambda line: line.startswith(
            f"STATUS=hotplug bind {HID_PARENTS[1]}/{HIDS[1]} "))
        assert "hid:hid-generic" in os.listdir(top)
        assert os.path.islink(os.path.join(top, "hid:hid-generic"))
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()


HOOK = """#!/bin/sh
# $1: the log file; $2: the action
echo "$2 $(basename "$DEVPATH") $DRIVER" >> "$1"
[ -e "$1.fail.$2.$(basename "$DEVPATH")" ] && exit 1
exit 0
"""


def class_config(tmp):
    """drivers.d: a class driver of the stick's disk and partition (block
    devices 8:16 and 8:17), a bus driver of the USB stick; both log their
    hooks."""
    hook = os.path.join(tmp, "hook.sh")
    with open(hook, "w") as f:
        f.write(HOOK)
    os.chmod(hook, 0o755)
    log = os.path.join(tmp, "log")
    config = drivers_config(tmp, {"10-disk-flush.conf": f"""[Driver]
Name=disk-flush
Class=block
[Match]
dev=8:1?
[Hooks]
Suspend={hook} {log} suspend
Resume={hook} {log} resume
""", "20-stick.conf": f"""[Driver]
Name=stick
Bus=usb
[Match]
idVendor=0781
[Hooks]
Suspend={hook} {log} suspend
Resume={hook} {log} resume
"""})
    return config, log


def lines(log):
    with open(log) as f:
        return f.read().splitlines()


def test_a_class_driver_suspends_before_the_controller_and_resumes_after():
    with tempfile.TemporaryDirectory(prefix="driverfs-class-") as tmp:
        config, log = class_config(tmp)
        d = Daemon(TESTBED, ["--config", config])
        try:
            stick = d.path("root", *STICK.split("/")[2:])
            disks = {}
            for top, dirs, files in os.walk(stick):
                if os.path.basename(top) in ("sdb", "sdb1"):
                    disks[os.path.basename(top)] = top
            assert set(disks) == {"sdb", "sdb1"}, disks
            # the directory of the class driver, and the driver link of each
            # class device it drives
            cdir = d.path("class", "block", "drivers", "disk-flush")
            assert os.path.isdir(cdir) and not os.path.islink(cdir)
            with open(os.path.join(cdir, "kind")) as f:
                assert f.read() == "user\n"
            with open(os.path.join(cdir, "priority")) as f:
                assert f.read() == "100\n"
            assert sorted(x for x in os.listdir(cdir) if x not in ("kind", "priority")) == \
                ["sdb", "sdb1"]
            for name, top in disks.items():
                assert os.path.samefile(os.path.join(top, "driver"), cdir)
                assert os.readlink(os.path.join(top, "driver")).endswith(
                    "class/block/drivers/disk-flush")
            # the fixed disk is not its
            assert not os.path.lexists(os.path.join(cdir, "sda"))
            # driverfsctl says which
            out = subprocess.run([os.environ.get("DRIVERFSCTL", "driverfsctl"), "-m", d.mnt,
                                  "info", os.path.relpath(disks["sdb"], d.path("root"))],
                                 capture_output=True, text=True)
            assert "disk-flush (class driver)" in out.stdout, out.stdout + out.stderr
            out = subprocess.run([os.environ.get("DRIVERFSCTL", "driverfsctl"), "-m", d.mnt,
                                  "dot"], capture_output=True, text=True)
            assert "class driver disk-flush" in out.stdout, out.stderr
            with open(d.path("metrics")) as f:
                assert 'driverfsd_class_driver_devices{class="block",driver="disk-flush"} 2\n' \
                    in f.read()

            with open(os.path.join(stick, "power"), "w") as f:
                f.write("suspend")
            got = lines(log)
            assert got[:3] == ["suspend sdb1 disk-flush", "suspend sdb disk-flush",
                               "suspend 1-1.2.3 stick"], got
            with open(os.path.join(disks["sdb"], "power")) as f:
                assert f.read() == "suspended\n"
            os.truncate(log, 0)
            with open(os.path.join(stick, "power"), "w") as f:
                f.write("resume")
            assert lines(log) == ["resume 1-1.2.3 stick", "resume sdb disk-flush",
                                  "resume sdb1 disk-flush"], \
                lines(log)

            # the controller refuses: the disks it suspended first are resumed
            os.truncate(log, 0)
            open(log + ".fail.suspend.1-1.2.3", "w").close()
            assert write_once(os.path.join(stick, "power"), "suspend") != 0
            assert lines(log) == ["suspend sdb1 disk-flush", "suspend sdb disk-flush",
                                  "suspend 1-1.2.3 stick", "resume sdb disk-flush",
                                  "resume sdb1 disk-flush"], lines(log)
            for top in disks.values():
                with open(os.path.join(top, "power")) as f:
                    assert f.read() == "on\n"
        finally:
            d.stop()


def test_class_drivers_are_saved_and_served_from_a_snapshot():
    """driverfsd --save with a class driver, served by --snapshot: the class
    driver's directory, its devices and their driver links, the bus drivers'
    links; driverfsctl save of either mount writes the same bytes."""
    import json
    from gi.repository import UMockdev
    from harness import umockdev_env
    with tempfile.TemporaryDirectory(prefix="driverfs-class-") as tmp:
        config, log = class_config(tmp)
        first, second = os.path.join(tmp, "1.json"), os.path.join(tmp, "2.json")
        tb = UMockdev.Testbed.new()
        assert tb.add_from_file(TESTBED)
        r = subprocess.run([DAEMON, "--config", config, "--save", first],
                           env=umockdev_env(tb), capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        with open(first) as f:
            doc = json.load(f)
        block = [c for c in doc["classes"] if c["name"] == "block"][0]
        assert block["drivers"] == [{"name": "disk-flush", "kind": "user", "priority": 100}]
        assert all("drivers" not in c for c in doc["classes"] if c["name"] != "block")
        assert {dv["path"].rsplit("/", 1)[1] for dv in doc["devices"]
                if dv.get("driver") == "disk-flush"} == {"sdb", "sdb1"}
        snap = Daemon(None, ["--snapshot", first])
        try:
            cdir = snap.path("class", "block", "drivers", "disk-flush")
            assert sorted(x for x in os.listdir(cdir) if x not in ("kind", "priority")) == \
                ["sdb", "sdb1"]
            assert os.path.islink(snap.path("class", "block", "drivers", "scsi:sd"))
            r = subprocess.run([os.environ.get("DRIVERFSCTL", "driverfsctl"), "-m", snap.mnt,
                                "save", second], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
        finally:
            snap.stop()
        with open(first, "rb") as a, open(second, "rb") as b:
            assert a.read() == b.read()


@pytest.mark.parametrize("keys,message", [
    ("Bus=usb\nClass=block\n", "has both Bus= (line 3) and Class="),
    ("", "has neither Bus= nor Class="),
])
def test_check_config_refuses_bus_with_class_and_neither(keys, message):
    with tempfile.TemporaryDirectory(prefix="driverfs-class-") as tmp:
        config = drivers_config(tmp, {"10-x.conf": "[Driver]\nName=x\n" + keys}, "")
        conf = os.path.join(tmp, "drivers.d", "10-x.conf")
        r = subprocess.run([DAEMON, "--check-config", "--config", config],
                           capture_output=True, text=True)
        assert r.returncode != 0
        assert conf + ":" in r.stderr and message in r.stderr, r.stderr


def test_the_shipped_class_driver_examples_are_valid():
    """contrib/drivers.d's class driver examples, copied to names that are
    read, pass --check-config."""
    import shutil
    contrib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "contrib",
                           "drivers.d")
    with tempfile.TemporaryDirectory(prefix="driverfs-class-") as tmp:
        os.mkdir(os.path.join(tmp, "drivers.d"))
        for name in ("60-disk-flush.conf.example", "61-netif-down.conf.example"):
            shutil.copy(os.path.join(contrib, name),
                        os.path.join(tmp, "drivers.d", name[:-len(".example")]))
        config = os.path.join(tmp, "driverfsd.conf")
        open(config, "w").close()
        r = subprocess.run([DAEMON, "--check-config", "--config", config],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
