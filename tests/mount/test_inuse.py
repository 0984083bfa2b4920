# SPDX-License-Identifier: LGPL-2.1-or-later
"""The in-use checks of a binding request (issue 17, docs/design.md §7.5):
before a device loses its driver, driverfsd lists what would break and
refuses (EBUSY), each reason a line of the report; force proceeds (logged),
a dry run lists them and writes nothing. On the USB tree testbed's SATA
controller: a partition mounted, one used as swap and held by an LVM volume
(a dm holder, itself mounted at /), and the disk's node held open by a
process; on the server testbed a NIC whose interface carries routes. Mounts,
swaps, routes and processes come from a proc root the test writes
(driverfsd --proc-root); the kernel is played by tests/helpers/kbind.c."""
import contextlib
import errno
import os
import re
import subprocess

from harness import Daemon
from test_binding import Kernel
from test_binding import request as binding_request
from test_modules import modules_dir
from test_security import as_nobody

HERE = os.path.dirname(__file__)
USB_TESTBED = os.path.join(HERE, "..", "testbeds", "usb-tree.umockdev")
SERVER_TESTBED = os.path.join(HERE, "..", "testbeds", "server-2dom.umockdev")
CTL = os.environ.get("DRIVERFSCTL", "driverfsctl")
SATA = "0000:00:17.0"
SATA_PLACE = "pci0000:00/" + SATA
SDA = "sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda"
NIC = "0000:07:00.0"
NIC_PLACE = "pci0000:00/0000:00:1c.4/" + NIC


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def add_lvm_and_stub(root):
    """An LVM volume dm-0 (vg-root) on sda2, and pci-stub loaded (the
    testbed has no IOMMU: no vfio-pci)."""
    dm = os.path.join(root, "sys/devices/virtual/block/dm-0")
    write(os.path.join(dm, "dev"), "254:0\n")
    write(os.path.join(dm, "dm/name"), "vg-root\n")
    os.makedirs(os.path.join(root, "sys/class/block"), exist_ok=True)
    if not os.path.lexists(os.path.join(root, "sys/class/block/dm-0")):
        os.symlink("../../devices/virtual/block/dm-0", os.path.join(root, "sys/class/block/dm-0"))
    holders = os.path.join(root, SDA, "sda2/holders")
    os.makedirs(holders)
    os.symlink(os.path.relpath(dm, holders), os.path.join(holders, "dm-0"))
    for name, place in (("sda2", os.path.join(root, SDA, "sda2")),):
        link = os.path.join(root, "sys/class/block", name)
        if not os.path.lexists(link):
            os.symlink(os.path.relpath(place, os.path.dirname(link)), link)
    add_driver(root, "pci-stub")
    open(os.path.join(root, "sys/bus/pci/drivers_probe"), "w").close()


def add_driver(root, name="vfio-pci"):
    drv = os.path.join(root, "sys/bus/pci/drivers", name)
    os.makedirs(drv)
    for f in ("bind", "unbind"):
        open(os.path.join(drv, f), "w").close()


def proc_root(tmp, mounts="", swaps="", route="", ipv6_route="", opened=()):
    proc = os.path.join(tmp, "proc")
    write(os.path.join(proc, "self/mountinfo"),
          "1 0 0:30 / /proc rw - proc proc rw\n" + mounts)
    write(os.path.join(proc, "swaps"), "Filename\tType\tSize\tUsed\tPriority\n" + swaps)
    write(os.path.join(proc, "net/route"),
          "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
          + route)
    write(os.path.join(proc, "net/ipv6_route"), ipv6_route)
    for pid, comm, node in opened:
        write(os.path.join(proc, str(pid), "comm"), comm + "\n")
        os.makedirs(os.path.join(proc, str(pid), "fd"), exist_ok=True)
        os.symlink(node, os.path.join(proc, str(pid), "fd", "3"))
    return proc


def request(d, place, text):
    return binding_request(d, text, place)


def report(d, place):
    with open(d.path("root", place, "binding")) as f:
        return f.read()


def driver_of(d, place):
    link = os.path.join(d.testbed.get_root_dir(), "sys/devices", place, "driver")
    return os.path.basename(os.readlink(link)) if os.path.lexists(link) else None



@contextlib.contextmanager
def served(tmp_path, proc, args=()):
    """The USB testbed served with @proc as /proc, its kernel played by
    test_binding's Kernel (ahci bound to the SATA controller)."""
    k = Kernel(str(tmp_path))
    d = Daemon(USB_TESTBED, ["--proc-root", proc, *args], prepare=add_lvm_and_stub,
               extra_env=k.env("ahci=0000:00:17.0"))
    k.serve(d)
    try:
        yield d
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()

