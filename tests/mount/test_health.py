# SPDX-License-Identifier: LGPL-2.1-or-later
"""Device health (issue 34 item 1, docs/design.md §6.10) on the server
testbed (tests/testbeds/server-2dom.umockdev: two root ports with PCIe
switches below, NVMe drives, NICs): each PCIe function's pcie_link/ tells
its link with both ends (an NVMe drive that can do 16 GT/s behind a switch
port that can do 8 is not degraded at 8), which end each function is told
by the classes up the tree; a link trained below what both
ends can do is "degraded", or "idle" when its lower end is runtime-suspended;
a device behind a degraded switch link names it as its bottleneck; and
driverfsctl health lists what is wrong (degraded links, AER counts, failed
PM hooks), exit status 3, or nothing and 0."""
import json
import os
import subprocess

import pytest

from harness import CTL, Daemon, aer_correctable

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "server-2dom.umockdev")
D0 = "/sys/devices/pci0000:00"
RP0 = D0 + "/0000:00:02.0"
US0 = RP0 + "/0000:01:00.0"
NVME0 = US0 + "/0000:02:08.0/0000:03:00.0"
CX5 = US0 + "/0000:02:10.0/0000:04:00.0"
D1 = "/sys/devices/pci0001:00"
DS1B = D1 + "/0001:00:02.0/0001:01:00.0/0001:02:01.0"
NVME1 = DS1B + "/0001:04:00.0"


@pytest.fixture
def d():
    daemon = Daemon(TESTBED)
    yield daemon
    daemon.stop()


def link(d, dev):
    p = d.path("bus", "pci", "devices", dev, "pcie_link")
    return {n: open(os.path.join(p, n)).read().strip()
            for n in ("speed", "width", "max_speed", "max_width", "state", "bottleneck")}


def health(d, *args):
    r = subprocess.run([CTL, "-m", d.mnt, "health", *args], capture_output=True, text=True,
                       timeout=60)
    return r.returncode, r.stdout, r.stderr


def test_links_told_with_both_ends(d):
    # the NVMe drive can do 16 GT/s x4, its switch port 8 GT/s x16: 8 x4 is
    # all this link can do
    assert open(d.path("bus", "pci", "devices", "0000:03:00.0", "max_link_speed")).read() \
        == "16.0 GT/s PCIe\n"
    assert link(d, "0000:03:00.0") == {
        "speed": "8.0 GT/s PCIe", "width": "4", "max_speed": "8.0 GT/s PCIe",
        "max_width": "4", "state": "ok", "bottleneck": "none"}
    # a LOM port that could do x4 in a x1 root port: not degraded either
    assert link(d, "0000:07:00.0")["state"] == "ok"
    assert link(d, "0000:07:00.0")["max_width"] == "1"
    # a switch's upstream port and the root port above it: one x16 link
    assert link(d, "0000:01:00.0")["max_width"] == "16"
    assert link(d, "0000:00:02.0")["max_width"] == "16"
    # what is not PCIe has no pcie_link/
    assert not os.path.exists(d.path("bus", "pci", "devices", "0000:00:1f.0", "pcie_link"))
    code, out, err = health(d)
    assert (code, out) == (0, ""), (code, out, err)


