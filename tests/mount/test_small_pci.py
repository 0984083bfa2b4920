# SPDX-License-Identifier: LGPL-2.1-or-later
"""driverfsd on a small PCI system (tests/testbeds/small-pci.umockdev): a host
bridge, a PCI-to-PCI bridge with an NVMe behind it, an xHCI controller and a
NIC. Everything is checked through the mounted filesystem."""
import errno
import os
import signal
import subprocess

import pytest

from harness import Daemon, parse_testbed

HERE = os.path.dirname(__file__)
TESTBED = os.path.join(HERE, "..", "testbeds", "small-pci.umockdev")

# where each function must be, under root/
PLACES = {
    "0000:00:00.0": "pci0000:00/0000:00:00.0",
    "0000:00:14.0": "pci0000:00/0000:00:14.0",
    "0000:00:1c.0": "pci0000:00/0000:00:1c.0",
    "0000:01:00.0": "pci0000:00/0000:00:1c.0/0000:01:00.0",
    "0000:00:1f.6": "pci0000:00/0000:00:1f.6",
}
DRIVERS = {"0000:00:14.0": "xhci_hcd", "0000:00:1c.0": "pcieport",
           "0000:01:00.0": "nvme", "0000:00:1f.6": "e1000e"}


@pytest.fixture(scope="module")
def d():
    daemon = Daemon(TESTBED)
    yield daemon
    daemon.stop()


def read(path):
    with open(path) as f:
        return f.read()


def test_top_level(d):
    # the three views, and the whole system's files, where no device can be
    assert sorted(os.listdir(d.mnt)) == ["bindings", "bus", "class", "devices_deferred", "metrics",
                                         "name", "power", "power_error", "power_log", "root"]
    # root/ holds the devices at the top of the hierarchy and nothing else
    assert sorted(os.listdir(d.path("root"))) == ["pci0000:00"]
    assert sorted(os.listdir(d.path("bus"))) == ["pci", "sys"]
    assert read(d.path("power")) == "on\n"


def test_every_function_in_its_place(d):
    for slot, place in PLACES.items():
        p = d.path("root", place)
        assert os.path.isdir(p), f"{slot} expected at root/{place}"
    # and nothing else: the only PCI functions are the testbed's
    assert sorted(os.listdir(d.path("bus", "pci", "devices"))) == sorted(PLACES)
    # the bridge's child is not also at the top
    assert not os.path.exists(d.path("root", "pci0000:00", "0000:01:00.0"))


def test_bus_links_resolve_to_the_device(d):
    for slot, place in PLACES.items():
        link = d.path("bus", "pci", "devices", slot)
        target = os.readlink(link)
        assert not target.startswith("/"), f"{slot}: link must be relative, got {target}"
        assert target == "../../../root/" + place
        assert os.path.realpath(link) == d.path("root", place)
        assert read(os.path.join(link, "devpath")) == "/devices/" + place + "\n"


def test_ids_match_the_testbed(d):
    tb = parse_testbed(TESTBED)
    for slot, place in PLACES.items():
        attrs = tb["/devices/" + place]["attrs"]
        for f in ("vendor", "device", "class", "revision", "subsystem_vendor",
                  "subsystem_device", "irq"):
            got = read(d.path("root", place, f))
            assert got == attrs[f], f"{slot}/{f}: expected {attrs[f]!r}, got {got!r}"


def test_names_from_pci_ids(d):
    assert read(d.path("root", PLACES["0000:01:00.0"], "name")) == \
        "Intel Corporation SSD 660P Series\n"
    assert read(d.path("root", PLACES["0000:00:1f.6"], "name")) == \
        "Intel Corporation Ethernet Connection (7) I219-V\n"


def test_resource_from_libpci(d):
    # BAR0 of the NIC: 32-bit memory at a1000000, 128 KiB
    first = read(d.path("root", PLACES["0000:00:1f.6"], "resource")).split("\n")[0]
    assert first == "0x00000000a1000000 0x00000000a101ffff 0x0000000000040200"