def test_a_disk_in_use_is_refused_with_every_reason_and_force_proceeds(tmp_path):
    proc = proc_root(str(tmp_path),
                     mounts="29 1 254:0 / / rw,relatime - ext4 /dev/mapper/vg-root rw\n"
                            "30 29 8:1 / /boot rw,relatime - ext4 /dev/sda1 rw\n",
                     swaps="/dev/sda2                               partition\t999420\t0\t-2\n",
                     opened=[(4242, "qemu-system-x86", "/dev/sda")])
    with served(tmp_path, proc) as d:
        assert request(d, SATA_PLACE, "pci-stub") == errno.EBUSY
        r = report(d, SATA_PLACE)
        for reason in ("in use: sda1 is mounted at /boot",
                       "in use: dm-0 (vg-root, holding sda2) is mounted at /",
                       "in use: sda2 is used as swap",
                       "in use: dm-0 (vg-root, holding sda2)\n",
                       "in use: /dev/sda is open in process 4242 (qemu-system-x86)",
                       "refused: in use"):
            assert reason in r, r
        assert "plan:" not in r
        assert driver_of(d, SATA_PLACE) == "ahci"
        with open(os.path.join(d.testbed.get_root_dir(), "sys/devices", SATA_PLACE,
                               "driver_override")) as f:
            assert f.read() == "(null)\n"

        # a dry run: the reasons and the plan, nothing written, refused
        out = subprocess.run([CTL, "-m", d.mnt, "bind", "--dry-run", SATA, "pci-stub"],
                             capture_output=True, text=True)
        assert out.returncode == 1, out.stdout + out.stderr
        assert "in use: sda1 is mounted at /boot" in out.stdout
        assert "plan: unbind from ahci" in out.stdout and "nothing written" in out.stdout
        assert driver_of(d, SATA_PLACE) == "ahci"

        # forced: done, and the log says who forced what
        out = subprocess.run([CTL, "-m", d.mnt, "bind", "--force", SATA, "pci-stub"],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "forced: proceeding although in use" in out.stdout
        assert driver_of(d, SATA_PLACE) == "pci-stub"
        assert "root forced pci-stub past its in-use checks" in d.output()
        # back: nothing of the disk is bound now (its subtree stays in the
        # model until the kernel removes it), forced again
        assert request(d, SATA_PLACE, "default force") == 0
        assert driver_of(d, SATA_PLACE) == "ahci"


def test_driverfsctl_bind_shows_process_names_and_mount_points_escaped(tmp_path):
    """Any user names a process (prctl(PR_SET_NAME)) and, with a user mount,
    a mount point: the report quotes them as they are, driverfsctl shows
    them escaped (issue 30 item 2): ESC sequences, C0, DEL, C1 in UTF-8,
    bytes that are not UTF-8."""
    proc = proc_root(str(tmp_path),
                     mounts="30 1 8:1 / /mnt/\x1b]0;owned\x07\x7f\u009b rw,relatime - ext4 "
                            "/dev/sda1 rw\n",
                     opened=[(4242, "x", "/dev/sda")])
    with open(os.path.join(proc, "4242", "comm"), "wb") as f:
        f.write(b"q\x1b[2J\x01\xc2\x9b\x9b\xff\n")
    with served(tmp_path, proc) as d:
        out = subprocess.run([CTL, "-m", d.mnt, "bind", "--dry-run", SATA, "pci-stub"],
                             capture_output=True)
        assert out.returncode == 1, out.stdout + out.stderr
        bad = sorted({c for c in out.stdout if (c < 0x20 and c != 0x0a) or c >= 0x7f})
        assert bad == [], (bad, out.stdout)
        text = out.stdout.decode()
        assert "in use: sda1 is mounted at /mnt/\\x1b]0;owned\\x07\\x7f\\xc2\\x9b\n" in text, text
        assert "in use: /dev/sda is open in process 4242 " \
            "(q\\x1b[2J\\x01\\xc2\\x9b\\x9b\\xff)\n" in text, text
        assert driver_of(d, SATA_PLACE) == "ahci"


def test_a_process_name_makes_no_line_of_the_report(tmp_path):
    """A process may name itself with a newline: its name is no line of
    the report of its own (driverfsctl tells a failed step by its line)."""
    proc = proc_root(str(tmp_path), opened=[(4242, "x", "/dev/sda")])
    with open(os.path.join(proc, "4242", "comm"), "wb") as f:
        f.write(b"q\nfailed: probe\n")
    with served(tmp_path, proc) as d:
        out = subprocess.run([CTL, "-m", d.mnt, "bind", "--dry-run", SATA, "pci-stub"],
                             capture_output=True, text=True)
        assert out.returncode == 1, out.stdout + out.stderr
        assert "in use: /dev/sda is open in process 4242 (q?failed: probe)\n" in out.stdout, \
            out.stdout
        assert "\nfailed: " not in out.stdout, out.stdout
        assert "a step failed" not in out.stderr, out.stderr


def report_number(text):
    m = re.search(r"last request \(#(\d+)\):", text)
    return int(m.group(1)) if m else 0


def test_a_dry_run_names_every_reason_it_would_be_refused(tmp_path):
    """Issue 33 item 2: the plan a dry run shows names every reason, not the
    first: vfio-pci not loaded (and the module libkmod knows can be, in a
    modules directory made as test_modules makes it), the disk in use, no
    IOMMU group. A real request still stops at the first (bad input: no
    such driver, nothing changed, its report included)."""
    _, moddir = modules_dir(str(tmp_path), {"vfio_pci": [], "nvme": []}, {})
    proc = proc_root(str(tmp_path),
                     mounts="30 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n",
                     opened=[(4242, "qemu-system-x86", "/dev/sda")])
    with served(tmp_path, proc, ["--modules-dir", moddir]) as d:
        out = subprocess.run([CTL, "-m", d.mnt, "bind", "--dry-run", SATA, "vfio-pci"],
                             capture_output=True, text=True)
        assert out.returncode == 1, out.stdout + out.stderr
        for reason in ("refused: the bus has no driver vfio-pci (is its module loaded?)\n",
                       "module vfio_pci can be loaded: modprobe vfio-pci\n",
                       "in use: sda1 is mounted at /\n",
                       "in use: /dev/sda is open in process 4242 (qemu-system-x86)\n",
                       "refused: the device has no IOMMU group",
                       "plan: unbind from ahci\n"):
            assert reason in out.stdout, (reason, out.stdout)
        assert out.stdout.endswith("dry run: nothing written; refused: the bus has no driver "
                                   "vfio-pci, the device has no IOMMU group, in use "
                                   "(force passes in use alone)\n"), out.stdout
        assert "no kernel driver of that name on its bus" in out.stderr, out.stderr
        assert driver_of(d, SATA_PLACE) == "ahci"
        # the binding file says the same; the write's errno is the real
        # request's (no such driver comes first)
        before = report(d, SATA_PLACE)
        assert request(d, SATA_PLACE, "vfio-pci dry-run") == errno.EINVAL
        after = report(d, SATA_PLACE)
        assert report_number(after) == report_number(before) + 1, after
        assert "in use: sda1 is mounted at /\n" in after, after
        # a driver no module is known by
        assert request(d, SATA_PLACE, "no-such-driver dry-run") == errno.EINVAL
        r = report(d, SATA_PLACE)
        assert "refused: the bus has no driver no-such-driver" in r, r
        assert "no kernel module of that name or alias (libkmod)\n" in r, r
        assert "in use: sda1 is mounted at /\n" in r, r
        # a module that is loaded, and still no driver of the name
        write(os.path.join(d.testbed.get_root_dir(), "sys/module/nvme/initstate"), "live\n")
        assert request(d, SATA_PLACE, "nvme dry-run") == errno.EINVAL
        r = report(d, SATA_PLACE)
        assert "module nvme is loaded, but the bus has no driver nvme\n" in r, r
        # the real request: refused at the first reason, changing nothing
        before = report(d, SATA_PLACE)
        assert request(d, SATA_PLACE, "vfio-pci") == errno.EINVAL
        assert report(d, SATA_PLACE) == before
        out = subprocess.run([CTL, "-m", d.mnt, "bind", SATA, "vfio-pci"],
                             capture_output=True, text=True)
        assert out.returncode == 1 and out.stdout == "", out.stdout
        assert "no kernel driver of that name on its bus" in out.stderr, out.stderr
        assert driver_of(d, SATA_PLACE) == "ahci"


def test_only_root_reads_who_uses_a_device(tmp_path):
    """Issue 33 item 3: the in-use reasons name other users' processes (pid,
    command) and the daemon's mount points; the binding file, which anyone
    reads, gives them to a reader root opened it for alone, others reading
    that the device is in use. Even after a dry run."""
    proc = proc_root(str(tmp_path),
                     mounts="29 1 254:0 / /secret-root rw,relatime - ext4 /dev/mapper/vg-root rw\n"
                            "30 29 8:1 / /secret-boot rw,relatime - ext4 /dev/sda1 rw\n",
                     swaps="/dev/sda2                               partition\t999420\t0\t-2\n",
                     opened=[(4242, "secret-comm", "/dev/sda"), (4343, "other-comm", "/dev/sda")])
    with served(tmp_path, proc) as d:
        assert request(d, SATA_PLACE, "pci-stub dry-run") == errno.EBUSY
        place = d.path("root", SATA_PLACE, "binding")
        full = report(d, SATA_PLACE)
        theirs = as_nobody(lambda p: open(p).read(), place)
        for secret in ("4242", "4343", "secret-comm", "other-comm", "/secret-root",
                       "/secret-boot"):
            assert secret in full, (secret, full)
            assert secret not in theirs, (secret, theirs)
        for line in ("in use: sda1 is mounted (where: details for root only)\n",
                     "in use: dm-0 (vg-root, holding sda2) is mounted "
                     "(where: details for root only)\n",
                     "in use: /dev/sda is open in a process (which: details for root only)\n",
                     "in use: sda2 is used as swap\n",
                     "dry run: nothing written; refused: in use (force proceeds)\n"):
            assert line in theirs, (line, theirs)
        # one line for the two processes: not even how many
        assert theirs.count("is open in a process") == 1, theirs
        # the rest is the same text
        assert theirs.splitlines()[0] == full.splitlines()[0]
        assert report_number(theirs) == report_number(full)
        # a refused real request too
        assert request(d, SATA_PLACE, "pci-stub") == errno.EBUSY
        theirs = as_nobody(lambda p: open(p).read(), place)
        assert "secret" not in theirs and "4242" not in theirs, theirs
        assert "secret-comm" in report(d, SATA_PLACE)


def test_a_bad_protect_list_is_a_config_error(tmp_path):
    conf = os.path.join(str(tmp_path), "bad.conf")
    write(conf, "[Binding]\nProtect=nvme ../x\n")
    r = subprocess.run([os.environ["DRIVERFSD"], "--check-config", "-c", conf],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert f"{conf}:2: bad Protect '" in r.stderr, r.stderr


def test_a_nic_carrying_routes_is_refused(tmp_path):
    proc = proc_root(
        str(tmp_path),
        route="eno1\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
              "eno1\t0002A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n"
              "eno2\t0003A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n",
        ipv6_route="20010db8000000000000000000000000 40 00000000000000000000000000000000 00 "
                   "00000000000000000000000000000000 00000100 00000001 00000000 00000001"
                   "     eno1\n"
                   "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 "
                   "00000000000000000000000000000000 00000100 00000001 00000000 00000001"
                   "     eno2\n")
    conf = os.path.join(str(tmp_path), "driverfsd.conf")
    write(conf, "[Binding]\nProtect=0000:07:00.1 ast\n")
    d = Daemon(SERVER_TESTBED, ["--proc-root", proc, "-c", conf], prepare=add_driver)
    try:
        assert request(d, NIC_PLACE, "none dry-run") == errno.EBUSY
        r = report(d, NIC_PLACE)
        assert "in use: interface eno1 carries the default route" in r, r
        assert "in use: interface eno1 carries a route to 192.168.2.0/24" in r, r
        assert "in use: interface eno1 carries IPv6 routes" in r, r
        assert "eno2" not in r  # another function's interface
        assert "nothing written" in r
        # its sibling function's interface has a route too, but no default
        r2 = request(d, "pci0000:00/0000:00:1c.4/0000:07:00.1", "none dry-run")
        assert r2 == errno.EBUSY
        r2 = report(d, "pci0000:00/0000:00:1c.4/0000:07:00.1")
        assert "interface eno2 carries a route to 192.168.3.0/24" in r2
        # and it is protected by name (driverfsd.conf)
        assert "in use: 0000:07:00.1 is protected (driverfsd.conf, Protect=)" in r2

        # vfio-pci: the other function of its IOMMU group is bound to igb
        assert request(d, NIC_PLACE, "vfio-pci dry-run") == errno.EBUSY
        r = report(d, NIC_PLACE)
        assert "in use: IOMMU group 91: 0000:07:00.1 is bound to igb" in r, r
        # the VGA function's group companion is a bridge with no driver
        vga = "pci0000:00/0000:00:1c.0/0000:05:00.0/0000:06:00.0"
        # ... and its driver, ast, is protected
        assert request(d, vga, "vfio-pci dry-run") == errno.EBUSY
        r = report(d, vga)
        assert "IOMMU group" not in r and "plan: unbind from ast" in r, r
        assert "in use: its driver ast is protected (driverfsd.conf, Protect=)" in r, r
    finally:
        d.stop()


def test_a_whole_iommu_group_moves_together_and_rolls_back_together(tmp_path):
    """--group: the function's companion in IOMMU group 91 (the other igb
    function) moves to vfio-pci first, then the function; when the
    function's own move fails, the companion is put back too."""
    k = Kernel(str(tmp_path))

    def prepare(root):
        add_driver(root)
        open(os.path.join(root, "sys/bus/pci/drivers_probe"), "w").close()

    d = Daemon(SERVER_TESTBED, prepare=prepare,
               extra_env=k.env("igb=0000:07:00.0 0000:07:00.1"))
    k.serve(d)
    sibling = "pci0000:00/0000:00:1c.4/0000:07:00.1"

    def override(place):
        with open(os.path.join(d.testbed.get_root_dir(), "sys/devices", place,
                               "driver_override")) as f:
            return f.read()

    try:
        # the function's own override refused: the companion moved back
        k.refuse([(f"{NIC}/driver_override", errno.EPERM)])
        assert request(d, NIC_PLACE, "vfio-pci group") == errno.EPERM
        k.refuse([])
        r = report(d, NIC_PLACE)
        assert "group: 0000:07:00.1 (igb) to vfio-pci: done" in r, r
        assert "failed: driver_override" in r, r
        assert driver_of(d, NIC_PLACE) == "igb" and driver_of(d, sibling) == "igb"
        assert override(NIC_PLACE) == "(null)\n" and override(sibling) == "(null)\n"
        assert "group rollback of 0000:07:00.1 to igb: ok" in d.output()

        # and done
        out = subprocess.run([CTL, "-m", d.mnt, "bind", "--group", NIC, "vfio-pci"],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "group: 0000:07:00.1 (igb) to vfio-pci: done" in out.stdout
        assert driver_of(d, NIC_PLACE) == "vfio-pci" and driver_of(d, sibling) == "vfio-pci"
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()


NVME0_FN = "pci0000:00/0000:00:02.0/0000:01:00.0/0000:02:08.0/0000:03:00.0"
NVME1_FN = "pci0001:00/0001:00:02.0/0001:01:00.0/0001:02:01.0/0001:04:00.0"


def second_path_to_nvme1(root):
    """nvme-subsys1 reached through a second controller too (nvme5, a
    dual-ported drive's other port): its namespace outlives nvme1."""
    add_driver(root)
    subsys = os.path.join(root, "sys/devices/virtual/nvme-subsystem/nvme-subsys1")
    os.symlink(os.readlink(os.path.join(subsys, "nvme1")), os.path.join(subsys, "nvme5"))


def test_a_multipath_nvme_namespace_in_use_is_its_controllers(tmp_path):
    """With native NVMe multipath the namespaces (nvme0n1 and its
    partitions) sit in /devices/virtual/nvme-subsystem, not below the
    controller's function: they are its all the same, unless another
    controller also reaches them."""
    proc = proc_root(str(tmp_path),
                     mounts="40 1 259:2 / /data rw,relatime - xfs /dev/nvme0n1p2 rw\n"
                            "41 1 259:3 / /scratch rw,relatime - xfs /dev/nvme1n1 rw\n",
                     swaps="/dev/nvme0n1p1                          partition\t999420\t0\t-2\n",
                     opened=[(99, "fio", "/dev/nvme0n1")])
    d = Daemon(SERVER_TESTBED, ["--proc-root", proc], prepare=second_path_to_nvme1)
    try:
        for place in (NVME0_FN, "pci0000:00/0000:00:02.0"):
            assert request(d, place, "none dry-run") == errno.EBUSY, place
            r = report(d, place)
            for reason in ("in use: nvme0n1p2 (a multipath namespace of nvme0) is mounted at /data",
                           "in use: nvme0n1p1 (a multipath namespace of nvme0) is used as swap",
                           "in use: /dev/nvme0n1 is open in process 99 (fio)"):
                assert reason in r, (place, r)
            assert "nvme1n1" not in r, r
        # nvme1n1 is mounted, but nvme5 still reaches it
        assert request(d, NVME1_FN, "none dry-run") == 0
        assert "in use" not in report(d, NVME1_FN)
    finally:
        d.stop()
