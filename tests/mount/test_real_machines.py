# SPDX-License-Identifier: LGPL-2.1-or-later
"""The tree of real machines that are not this VM (issue 29, item 5);
against a running kernel's sysfs: the vm tier's tests/vm/guest/test_tree.sh.

tests/testbeds/machines/ holds testbeds made from public recordings of real
machines: sysfs copies (a 2008 ThinkPad, a 2013 Dell server) and udev
database dumps (a 2023 HP laptop, an NVIDIA DGX Station); its README.md
says where each comes from, under which licence, and what was changed.
For each, through the mounted filesystem:

* every device of the testbed (every P: record) is in the tree exactly
  once, at root/<its path under /devices> with glue directories left out
  and clashes renamed (docs/design.md §6.2);
* bus/<bus>/devices/<sysname> (class/<class>/devices/ for a class device)
  resolves to that directory;
* PCI vendor/device/class and USB idVendor/idProduct read as in the testbed;
* driverfsd's `name` (driverfs:name where the kernel has a `name`) is what
  lspci -mm and lsusb, run on the same testbed, print;
* every file the testbed gives a device reads byte for byte as the
  testbed's sysfs file has it, under the kernel's name (docs/design.md §6.2;
  §6.7 for the files the tree leaves out and PCI `config`).

Checks that fail for one of the issue's known reasons are marked xfail
(strict) per machine, each with its reason; every other mismatch fails.
"""
import glob
import os
import re
import shutil
import subprocess

import pytest

from harness import own
from test_testbeds import Mounted

HERE = os.path.dirname(os.path.abspath(__file__))
MACHINE_DIR = os.path.join(HERE, "..", "testbeds", "machines")
MACHINES = sorted(os.path.basename(p)[:-len(".umockdev")]
                  for p in glob.glob(os.path.join(MACHINE_DIR, "*.umockdev")))

# files the tree leaves out (design §6.7, dm_sysfs_attr_policy())
LEFT_OUT = re.compile(r"^(legacy_io|legacy_mem|rom|vpd|resource[0-9].*)$")

# Known failures, by machine and check.  Each is strict: when the fix lands
# the test fails (XPASS) until its entry goes.
KNOWN = {}


def mark_known(request, m, check):
    """Marks the running test xfail (strict) when its check is known to fail
    on this machine: pytest honours an xfail mark added during the test."""
    reason = KNOWN.get((m.name, check))
    if reason:
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=reason))


def attribute_names(path):
    """{devpath: [name]}: every A: and H: attribute of each record of the
    testbed @path, with its path under the device directory (power/control,
    dax_region/align ...); names outside it ("../...") left out."""
    devices = {}
    cur = None
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            if line.startswith("P: "):
                cur = devices.setdefault(line[3:].rstrip("\n"), [])
            elif cur is not None and line[:3] in ("A: ", "H: "):
                name = line[3:].partition("=")[0]
                if not name.startswith("../"):
                    cur.append(name)
    return devices


class Machine(Mounted):
    """The daemon on a machine's testbed (test_testbeds.Mounted: the records,
    where each device is in the mount, sysfs's parent of a device)."""

    def __init__(self, name):
        self.name = name
        super().__init__(os.path.join(MACHINE_DIR, name + ".umockdev"))
        self.attributes = attribute_names(self.file)
        self._places = {}
        self._siblings = None

    def expected_place(self, devpath):
        """root/<this> is where the device @devpath (a record, or a device
        without subsystem such as pci0000:00 or ata1) belongs: under its
        parent's place, by its kernel name, a class device that shares its
        name with a sibling as <class>:<name> (design §6.2)."""
        if devpath not in self._places:
            parent = self.expected_parent(devpath)
            if parent is None:
                base = ""
            elif parent in ("/devices/system", "/devices/virtual"):
                base = parent.split("/")[2]
            else:
                base = self.expected_place(parent)
            name = os.path.basename(devpath)
            sub = self.subsystem(devpath) if devpath in self.records else None
            if sub and not self.is_bus(sub) and \
                    len(self.siblings().get((parent, name), ())) > 1:
                name = f"{sub}:{name}"
            self._places[devpath] = os.path.join(base, name)
        return self._places[devpath]

    def siblings(self):
        """{(parent devpath, name): [records]}: the clashes of §6.2."""
        if self._siblings is None:
            self._siblings = {}
            for p in self.records:
                key = (self.expected_parent(p), os.path.basename(p))
                self._siblings.setdefault(key, []).append(p)
        return self._siblings

    def testbed_bytes(self, devpath, name):
        with open(self.sys + devpath + "/" + name, "rb") as f:
            return f.read()


@pytest.fixture(scope="module", params=MACHINES)
def m(request):
    """The daemon on one machine's testbed, for all the checks of it (pytest
    orders the tests so that each machine's daemon starts once)."""
    machine = Machine(request.param)
    yield machine
    machine.stop()


