# SPDX-License-Identifier: LGPL-2.1-or-later
"""Values and names as real machines have them, on every testbed: the real
recordings (tests/testbeds/real/), the generated machines, and
tests/testbeds/values/values.umockdev, whose devices have what a value
rebuilt from libpci or libusb, or a name from the hwdb alone, gets wrong
(its README.md).

- Every file of a PCI function's, USB device's or USB interface's directory
  that sysfs has too reads as sysfs's file, byte for byte: driverfsd's
  static values (resource, vendor, bMaxPower, configuration, manufacturer,
  modalias ...) and the passed-through files alike. A value whose sysfs
  text ends in one newline is a static value of driverfsd's (its size is
  its length); the recordings' files that lost their newline are sysfs's.
- resource is the kernel's: 17 lines for a bridge with its windows, 13 with
  an SR-IOV function's VF BARs and a legacy IDE controller's one-byte ports.
- A USB device's name is what lsusb, run on the same testbed, prints after
  "ID vvvv:pppp ": hwdb names, else the device's own strings.
"""
import errno
import glob
import os
import re
import subprocess

import pytest

import test_testbeds

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED_DIR = os.path.join(HERE, "..", "testbeds")
VALUES = os.path.join(TESTBED_DIR, "values", "values.umockdev")
TESTBEDS = sorted(glob.glob(os.path.join(TESTBED_DIR, "*.umockdev")) +
                  glob.glob(os.path.join(TESTBED_DIR, "real", "*.umockdev"))) + [VALUES]

# driverfsd's own meaning for a sysfs name (docs/design.md §6.7), and PCI
# config, of which the tree shows the header only
NOT_SYSFS = {"name", "devpath", "power", "power_error", "power_log", "kernel_driver", "devnode",
             "config"}

# the values the PCI and USB sources set where sysfs has a file of the name
PCI_VALUES = ("vendor", "device", "class", "revision", "subsystem_vendor", "subsystem_device",
              "irq", "numa_node", "resource", "modalias")
USB_DEVICE_VALUES = ("idVendor", "idProduct", "bcdDevice", "version", "bDeviceClass",
                     "bDeviceSubClass", "bDeviceProtocol", "bMaxPacketSize0",
                     "bNumConfigurations", "busnum", "devnum", "speed", "bConfigurationValue",
                     "bNumInterfaces", "bmAttributes", "bMaxPower", "maxchild", "configuration",
                     "manufacturer", "product", "serial", "dev")
USB_INTERFACE_VALUES = ("bInterfaceNumber", "bAlternateSetting", "bInterfaceClass",
                        "bInterfaceSubClass", "bInterfaceProtocol", "bNumEndpoints", "modalias")


class Mounted(test_testbeds.Mounted):
    """A testbed mounted (its records, its sys/ directory, the daemon)."""

    def devices(self, *kinds):
        """(devpath, record, the directory in the mount) of each PCI function
        and USB device or interface ("pci", "usb_device", "usb_interface")."""
        for devpath, rec in sorted(self.records.items()):
            sub = rec["props"].get("SUBSYSTEM")
            kind = rec["props"].get("DEVTYPE") if sub == "usb" else sub
            if kind in kinds:
                place = os.path.realpath(self.d.path("bus", sub, "devices",
                                                     os.path.basename(devpath)))
                yield devpath, rec, place


@pytest.fixture(scope="module", params=TESTBEDS, ids=lambda p: os.path.relpath(p, TESTBED_DIR))
def tb(request):
    m = Mounted(request.param)
    yield m
    m.stop()


