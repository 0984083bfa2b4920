# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every testbed, checked the same way through the mounted filesystem:
placement (each device once, under its sysfs parent, named by the clash
rule), bus and class membership and links, interfaces and device nodes,
attribute values, and names and ids against lspci and lsusb run on the same
testbed. The testbeds are the generated machines in tests/testbeds/ and the
real recordings in tests/testbeds/real/. The vm tier's
tests/vm/guest/test_tree.sh (vm-tree) checks the same against a running
kernel's own sysfs, with lspci and lsusb run in its guest."""
import glob
import os
import re
import shutil
import subprocess

import pytest

from harness import Daemon, parse_testbed, has_devpath, own

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED_DIR = os.path.join(HERE, "..", "testbeds")
TESTBEDS = sorted(glob.glob(os.path.join(TESTBED_DIR, "*.umockdev")) +
                  glob.glob(os.path.join(TESTBED_DIR, "real", "*.umockdev")))

# files whose value driverfsd takes from the device as sysfs shows it
PCI_FILES = ("vendor", "device", "class", "revision", "subsystem_vendor", "subsystem_device",
             "irq")
USB_DEVICE_FILES = ("idVendor", "idProduct", "bcdDevice", "bDeviceClass", "bDeviceSubClass",
                    "bDeviceProtocol", "bNumConfigurations", "bConfigurationValue",
                    "bNumInterfaces", "busnum", "devnum", "speed", "maxchild", "version",
                    "bMaxPower", "manufacturer", "product", "serial")
USB_INTERFACE_FILES = ("bInterfaceNumber", "bAlternateSetting", "bInterfaceClass",
                       "bInterfaceSubClass", "bInterfaceProtocol", "bNumEndpoints")


class Mounted:
    def __init__(self, path):
        self.file = path
        self.records = parse_testbed(path)
        self.d = Daemon(path)
        self.sys = os.path.join(self.d.testbed.get_root_dir(), "sys")
        self.places = {}
        root = self.d.path("root")
        for top, dirs, names in os.walk(root):
            if has_devpath(names):
                with open(own(top, "devpath")) as f:
                    self.places.setdefault(f.read().strip(), []).append(
                        os.path.relpath(top, root))

    def is_bus(self, subsystem):
        return os.path.isdir(os.path.join(self.sys, "bus", subsystem))

    def subsystem(self, devpath):
        return self.records[devpath]["props"].get("SUBSYSTEM")

    def expected_parent(self, devpath):
        """devpath of the nearest ancestor with a uevent file, or the
        container ("/devices/system", "/devices/virtual"), or None (root)."""
        p = os.path.dirname(devpath)
        while p != "/devices":
            if os.path.exists(self.sys + p + "/uevent"):
                return p
            p = os.path.dirname(p)
        parts = devpath.split("/")
        if parts[2] in ("system", "virtual"):
            return "/devices/" + parts[2]
        return None

    def expected_name(self, devpath):
        name = os.path.basename(devpath)
        sub = self.subsystem(devpath)
        parent = self.expected_parent(devpath)
        clash = [p for p in self.records if p != devpath and os.path.basename(p) == name and
                 self.expected_parent(p) == parent]
        if clash and sub and not self.is_bus(sub):
            return f"{sub}:{name}"
        return name

    def read(self, *parts):
        with open(self.d.path(*parts)) as f:
            return f.read()

    def stop(self):
        self.d.stop()


@pytest.fixture(scope="module", params=TESTBEDS, ids=lambda p: os.path.basename(p))
def tb(request):
    m = Mounted(request.param)
    yield m
    m.stop()


def test_every_device_once_in_its_place(tb):
    for devpath in tb.records:
        where = tb.places.get(devpath, [])
        assert len(where) == 1, f"{devpath}: expected once in the tree, found at {where}"
        parent = tb.expected_parent(devpath)
        if parent is None:
            parent_place = ""
        elif parent in ("/devices/system", "/devices/virtual"):
            parent_place = parent.split("/")[2]
        else:
            assert len(tb.places.get(parent, [])) == 1, f"parent {parent} of {devpath} missing"
            parent_place = tb.places[parent][0]
        want = os.path.join(parent_place, tb.expected_name(devpath))
        assert where[0] == want, f"{devpath}: expected at root/{want}, got root/{where[0]}"