def tool_output(m, tool):
    """What `lspci -D -mm` or `lsusb` prints on the machine's testbed: both
    run under one umockdev-run (loading a testbed of 10^3 devices takes
    seconds), kept for the machine's other tests."""
    if not hasattr(m, "tools"):
        r = subprocess.run(["umockdev-run", "-d", m.file, "--", "sh", "-c",
                            "lspci -D -mm || exit 1; echo @@@; lsusb || true"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        lspci, _, lsusb = r.stdout.partition("@@@\n")
        m.tools = {"lspci": lspci, "lsusb": lsusb}
    return m.tools[tool]


def report(problems, what):
    assert not problems, f"{len(problems)} {what}:\n" + "\n".join(problems[:60])


# ---- the tree ---------------------------------------------------------------

def test_every_device_once_in_its_place(request, m):
    mark_known(request, m, "place")
    problems = []
    for devpath in m.records:
        where = m.places.get(devpath, [])
        want = m.expected_place(devpath)
        if where != [want]:
            problems.append(f"{devpath}: expected at root/{want}, found at {where}")
    report(problems, "devices misplaced")


def test_bus_and_class_links(request, m):
    mark_known(request, m, "links")
    problems = []
    for devpath in m.records:
        sub = m.subsystem(devpath)
        kind = "bus" if m.is_bus(sub) else "class"
        link = m.d.path(kind, sub, "devices", os.path.basename(devpath))
        want = m.d.path("root", m.expected_place(devpath))
        got = os.path.realpath(link)
        if got != want:
            got = os.path.relpath(got, m.d.mnt) if os.path.lexists(link) else "nothing"
            problems.append(f"{kind}/{sub}/devices/{os.path.basename(devpath)}: "
                            f"expected -> root/{m.expected_place(devpath)}, got {got}")
    report(problems, "links wrong")


# ---- ids --------------------------------------------------------------------

def read(m, devpath, name, own_entry=False):
    """The file @name of the device @devpath (driverfsd's own entry of that
    name, wherever the kernel's names put it, with @own_entry)."""
    where = m.d.path("root", m.expected_place(devpath))
    try:
        with open(own(where, name) if own_entry else os.path.join(where, name), "rb") as f:
            return f.read()
    except OSError as e:
        return f"<{os.strerror(e.errno)}>".encode()


def test_pci_and_usb_ids(request, m):
    mark_known(request, m, "ids")
    problems = []
    checked = 0
    for devpath, rec in m.records.items():
        sub = m.subsystem(devpath)
        if sub == "pci":
            names = ("vendor", "device", "class")
        elif sub == "usb" and rec["props"].get("DEVTYPE") == "usb_device":
            names = ("idVendor", "idProduct")
        else:
            continue
        for n in names:
            want = m.testbed_bytes(devpath, n)
            got = read(m, devpath, n)
            checked += 1
            if got != want:
                problems.append(f"{devpath}/{n}: testbed {want!r}, mount {got!r}")
    assert checked
    report(problems, "ids differ")


# ---- names ------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("lspci") is None or shutil.which("lsusb") is None,
                    reason="needs lspci and lsusb")
def test_pci_names_as_lspci(request, m):
    mark_known(request, m, "pci-names")
    by_slot = {os.path.basename(p): p for p in m.records if m.subsystem(p) == "pci"}
    # names as lspci prints them without -nn: "Device 15b9" for a device
    # pci.ids does not know (with -nn it would be "Device [15b9]")
    out = tool_output(m, "lspci")
    problems = []
    seen = set()
    for line in out.splitlines():
        fields = re.findall(r'"([^"]*)"', line)
        slot = line.split()[0]
        want = f"{fields[1]} {fields[2]}"
        if slot not in by_slot:
            problems.append(f"{slot}: lspci shows it, the testbed has no record")
            continue
        seen.add(slot)
        got = read(m, by_slot[slot], "name", own_entry=True)
        if got != (want + "\n").encode():
            problems.append(f"{slot}: lspci {want!r}, mount {got!r}")
    missing = sorted(set(by_slot) - seen)
    if missing:
        problems.append(f"lspci does not show {missing}")
    report(problems, "PCI names differ")


@pytest.mark.skipif(shutil.which("lspci") is None or shutil.which("lsusb") is None,
                    reason="needs lspci and lsusb")
def test_usb_names_as_lsusb(request, m):
    mark_known(request, m, "usb-names")
    devs = {p: r for p, r in m.records.items()
            if m.subsystem(p) == "usb" and r["props"].get("DEVTYPE") == "usb_device"}
    if not devs:
        pytest.skip("no USB devices")
    by_addr = {(int(r["props"]["BUSNUM"]), int(r["props"]["DEVNUM"])): p
               for p, r in devs.items()}
    out = tool_output(m, "lsusb")
    problems = []
    seen = 0
    for line in out.splitlines():
        g = re.match(r"Bus (\d+) Device (\d+): ID ([0-9a-f]{4}):([0-9a-f]{4}) ?(.*)$", line)
        assert g, line
        devpath = by_addr[(int(g.group(1)), int(g.group(2)))]
        seen += 1
        want = g.group(5).strip()
        if not want:
            continue        # lsusb prints no name: nothing to compare
        got = read(m, devpath, "name", own_entry=True)
        if got != (want + "\n").encode():
            problems.append(f"{devpath} ({g.group(3)}:{g.group(4)}): lsusb {want!r}, "
                            f"mount {got!r}")
    if seen != len(devs):
        problems.append(f"lsusb shows {seen} devices, the testbed has {len(devs)}")
    report(problems, "USB names differ")


# ---- values -----------------------------------------------------------------

def config_header_size(data):
    """What sysfs gives a reader without CAP_SYS_ADMIN of a PCI config:
    64 bytes, 128 for a CardBus bridge (header type 2)."""
    return 128 if len(data) > 14 and data[14] & 0x7f == 2 else 64


def difference(want, got):
    """The first line where sysfs's bytes (@want) and the mount's differ."""
    wl, gl = want.split(b"\n"), got.split(b"\n")
    for i in range(max(len(wl), len(gl))):
        w = wl[i] if i < len(wl) else None
        g = gl[i] if i < len(gl) else None
        if w != g:
            where = f" (line {i + 1})" if len(wl) > 1 or len(gl) > 1 else ""
            return f"sysfs {want[:80]!r}, mount {got[:80]!r}" if not where else \
                f"sysfs{where} {w!r}, mount {g!r}"
    return f"sysfs {want[:80]!r}, mount {got[:80]!r}"


def attribute_problems(m, devpath):
    """Every file the testbed gives the device, read through the mount and
    compared with the testbed's sysfs file: a list of (name, mismatch)."""
    problems = []
    place = m.expected_place(devpath)
    sub = m.subsystem(devpath)
    for name in sorted(m.attributes.get(devpath, ())):
        parts = name.split("/")
        if parts[0] == "power" or parts[0] in ("driver", "subsystem"):
            continue        # the tree's pm/ and links (design §6.7)
        if not os.path.isfile(m.sys + devpath + "/" + name) or \
                os.path.islink(m.sys + devpath + "/" + name):
            continue        # a directory or link the record made
        if len(parts) > 1 and any(os.path.exists(m.sys + devpath + "/" +
                                                 "/".join(parts[:i]) + "/uevent")
                                  for i in range(1, len(parts))):
            continue        # a file of a device below (recorded through its parent)
        base = parts[-1]
        mount_name = name
        path = m.d.path("root", place, mount_name)
        if LEFT_OUT.match(base):
            if os.path.lexists(path):
                problems.append((name, f"{devpath}/{name}: shown, the tree leaves it out"))
            continue
        want = m.testbed_bytes(devpath, name)
        if name == "config" and sub == "pci":
            want = want[:config_header_size(want)]
        try:
            with open(path, "rb") as f:
                got = f.read()
        except OSError as e:
            problems.append((name, f"{devpath}/{name}: {os.strerror(e.errno)} at root/{place}/"
                                   f"{mount_name} (sysfs has {want[:60]!r})"))
            continue
        if got != want:
            problems.append((name, f"{devpath}/{name}: " + difference(want, got)))
    return problems


# The files of the value checks, in groups that fail for reasons of their
# own (KNOWN); "other" is every file no group takes.
FILE_GROUPS = {
    "pci-resource": lambda sub, name: sub == "pci" and name == "resource",
    "usb-bMaxPower": lambda sub, name: sub == "usb" and name == "bMaxPower",
    "usb-configuration": lambda sub, name: sub == "usb" and name == "configuration",
}


def file_group(sub, name):
    return next((g for g, f in FILE_GROUPS.items() if f(sub, name)), "other")


def file_problems(m):
    """{group: [mismatch]} over every device's files, taken once a machine."""
    if not hasattr(m, "file_problems"):
        m.file_problems = {}
        for devpath, rec in m.records.items():
            if devpath not in m.places:
                continue        # misplaced: test_every_device_once_in_its_place says so
            sub = m.subsystem(devpath)
            for name, problem in attribute_problems(m, devpath):
                m.file_problems.setdefault(file_group(sub, name), []).append(problem)
    return m.file_problems


@pytest.mark.parametrize("group", [*FILE_GROUPS, "other"])
def test_every_file_as_sysfs(request, m, group):
    mark_known(request, m, "files:" + group)
    report(file_problems(m).get(group, []), f"files ({group}) differ")