def read(path):
    """The bytes of @path, or the errno its read fails with."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return errno.errorcode.get(e.errno, e.errno)


def is_value_text(text):
    """Whether a sysfs text can be a static value as it is: it ends in one
    newline and holds no NUL (sysfs-value.h)."""
    return isinstance(text, bytes) and text.endswith(b"\n") and b"\0" not in text


def test_every_value_sysfs_has_reads_as_sysfs(tb):
    compared = static = 0
    for devpath, rec, place in tb.devices("pci", "usb_device", "usb_interface"):
        sysdir = tb.sys + devpath
        sub = rec["props"]["SUBSYSTEM"]
        kind = rec["props"].get("DEVTYPE") if sub == "usb" else sub
        values = {"pci": PCI_VALUES, "usb_device": USB_DEVICE_VALUES,
                  "usb_interface": USB_INTERFACE_VALUES}[kind]
        names = set(os.listdir(place))
        for v in values:
            if os.path.isfile(os.path.join(sysdir, v)):
                assert v in names, f"{devpath}: sysfs has {v}, the tree has not"
        for n in sorted(names - NOT_SYSFS):
            mine, theirs = os.path.join(place, n), os.path.join(sysdir, n)
            if os.path.islink(mine) or not os.path.isfile(mine) or not os.path.isfile(theirs):
                continue
            want, got = read(theirs), read(mine)
            assert got == want, f"{devpath}/{n}: sysfs has {want!r}, the tree {got!r}"
            compared += 1
            if n in values and is_value_text(want) and (n == "resource" or
                                                        b"\n" not in want[:-1]):
                # driverfsd holds it: a static value is as long as its text
                # (a passed-through file is a page, §6.6)
                assert os.stat(mine).st_size == len(want), \
                    f"{devpath}/{n}: not a static value of driverfsd's"
                static += 1
    if any(True for _ in tb.devices("pci", "usb_device")):
        assert compared and static


def resource_lines(tb, slot):
    devpath = next(p for p in tb.records if os.path.basename(p) == slot)
    text = read(tb.sys + devpath + "/resource")
    mine = tb.d.path("bus", "pci", "devices", slot, "resource")
    assert read(mine) == text, f"{slot}: resource is not sysfs's"
    assert os.stat(mine).st_size == len(text), f"{slot}: resource is no static value"
    return text.decode().splitlines()


@pytest.fixture(scope="module")
def values():
    """values.umockdev, for what it holds (its README.md)."""
    m = Mounted(VALUES)
    yield m
    m.stop()


def test_resource_is_the_kernels(values):
    tb = values
    bridge = resource_lines(tb, "0000:00:1c.0")
    assert len(bridge) == 17
    assert bridge[13:16] == [
        "0x0000000000002000 0x0000000000002fff 0x0000000000000100",
        "0x00000000e4000000 0x00000000e40fffff 0x0000000000000200",
        "0x00000000c0000000 0x00000000c03fffff 0x0000000000102201"], "the bridge windows"
    nic = resource_lines(tb, "0000:01:00.0")
    assert len(nic) == 13
    assert nic[7] == "0x00000000c0000000 0x00000000c001ffff 0x000000000014220c", "VF BAR0"
    assert nic[10] == "0x00000000c0020000 0x00000000c003ffff 0x000000000014220c", "VF BAR3"
    ide = resource_lines(tb, "0000:00:1f.1")
    assert len(ide) == 13
    assert ide[1] == "0x00000000000003f6 0x00000000000003f6 0x0000000000000110", "0x3f6"
    assert ide[3] == "0x0000000000000376 0x0000000000000376 0x0000000000000110", "0x376"


def lsusb_name(rest, vid, pid):
    """driverfsd's name of a device for which lsusb prints "ID vid:pid
    <rest>": rest is "<vendor> <product>"; where one half is empty the name
    is the other, without lsusb's blank, and where both are, the ids."""
    if not rest.strip():
        return f"Device {vid}:{pid}"
    if rest.startswith(" "):
        return rest[1:]
    if rest.endswith(" "):
        return rest[:-1]
    return rest


def test_usb_names_as_lsusb(tb):
    devs = list(tb.devices("usb_device"))
    if not devs:
        pytest.skip("no USB devices")
    r = subprocess.run(["umockdev-run", "-d", tb.file, "--", "lsusb"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    by_addr = {}
    for line in r.stdout.splitlines():
        m = re.match(r"Bus (\d+) Device (\d+): ID ([0-9a-f]{4}):([0-9a-f]{4}) (.*)$", line)
        assert m, line
        by_addr[(int(m.group(1)), int(m.group(2)))] = \
            (m.group(3), m.group(4), lsusb_name(m.group(5), m.group(3), m.group(4)))

    def ident(rec):
        a = rec["attrs"]
        return tuple(a.get(k, "").strip() for k in ("idVendor", "idProduct", "manufacturer",
                                                    "product"))

    def addr(rec):
        return int(rec["attrs"]["busnum"]), int(rec["attrs"]["devnum"])

    # a device lsusb does not list (no device node) has the name lsusb gives
    # a device with the same ids and strings
    listed = {ident(rec): by_addr[addr(rec)][2] for _, rec, _ in devs if addr(rec) in by_addr}
    for devpath, rec, place in devs:
        got = read(os.path.join(place, "name"))
        if addr(rec) in by_addr:
            vid, pid, want = by_addr.pop(addr(rec))
            assert (vid, pid) == ident(rec)[:2], devpath
        else:
            assert ident(rec) in listed, f"{devpath}: lsusb lists neither it nor its twin"
            want = listed[ident(rec)]
        assert got == (want + "\n").encode(), f"{devpath}: lsusb's name is {want!r}"
    assert not by_addr, f"lsusb lists devices the testbed has not: {by_addr}"


def test_a_device_libusb_does_not_list_is_filled_from_sysfs(values):
    tb = values
    # 1-6, the stick of 1-2 again, has no device node: lsusb lists 1-2 only
    r = subprocess.run(["umockdev-run", "-d", tb.file, "--", "lsusb", "-d", "346d:5678"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 1, "1-6 is listed: " + r.stdout
    dev = tb.d.path("bus", "usb", "devices", "1-6")
    assert read(os.path.join(dev, "name")) == b"USB DISK 3.2\n"
    # the USB source filled it and its interface: driverfsd's own value
    assert read(os.path.join(dev, "1-6:1.0", "altsetting")) == b"0\n"