def test_driver_links(d):
    for slot, drv in DRIVERS.items():
        dev = d.path("root", PLACES[slot])
        assert os.readlink(os.path.join(dev, "driver")).endswith("bus/pci/drivers/" + drv)
        assert os.path.realpath(os.path.join(dev, "driver")) == d.path("bus", "pci", "drivers", drv)
        back = d.path("bus", "pci", "drivers", drv, slot)
        assert os.path.realpath(back) == dev
    # the kernel's drivers, and the built-in user drivers, registered though
    # they drive nothing here
    assert sorted(os.listdir(d.path("bus", "pci", "drivers"))) == \
        sorted(list(DRIVERS.values()) + ["pci-pm", "vfio-pci"])
    # a driver's directory: its kind and probe priority, and links to what it drives
    for user in ("pci-pm", "vfio-pci"):
        assert sorted(os.listdir(d.path("bus", "pci", "drivers", user))) == ["kind", "priority"]
        with open(d.path("bus", "pci", "drivers", user, "kind")) as f:
            assert f.read() == "user\n"
        with pytest.raises(OSError) as e:
            with open(d.path("bus", "pci", "drivers", user, "priority"), "w") as f:
                f.write("1")
        assert e.value.errno in (errno.EACCES, errno.EPERM), e.value
    for drv in DRIVERS.values():
        with open(d.path("bus", "pci", "drivers", drv, "kind")) as f:
            assert f.read() == "kernel\n", drv
        with open(d.path("bus", "pci", "drivers", drv, "priority")) as f:
            assert f.read() == "0\n", drv
    # the host bridge has no kernel driver, and no PM capability for pci-pm
    assert not os.path.lexists(d.path("root", PLACES["0000:00:00.0"], "driver"))


def test_subsystem_links(d):
    dev = d.path("root", PLACES["0000:01:00.0"])
    assert os.readlink(os.path.join(dev, "subsystem")) == "../../../../bus/pci"
    # the host bridge container is on no kernel bus: the virtual bus "sys"
    host = d.path("root", "pci0000:00")
    assert os.path.realpath(os.path.join(host, "subsystem")) == d.path("bus", "sys")
    assert os.listdir(d.path("bus", "sys", "devices")) == ["pci0000:00"]


def test_walk_has_no_errors(d):
    errors = []
    files = 0
    for top, dirs, names in os.walk(d.mnt, onerror=errors.append):
        for n in names:
            p = os.path.join(top, n)
            if os.path.islink(p):
                assert os.path.exists(p), f"dangling link {p} -> {os.readlink(p)}"
                continue
            st = os.stat(p)
            if st.st_mode & 0o444:
                with open(p, "rb") as f:  # sysfs values may be binary
                    f.read()
                files += 1
    assert errors == []
    assert files > 5 * 10