def test_a_degraded_link_and_what_is_behind_it(d):
    tb = d.testbed
    # the second NVMe drive's link trained at 2.5 GT/s (both ends say so)
    for dev in (NVME1, DS1B):
        tb.set_attribute(dev, "current_link_speed", "2.5 GT/s PCIe\n")
    got = link(d, "0001:04:00.0")
    assert got["state"] == "degraded" and got["speed"] == "2.5 GT/s PCIe", got
    assert got["bottleneck"] == "0001:04:00.0 2.5 GT/s x4 of 8.0 GT/s x4", got
    assert link(d, "0001:02:01.0")["state"] == "degraded"  # the port's side of it
    assert link(d, "0001:03:00.0")["state"] == "ok"  # its sibling's link is not
    # the first switch's uplink at x4 of x16: the drive and NICs below it are
    # fine themselves, their bottleneck is above them
    for dev in (US0, RP0):
        tb.set_attribute(dev, "current_link_width", "4\n")
    assert link(d, "0000:01:00.0")["state"] == "degraded"
    for dev in ("0000:03:00.0", "0000:04:00.0"):
        got = link(d, dev)
        assert got["state"] == "ok", got
        assert got["bottleneck"] == "0000:01:00.0 8.0 GT/s x4 of 8.0 GT/s x16", got
    # a link below its best while its device sleeps is power saving
    tb.set_attribute(NVME1, "power/runtime_status", "suspended\n")
    assert link(d, "0001:04:00.0")["state"] == "idle"
    assert link(d, "0001:04:00.0")["bottleneck"] == "none"
    # AER counts, in the kernel's format (real ones, raised with
    # aer_inject: the vm tier's tests/vm/guest/test_aer.sh, vm-aer)
    tb.set_attribute(CX5, "aer_dev_correctable", aer_correctable(RxErr=2, BadTLP=1))
    tb.set_attribute(CX5, "aer_dev_fatal", "Undefined 0\nDLP 0\nTOTAL_ERR_FATAL 0\n")

    code, out, err = health(d)
    assert code == 3, (code, out, err)
    lines = sorted(out.splitlines())
    assert "0000:01:00.0\tlink\t8.0 GT/s PCIe x4, both ends can do 8.0 GT/s PCIe x16" in lines
    assert "0000:03:00.0\tupstream\t0000:01:00.0 8.0 GT/s x4 of 8.0 GT/s x16" in lines
    assert "0000:04:00.0\taer\t3 correctable errors" in lines
    assert not any(l.startswith("0001:04:00.0\t") for l in lines), lines  # idle
    code, out, err = health(d, "--json")
    assert code == 3, err
    doc = {x["id"]: x for x in json.loads(out)}
    assert {"kind": "aer", "detail": "3 correctable errors"} in doc["0000:04:00.0"]["problems"]
    assert doc["0000:02:08.0"]["problems"] == [
        {"kind": "upstream", "detail": "0000:01:00.0 8.0 GT/s x4 of 8.0 GT/s x16"}]
    # DEV: that device and those below it
    code, out, err = health(d, "0000:02:10.0")
    assert code == 3 and all(l.split("\t")[0] in ("0000:02:10.0", "0000:04:00.0",
                                                   "0000:04:00.1")
                             for l in out.splitlines()), out
    code, out, err = health(d, "0000:00:1c.4")
    assert (code, out) == (0, ""), (code, out, err)


def test_a_device_whose_config_space_lies(d):
    """The link is told from sysfs's class and link files, never from the
    config space (the device's own bytes, whose reads a device can stall):
    a capability list that loops, or points outside the header, changes
    nothing."""
    tb = d.testbed
    cfg = bytearray(open(NVME1 + "/config", "rb").read())
    cfg[0x34] = 0x40
    cfg[0x40:0x42] = bytes([0x01, 0x40])  # a capability pointing at itself
    tb.set_attribute_binary(NVME1, "config", bytes(cfg))
    assert link(d, "0001:04:00.0")["state"] == "ok"
    cfg[0x41] = 0xff
    tb.set_attribute_binary(NVME1, "config", bytes(cfg))
    assert link(d, "0001:04:00.0")["max_width"] == "4"