def test_every_link_resolves(tb):
    r = subprocess.run(["find", tb.d.mnt, "-xtype", "l"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout == "", "dangling links:\n" + r.stdout
    for top, dirs, names in os.walk(tb.d.mnt):
        for n in names:
            p = os.path.join(top, n)
            if os.path.islink(p):
                assert not os.readlink(p).startswith("/"), p
                assert os.path.realpath(p).startswith(tb.d.mnt + "/"), p


def test_bus_and_class_membership(tb):
    for devpath, rec in tb.records.items():
        place = tb.places[devpath][0]
        name = os.path.basename(place)
        sub = tb.subsystem(devpath)
        link = os.path.realpath(tb.d.path("root", place, "subsystem"))
        if tb.is_bus(sub):
            assert link == tb.d.path("bus", sub), f"{devpath}: subsystem -> {link}"
            member = tb.d.path("bus", sub, "devices", os.path.basename(devpath))
        else:
            assert link == tb.d.path("class", sub), f"{devpath}: subsystem -> {link}"
            member = tb.d.path("class", sub, "devices", os.path.basename(devpath))
        assert os.path.realpath(member) == tb.d.path("root", place), member
        driver = rec["props"].get("DRIVER")
        if driver and tb.is_bus(sub):
            assert os.path.realpath(tb.d.path("root", place, "driver")) == \
                tb.d.path("bus", sub, "drivers", driver), f"{devpath}: driver link"
            assert os.path.realpath(tb.d.path("bus", sub, "drivers", driver,
                                              os.path.basename(devpath))) == \
                tb.d.path("root", place)
        elif os.path.lexists(tb.d.path("root", place, "driver")):
            # no kernel driver: only a user driver may have it, and on PCI
            # that is pci-pm (for functions with the PM capability)
            assert sub == "pci" and os.path.realpath(tb.d.path("root", place, "driver")) == \
                tb.d.path("bus", "pci", "drivers", "pci-pm"), f"{devpath}: unexpected driver"
        del name


def test_device_nodes_and_interfaces(tb):
    for devpath, rec in tb.records.items():
        devname = rec["props"].get("DEVNAME")
        if not devname:
            continue
        place = tb.places[devpath][0]
        node = devname if devname.startswith("/") else "/dev/" + devname
        assert tb.read("root", place, "devnode") == node + "\n", devpath
        if "dev" in rec["attrs"]:
            # as sysfs has it: a recording that lost its newline shows that
            assert tb.read("root", place, "dev") == rec["attrs"]["dev"], devpath
        sub = tb.subsystem(devpath)
        if tb.is_bus(sub):
            continue
        devtype = rec["props"].get("DEVTYPE")
        iface = devtype or re.sub(r"[0-9]+$", "", os.path.basename(node))
        if not re.search(r"[A-Za-z]", iface):
            iface = sub  # a node named by numbers only, such as bsg/0:0:0:0
        kname = os.path.basename(devpath)
        ifaces = [i for i in os.listdir(tb.d.path("class", sub)) if i != "devices" and
                  os.path.lexists(tb.d.path("class", sub, i, kname))]
        assert ifaces == [iface], f"{devpath}: expected in class/{sub}/{iface}, got {ifaces}"


def test_attribute_values(tb):
    checked = 0
    for devpath, rec in tb.records.items():
        sub = tb.subsystem(devpath)
        if sub == "pci":
            files = PCI_FILES
        elif sub == "usb" and rec["props"].get("DEVTYPE") == "usb_device":
            files = USB_DEVICE_FILES
        elif sub == "usb" and rec["props"].get("DEVTYPE") == "usb_interface":
            files = USB_INTERFACE_FILES
        else:
            continue
        place = tb.places[devpath][0]
        for f in files:
            if f not in rec["attrs"]:
                continue
            # padding differs between kernel versions ("  2mA" before 4.x,
            # "2mA" now); the value is what must agree
            want = rec["attrs"][f].strip()
            got = tb.read("root", place, f).strip()
            assert got == want, f"{devpath}/{f}: testbed says {want!r}, mount says {got!r}"
            checked += 1
    has_ids = any(tb.subsystem(p) in ("pci", "usb") for p in tb.records)
    assert checked > 0 or not has_ids


def run_in_testbed(tb, *cmd):
    r = subprocess.run(["umockdev-run", "-d", tb.file, "--", *cmd], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.skipif(shutil.which("lspci") is None, reason="needs lspci")
def test_pci_names_and_ids_as_lspci(tb):
    funcs = [p for p in tb.records if tb.subsystem(p) == "pci"]
    if not funcs:
        pytest.skip("no PCI functions")
    out = run_in_testbed(tb, "lspci", "-D", "-mm", "-nn")
    seen = 0
    for line in out.splitlines():
        fields = re.findall(r'"([^"]*)"', line)
        slot = line.split()[0]
        vendor, device = fields[1], fields[2]
        vname, vid = re.match(r"(.*) \[([0-9a-f]{4})\]$", vendor).groups()
        dname, did = re.match(r"(.*) \[([0-9a-f]{4})\]$", device).groups()
        base = tb.d.path("bus", "pci", "devices", slot)
        # (each byte as sysfs has it: test_real_values.py)
        assert tb.read(base, "vendor").rstrip("\n") == f"0x{vid}"
        assert tb.read(base, "device").rstrip("\n") == f"0x{did}"
        assert tb.read(base, "name") == f"{vname} {dname}\n", slot
        seen += 1
    assert seen == len(funcs)


@pytest.mark.skipif(shutil.which("lsusb") is None, reason="needs lsusb")
def test_usb_names_and_ids_as_lsusb(tb):
    devs = {p: r for p, r in tb.records.items()
            if tb.subsystem(p) == "usb" and r["props"].get("DEVTYPE") == "usb_device"}
    if not devs:
        pytest.skip("no USB devices")
    out = run_in_testbed(tb, "lsusb")
    by_addr = {}
    for p, r in devs.items():
        by_addr[(int(r["attrs"]["busnum"]), int(r["attrs"]["devnum"]))] = tb.places[p][0]
    seen = 0
    for line in out.splitlines():
        m = re.match(r"Bus (\d+) Device (\d+): ID ([0-9a-f]{4}):([0-9a-f]{4}) ?(.*)$", line)
        assert m, line
        place = by_addr[(int(m.group(1)), int(m.group(2)))]
        assert tb.read("root", place, "idVendor").rstrip("\n") == m.group(3)
        assert tb.read("root", place, "idProduct").rstrip("\n") == m.group(4)
        if m.group(5):
            assert tb.read("root", place, "name") == m.group(5) + "\n", place
        seen += 1
    assert seen == len(devs)