def test_bad_writes_change_nothing(d):
    power = d.path("root", PLACES["0000:00:14.0"], "power")
    with pytest.raises(OSError) as e:
        with open(power, "w") as f:
            f.write("sleep\n")
    assert e.value.errno == errno.EINVAL
    assert read(power) == "on\n"
    vendor = d.path("root", PLACES["0000:00:14.0"], "vendor")
    with pytest.raises(OSError) as e:
        with open(vendor, "w") as f:
            f.write("0x1234\n")
    assert e.value.errno in (errno.EACCES, errno.EPERM)
    assert read(vendor) == "0x8086\n"
    with pytest.raises(OSError) as e:
        open(d.path("root", "newfile"), "w")
    assert e.value.errno == errno.EACCES
    with pytest.raises(OSError):
        os.chmod(power, 0o666)
    assert os.stat(power).st_mode & 0o777 == 0o644


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to another user")
def test_other_users_read_but_cannot_write(d):
    power = d.path("root", PLACES["0000:00:14.0"], "power")
    r = subprocess.run(["cat", d.path("root", PLACES["0000:00:14.0"], "vendor")],
                       user=65534, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "0x8086\n", r.stderr
    r = subprocess.run(["sh", "-c", f"echo suspend > {power}"], user=65534,
                       capture_output=True, text=True)
    assert r.returncode != 0 and "Permission denied" in r.stderr
    assert read(power) == "on\n"


def test_suspend_and_resume_a_subtree(d):
    bridge = d.path("root", PLACES["0000:00:1c.0"])
    nvme = d.path("root", PLACES["0000:01:00.0"])
    with open(os.path.join(bridge, "power"), "w") as f:
        f.write("suspend\n")
    assert read(os.path.join(bridge, "power")) == "suspended\n"
    assert read(os.path.join(nvme, "power")) == "suspended\n"
    assert read(d.path("root", PLACES["0000:00:14.0"], "power")) == "on\n"
    log = read(d.path("power_log")).splitlines()
    # children before parents: the NVMe and the bridge's secondary bus (the
    # pci_bus class device 0000:01), then the bridge
    assert [line.split()[:4] for line in log] == [
        ["1", "suspend", PLACES["0000:01:00.0"], "ok"],
        ["2", "suspend", PLACES["0000:00:1c.0"] + "/0000:01", "ok"],
        ["3", "suspend", PLACES["0000:00:1c.0"], "ok"],
    ]
    # resuming the child resumes its parent first
    with open(os.path.join(nvme, "power"), "w") as f:
        f.write("resume")
    log = read(d.path("power_log")).splitlines()
    assert [line.split()[1:3] for line in log] == [
        ["resume", PLACES["0000:00:1c.0"]], ["resume", PLACES["0000:01:00.0"]]]
    # the sibling the resume did not cover stays suspended
    assert read(os.path.join(bridge, "0000:01", "power")) == "suspended\n"
    assert read(os.path.join(bridge, "power")) == "on\n"


def test_mounted_as_driverfs(d):
    with open("/proc/self/mounts") as f:
        line = next(l for l in f if l.split()[1] == d.mnt)
    fsname, _, fstype, opts = line.split()[:4]
    assert fsname == "driverfs" and fstype == "fuse.driverfsd"
    assert "default_permissions" in opts.split(",")


def test_sigterm_unmounts_cleanly(testbed_path):
    d = Daemon(TESTBED)
    try:
        assert d.is_mounted()
        assert d.terminate(signal.SIGTERM) == 0, d.output()
        assert not d.is_mounted()
    finally:
        d.stop()


def test_fusermount_unmount_ends_the_daemon(testbed_path):
    d = Daemon(TESTBED)
    try:
        subprocess.run(["fusermount3", "-u", d.mnt], check=True)
        assert d.proc.wait(30) == 0, d.output()
        assert not d.is_mounted()
    finally:
        d.stop()


def test_pm_directory_passes_runtime_pm_controls_through(d):
    dev = d.path("root", PLACES["0000:00:14.0"], "pm")
    sysdir = os.path.join(d.testbed.get_root_dir(), "sys", "devices", PLACES["0000:00:14.0"],
                          "power")
    assert sorted(os.listdir(dev)) == sorted(
        f for f in ("control", "autosuspend_delay_ms", "wakeup", "runtime_status")
        if os.path.exists(os.path.join(sysdir, f)))
    with open(os.path.join(sysdir, "control")) as f:
        assert read(os.path.join(dev, "control")) == f.read()  # the testbed's "auto\n"
    with open(os.path.join(dev, "control"), "w") as f:
        f.write("on\n")
    with open(os.path.join(sysdir, "control")) as f:
        assert f.read() == "on"  # written through to sysfs, checked value
    with open(os.path.join(dev, "control"), "w") as f:
        f.write("auto\n")
    with open(os.path.join(sysdir, "control")) as f:
        assert f.read() == "auto"
    with pytest.raises(OSError) as e:
        with open(os.path.join(dev, "control"), "w") as f:
            f.write("sometimes\n")
    assert e.value.errno == errno.EINVAL
    with open(os.path.join(sysdir, "control")) as f:
        assert f.read() == "auto"  # unchanged
    # live: a change in sysfs shows at once
    with open(os.path.join(sysdir, "runtime_status"), "w") as f:
        f.write("suspended\n")
    assert read(os.path.join(dev, "runtime_status")) == "suspended\n"
    with pytest.raises(OSError):
        with open(os.path.join(dev, "runtime_status"), "w") as f:
            f.write("active\n")


def wait_unmounted(mnt, timeout=30):
    """Waits, on the kernel's mount-table change events, until @mnt is gone."""
    import select
    import time
    deadline = time.monotonic() + timeout
    with open("/proc/self/mountinfo") as f:
        p = select.poll()
        p.register(f, select.POLLPRI | select.POLLERR)
        while True:
            f.seek(0)
            if not any(line.split()[4] == mnt for line in f):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            p.poll(left * 1000)


def test_sigkill_leaves_no_dead_mount(testbed_path):
    d = Daemon(TESTBED)
    try:
        assert d.is_mounted()
        assert d.terminate(signal.SIGKILL) == -signal.SIGKILL
        assert wait_unmounted(d.mnt), "a dead mount was left behind"
        # and a new daemon serves the same mount point again
        d2 = Daemon(TESTBED, mnt=d.mnt)
        try:
            assert d2.is_mounted()
            assert os.path.isdir(d2.path("root", PLACES["0000:00:14.0"]))
        finally:
            d2.stop()
    finally:
        d.stop()


CTL = os.environ.get("DRIVERFSCTL", "driverfsctl")


def test_driverfsctl_list_is_the_global_order(d):
    listed = subprocess.run([CTL, "-m", d.mnt, "list"], capture_output=True, text=True,
                            check=True).stdout.split()
    assert listed[0] == "."
    for place in PLACES.values():
        assert place in listed
    # parents first, and exactly the order a whole-system walk takes:
    # a suspend dry run (of a system all on) goes backwards over the same list
    subprocess.run([CTL, "-m", d.mnt, "resume"], capture_output=True, check=True)
    dry = subprocess.run([CTL, "-m", d.mnt, "suspend", "--dry-run"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert [line.split()[2] for line in dry] == list(reversed(listed))
    for i, p in enumerate(listed[1:], 1):
        parent = os.path.dirname(p) or "."
        assert listed.index(parent) < i, f"{p} listed before its parent"


def test_driverfsctl_tree_shows_names_drivers_and_nesting(d):
    out = subprocess.run([CTL, "-m", d.mnt, "tree", "0000:00:1c.0"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[0].startswith(PLACES["0000:00:1c.0"] + "  ")
    nvme = [line for line in out if "0000:01:00.0" in line]
    assert nvme == ["`-- 0000:01:00.0  Intel Corporation SSD 660P Series  [nvme]"] or \
        nvme == ["|-- 0000:01:00.0  Intel Corporation SSD 660P Series  [nvme]"], out
    r = subprocess.run([CTL, "-m", d.mnt, "tree", "0000:99:00.0"], capture_output=True,
                       text=True)
    assert r.returncode == 1 and r.stderr == "driverfsctl: 0000:99:00.0: no such device (ENOENT)\n"


def test_driverfsctl_json(d):
    import json
    plain = subprocess.run([CTL, "-m", d.mnt, "list"], capture_output=True, text=True,
                           check=True).stdout.split()
    listed = json.loads(subprocess.run([CTL, "-m", d.mnt, "list", "--json"], capture_output=True,
                                       text=True, check=True).stdout)
    assert [e["path"] for e in listed] == plain
    nvme = next(e for e in listed if e["path"] == PLACES["0000:01:00.0"])
    assert nvme == {"path": PLACES["0000:01:00.0"], "name": "Intel Corporation SSD 660P Series",
                    "driver": "nvme", "power": "on"}
    host = next(e for e in listed if e["path"] == PLACES["0000:00:00.0"])
    assert host["driver"] is None
    tree = json.loads(subprocess.run([CTL, "-m", d.mnt, "tree", "0000:00:1c.0", "--json"],
                                     capture_output=True, text=True, check=True).stdout)
    assert tree["path"] == PLACES["0000:00:1c.0"] and tree["driver"] == "pcieport"
    kids = {c["path"]: c for c in tree["children"]}
    assert kids[PLACES["0000:01:00.0"]]["driver"] == "nvme"
    assert kids[PLACES["0000:01:00.0"]]["children"] == []


def test_every_kernel_driver_has_its_directory_bound_or_not(tmp_path):
    """A driver the kernel has on a bus with nothing bound to it (pci-stub,
    or vfio-pci before anything is handed to it) has its directory under
    bus/<bus>/drivers/ all the same, a kernel driver with no device links."""
    def add_driver(root):
        os.makedirs(os.path.join(root, "sys", "bus", "pci", "drivers", "pci-stub"))
        os.makedirs(os.path.join(root, "sys", "bus", "pci", "drivers", ".hidden"))
    daemon = Daemon(TESTBED, prepare=add_driver)
    try:
        drivers = os.listdir(daemon.path("bus", "pci", "drivers"))
        assert "pci-stub" in drivers and ".hidden" not in drivers
        for name in DRIVERS.values():
            assert name in drivers
        stub = daemon.path("bus", "pci", "drivers", "pci-stub")
        with open(os.path.join(stub, "kind")) as f:
            assert f.read() == "kernel\n"
        # and, a kernel driver's, bind and unbind (binding transactions)
        assert sorted(os.listdir(stub)) == ["bind", "kind", "priority", "unbind"]
    finally:
        daemon.stop()