def test_deferred_probes(d):
    """The kernel's deferred probes (debugfs's devices_deferred, which the
    testbed's sys/kernel/debug holds: umockdev's preload takes every path
    under /sys to the testbed) in the mount's devices_deferred and in
    health: a device of the tree by its name, with the reason its driver
    gave; one the tree does not have listed after them. Drivers' text:
    control characters and bytes past ASCII escaped, an overlong reason
    cut, an overlong name (no sysfs directory has one), a line with no tab
    (a reason's second line) and a last line the read's bound cut left
    out."""
    top = os.path.join(d.mnt, "devices_deferred")
    assert open(top).read() == ""  # debugfs not mounted: nothing known
    assert os.stat(top).st_mode & 0o777 == 0o400  # root only, as debugfs
    debug = os.path.join(d.testbed.get_root_dir(), "sys", "kernel", "debug")
    os.makedirs(debug, exist_ok=True)
    with open(os.path.join(debug, "devices_deferred"), "wb") as f:
        f.write(b"0000:03:00.0\tnvme: waiting for the \xe2\x80\x9cfirmware\xe2\x80\x9d\n"
                b"0001:04:00.0\t\n"
                b"spi-gone.0\tspi_gpio: supplier gpio-7 not ready\n"
                b"evil\x1b[2J\tdrv: \x07bell\x1b]0;title\x07 a\ttab\n"
                + b"n" * 300 + b"\tnvme: a name no sysfs directory has\n"
                b"second line of a reason\n"
                b"0000:07:00.0\t" + b"r" * 1000 + b"\n"
                b"0000:00:1f.0\tcut by the read's bound")
    want_file = ("0000:03:00.0\tnvme: waiting for the \\xe2\\x80\\x9cfirmware\\xe2\\x80\\x9d\n"
                 "0001:04:00.0\t\n"
                 "spi-gone.0\tspi_gpio: supplier gpio-7 not ready\n"
                 "evil\\x1b[2J\tdrv: \\x07bell\\x1b]0;title\\x07 a\\x09tab\n"
                 "0000:07:00.0\t" + "r" * 256 + "...\n")
    assert open(top).read() == want_file

    code, out, err = health(d)
    assert code == 3, (code, out, err)
    lines = out.splitlines()
    # the tree's devices in its order, then the rest by name
    assert sorted(lines[:3]) == sorted([
        "0000:03:00.0\tprobe\tdeferred: nvme: waiting for the "
        "\\xe2\\x80\\x9cfirmware\\xe2\\x80\\x9d",
        "0001:04:00.0\tprobe\tdeferred",
        "0000:07:00.0\tprobe\tdeferred: " + "r" * 256 + "..."]), lines
    assert lines[3:] == [
        "evil\\x1b[2J\tprobe\tdeferred: drv: \\x07bell\\x1b]0;title\\x07 a\\x09tab",
        "spi-gone.0\tprobe\tdeferred: spi_gpio: supplier gpio-7 not ready"], lines
    assert all(c == "\t" or " " <= c <= "~" for c in out.replace("\n", "")), out

    code, out, err = health(d, "--json")
    assert code == 3, err
    doc = {x["id"]: x for x in json.loads(out)}
    assert doc["0001:04:00.0"]["problems"] == [{"kind": "probe", "detail": "deferred"}]
    assert doc["0001:04:00.0"]["path"].endswith("/0001:04:00.0")
    assert doc["spi-gone.0"] == {
        "path": None, "id": "spi-gone.0",
        "problems": [{"kind": "probe",
                      "detail": "deferred: spi_gpio: supplier gpio-7 not ready"}]}
    assert "evil\\x1b[2J" in doc and not any(k.startswith("n" * 20) for k in doc), doc.keys()
    # DEV: that device and those below it; the devices the tree does not
    # have are no device's
    code, out, err = health(d, "0000:02:08.0")
    assert (code, out.splitlines()) == (3, [
        "0000:03:00.0\tprobe\tdeferred: nvme: waiting for the "
        "\\xe2\\x80\\x9cfirmware\\xe2\\x80\\x9d"]), (code, out, err)
    # the probes done: healthy again
    open(os.path.join(debug, "devices_deferred"), "wb").close()
    code, out, err = health(d)
    assert (code, out) == (0, ""), (code, out, err)
