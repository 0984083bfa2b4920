# SPDX-License-Identifier: LGPL-2.1-or-later
"""A device's own sysfs attributes in its directory (issue 16): on the small
PCI testbed, every regular file of a function's sysfs directory is a file of
its directory in the tree with the same bytes, unless driverfsd has a file of
that name or leaves it out (docs/design.md §6.7); values are read at each open;
a root write reaches the sysfs file and the kernel's refusal (played by
tests/helpers/failwrite.c) comes back unchanged; other users cannot write;
an attribute the kernel adds shows after the device's change event.
sriov_numvfs written through the mount and the kernel's refusals of it
(EINVAL, ERANGE, ENOENT, EBUSY) are covered against Linux by the vm tier's
tests/vm/guest/test_sriov.sh (vm-sriov), whose ENOENT the failwrite case
here plays."""
import errno
import json
import os
import re
import subprocess

import pytest

from harness import CTL, Daemon, own
from hotplug_util import drop_driver
from test_security import as_nobody

HERE = os.path.dirname(__file__)
TESTBED = os.path.join(HERE, "..", "testbeds", "small-pci.umockdev")
XHCI = "pci0000:00/0000:00:14.0"
SYS_XHCI = "sys/devices/pci0000:00/0000:00:14.0"
# driverfsd's own files, whose names win over sysfs's
OWN = {"name", "devpath", "uevent", "modalias", "power", "power_error", "kernel_driver",
       "vendor", "device", "subsystem_vendor", "subsystem_device", "class", "revision", "irq",
       "resource", "numa_node", "dev", "devnode"}
# left out of the tree (src/buses/sysfs-attrs.c): memory-mapped or
# capability-limited files; added to the testbed here
LEFT_OUT = ("rom", "resource0", "resource2_wc")
# files that act when written: write-only ones (as sysfs has these) have
# nothing to show; a readable one (a console's bind) reads as in sysfs
ACTIONS = ("remove", "rescan", "reset")
# a PCI function's config space: 256 bytes, header type 0 at 0x0e
CONFIG = bytes(range(256))[:0x0e] + b"\x00" + bytes(range(0x0f, 256))
EBUSY_SUFFIX = "0000:00:14.0/d3cold_allowed"
# the kernel's ENOENT, which a PF without a driver answers to a write of its
# sriov_numvfs: the writer's too, not the ENODEV of a file gone (issue 32)
ENOENT_SUFFIX = "0000:00:14.0/sriov_numvfs"
FAIL_WRITES = f"{EBUSY_SUFFIX}={errno.EBUSY},{ENOENT_SUFFIX}={errno.ENOENT}"


def add_files(root):
    """The files a real function has and the generated testbed lacks, and
    one only root may read (as sysfs has some)."""
    for name in LEFT_OUT + ACTIONS:
        with open(os.path.join(root, SYS_XHCI, name), "w") as f:
            f.write("x\n")
    for name in ACTIONS:
        os.chmod(os.path.join(root, SYS_XHCI, name), 0o200)
    with open(os.path.join(root, SYS_XHCI, "bind"), "w") as f:
        f.write("1\n")
    os.makedirs(os.path.join(root, SYS_XHCI, "queue", "iosched"))
    for name, value in (("queue/scheduler", "none [mq-deadline]\n"),
                        ("queue/iosched/quantum", "4\n")):
        with open(os.path.join(root, SYS_XHCI, name), "w") as f:
            f.write(value)
    with open(os.path.join(root, SYS_XHCI, "config"), "wb") as f:
        f.write(CONFIG)
    with open(os.path.join(root, SYS_XHCI, "sriov_numvfs"), "w") as f:
        f.write("0\n")
    secret = os.path.join(root, SYS_XHCI, "root_only")
    with open(secret, "w") as f:
        f.write("secret\n")
    os.chmod(secret, 0o400)


@pytest.fixture(scope="module")
def d():
    daemon = Daemon(TESTBED, prepare=add_files, extra_env={
        "LD_PRELOAD": os.environ["DRIVERFS_FAILWRITE"],
        "DRIVERFS_FAIL_WRITES": FAIL_WRITES})
    yield daemon
    daemon.stop()


def sysfs(d, name):
    return os.path.join(d.testbed.get_root_dir(), SYS_XHCI, name)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_each_sysfs_file_is_there_with_its_bytes(d):
    listed = set(os.listdir(d.path("root", XHCI)))
    passed = 0
    for e in os.scandir(os.path.dirname(sysfs(d, "x"))):
        if not e.is_file(follow_symlinks=False) or e.name in LEFT_OUT + ACTIONS:
            continue
        assert e.name in listed, f"{e.name} of sysfs is missing from the device's directory"
        if e.name in OWN or e.name == "config":  # config: its own test
            continue
        assert read(d.path("root", XHCI, e.name)) == read(e.path), e.name
        passed += 1
    assert passed >= 8, "the testbed's function has its own attributes"
    for name in ("enable", "msi_bus", "local_cpulist", "power_state", "d3cold_allowed"):
        assert name in listed


def test_left_out_and_read_only_files(d):
    listed = set(os.listdir(d.path("root", XHCI)))
    for name in LEFT_OUT + ACTIONS:
        assert name not in listed, f"{name} must not be in the tree"
        with pytest.raises(FileNotFoundError):
            os.stat(d.path("root", XHCI, name))
    # a file that acts when written, readable in sysfs: its value, never
    # a write (as vtcon0/bind, 1)
    assert read(d.path("root", XHCI, "bind")) == b"1\n"
    assert os.stat(d.path("root", XHCI, "bind")).st_mode & 0o222 == 0
    with pytest.raises(PermissionError):
        with open(d.path("root", XHCI, "bind"), "w") as f:
            f.write("0")
    assert read(sysfs(d, "bind")) == b"1\n"
    # binding files are the binding work's: shown, never written here
    st = os.stat(d.path("root", XHCI, "driver_override"))
    assert st.st_mode & 0o222 == 0
    assert read(d.path("root", XHCI, "driver_override")) == b"(null)\n"


def test_pci_config_is_what_an_unprivileged_reader_gets(d):
    """sysfs gives a reader without CAP_SYS_ADMIN the header alone (64 bytes;
    128 for a CardBus bridge): every reader of the tree gets that, root too,
    since FUSE tells the daemon no capability; and no write reaches it."""
    p = d.path("root", XHCI, "config")
    assert read(p) == CONFIG[:64]
    assert os.stat(p).st_mode & 0o222 == 0
    assert as_nobody(lambda q: open(q, "rb").read().hex(), p) == CONFIG[:64].hex()
    with open(sysfs(d, "config"), "r+b") as f:
        f.seek(0x0e)
        f.write(b"\x02")  # a CardBus bridge's header
    try:
        assert read(p) == (CONFIG[:0x0e] + b"\x02" + CONFIG[0x0f:])[:128]
    finally:
        with open(sysfs(d, "config"), "wb") as f:
            f.write(CONFIG)


def test_modes_are_never_looser_than_sysfs(d):
    for e in os.scandir(os.path.dirname(sysfs(d, "x"))):
        p = d.path("root", XHCI, e.name)
        if e.name in OWN or e.name in LEFT_OUT + ACTIONS or \
                not e.is_file(follow_symlinks=False):
            continue
        mode = os.stat(p).st_mode & 0o777
        assert mode & ~(e.stat().st_mode & 0o777) == 0, (e.name, oct(mode))


def test_nobody_reads_no_more_than_sysfs_gives_nobody(d):
    def reads(paths):
        out = []
        for p in paths:
            try:
                with open(p, "rb") as f:
                    out.append(f.read().decode())
            except OSError as e:
                out.append(e.errno)
        return out

    # what sysfs would give nobody: the file's bytes where its mode lets
    # others read (the testbed's own directory is closed to nobody)
    names = ("root_only", "enable", "local_cpulist")
    theirs = []
    for n in names:
        with open(sysfs(d, n)) as f:
            value = f.read()
        theirs.append(value if os.stat(sysfs(d, n)).st_mode & 0o004 else errno.EACCES)
    mine = as_nobody(reads, [d.path("root", XHCI, n) for n in names])
    assert mine == theirs
    assert mine[0] == errno.EACCES
    with open(d.path("root", XHCI, "root_only"), "rb") as f:
        assert f.read() == b"secret\n"  # root reads it


def test_values_are_read_at_each_open(d):
    with open(sysfs(d, "local_cpulist"), "w") as f:
        f.write("0-3\n")
    assert read(d.path("root", XHCI, "local_cpulist")) == b"0-3\n"
    with open(sysfs(d, "local_cpulist"), "w") as f:
        f.write("0-7\n")
    assert read(d.path("root", XHCI, "local_cpulist")) == b"0-7\n"


def test_a_root_write_reaches_sysfs(d):
    with open(d.path("root", XHCI, "enable"), "w") as f:
        f.write("0\n")
    assert read(sysfs(d, "enable")) == b"0\n"
    assert read(d.path("root", XHCI, "enable")) == b"0\n"
    with open(d.path("root", XHCI, "enable"), "w") as f:
        f.write("1\n")
    assert read(sysfs(d, "enable")) == b"1\n"


def test_the_kernels_refusal_comes_back_and_nothing_changes(d):
    before = read(sysfs(d, "d3cold_allowed"))
    with pytest.raises(OSError) as e:
        with open(d.path("root", XHCI, "d3cold_allowed"), "w") as f:
            f.write("0\n")
    assert e.value.errno == errno.EBUSY
    assert read(sysfs(d, "d3cold_allowed")) == before
    assert read(d.path("root", XHCI, "d3cold_allowed")) == before


def test_the_kernels_enoent_comes_back_as_enoent(d):
    """A store's ENOENT is the kernel's answer while the file is there (a PF
    with no driver refusing sriov_numvfs, as the vm tier's test_sriov.sh
    sees), not a file gone under its writer (ENODEV, docs/design.md §6.5)."""
    with pytest.raises(OSError) as e:
        with open(d.path("root", XHCI, "sriov_numvfs"), "w") as f:
            f.write("1\n")
    assert e.value.errno == errno.ENOENT
    assert read(sysfs(d, "sriov_numvfs")) == b"0\n"


def test_other_users_cannot_write(d):
    def try_write(path):
        try:
            with open(path, "w") as f:
                f.write("0\n")
            return "written"
        except OSError as e:
            return e.errno

    assert as_nobody(try_write, d.path("root", XHCI, "enable")) == errno.EACCES
    assert read(sysfs(d, "enable")) == b"1\n"


def test_attribute_directories_nest(d):
    """queue/ and queue/iosched/ as sysfs has them; power/ is pm/ only."""
    top = d.path("root", XHCI)
    listed = os.listdir(top)
    assert "queue" in listed and "pm" in listed and "power" not in [
        n for n in listed if os.path.isdir(os.path.join(top, n))]
    assert sorted(os.listdir(os.path.join(top, "queue"))) == ["iosched", "scheduler"]
    assert os.listdir(os.path.join(top, "queue", "iosched")) == ["quantum"]
    assert read(os.path.join(top, "queue", "scheduler")) == b"none [mq-deadline]\n"
    assert read(os.path.join(top, "queue", "iosched", "quantum")) == b"4\n"
    with open(os.path.join(top, "queue", "iosched", "quantum"), "w") as f:
        f.write("8\n")
    assert read(sysfs(d, "queue/iosched/quantum")) == b"8\n"
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(top, "queue", "nothing"))
    with pytest.raises(FileNotFoundError):
        os.listdir(os.path.join(top, "queue", "nothing"))
    # found by name as well as by listing (a fresh lookup of each level)
    assert os.path.isdir(os.path.join(top, "queue", "iosched"))
    # what is found equals what sysfs has, all the way down
    found = {os.path.relpath(os.path.join(t, f), top)
             for t, _, fs in os.walk(os.path.join(top, "queue")) for f in fs}
    assert found == {"queue/scheduler", "queue/iosched/quantum"}


def test_an_attribute_the_kernel_adds_shows_after_the_change_event(d):
    assert "new_attr" not in os.listdir(d.path("root", XHCI))
    with open(sysfs(d, "new_attr"), "w") as f:
        f.write("42\n")
    d.testbed.uevent("/" + SYS_XHCI, "change")
    d.wait_status(lambda line: line.startswith(f"STATUS=hotplug change /devices/{XHCI} "))
    assert "new_attr" in os.listdir(d.path("root", XHCI))
    assert read(d.path("root", XHCI, "new_attr")) == b"42\n"
    os.unlink(sysfs(d, "new_attr"))
    d.testbed.uevent("/" + SYS_XHCI, "change")
    d.wait_status(lambda line: line.startswith(f"STATUS=hotplug change /devices/{XHCI} "))
    assert "new_attr" not in os.listdir(d.path("root", XHCI))


def test_a_group_a_binding_adds_shows_after_the_bind_event(d):
    """A driver's bind adds its attribute group (a directory of files); the
    bind event shows it at once, the unbind event takes it away."""
    group = sysfs(d, "driver_group")
    top = d.path("root", XHCI)
    assert "driver_group" not in os.listdir(top)
    os.mkdir(group)
    with open(os.path.join(group, "mode"), "w") as f:
        f.write("fast\n")
    d.testbed.uevent("/" + SYS_XHCI, "bind")
    d.wait_status(lambda line: line.startswith(f"STATUS=hotplug bind /devices/{XHCI} "))
    assert "driver_group" in os.listdir(top)
    assert os.listdir(os.path.join(top, "driver_group")) == ["mode"]
    assert read(os.path.join(top, "driver_group", "mode")) == b"fast\n"
    os.unlink(os.path.join(group, "mode"))
    os.rmdir(group)
    # the kernel's unbind, as it comes: the driver link and DRIVER= gone first
    # (an unbind uevent means no driver, whatever sysfs said: §9.1)
    rebind = drop_driver(d.testbed, "/" + SYS_XHCI[len("sys/"):])
    d.testbed.uevent("/" + SYS_XHCI, "unbind")
    d.wait_status(lambda line: line.startswith(f"STATUS=hotplug unbind /devices/{XHCI} "))
    assert "driver_group" not in os.listdir(top)
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(top, "driver_group"))
    # and bound again, as the tests after this one find it
    rebind()
    d.testbed.uevent("/" + SYS_XHCI, "bind")
    d.wait_status(lambda line: line.startswith(f"STATUS=hotplug bind /devices/{XHCI} "))
    assert read(os.path.join(top, "kernel_driver")) == b"xhci_hcd\n"


def device_files(top):
    """{path under @top: (bytes or read errno, mode)} of a device directory's
    files and attribute directories (not pm/, nor child devices, nor the
    binding control file, the serving daemon's state)."""
    out = {}
    for t, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if not (t == top and x == "pm") and
                   not os.path.isfile(os.path.join(t, x, "power"))]
        if t == top:
            files = [x for x in files if x != "binding"]
        for name in dirs + files:
            p = os.path.join(t, name)
            st = os.lstat(p)
            if os.path.islink(p) or os.path.isdir(p):
                out[os.path.relpath(p, top)] = (None, st.st_mode)
                continue
            try:
                value = read(p)
            except OSError as e:
                value = e.errno
            out[os.path.relpath(p, top)] = (value, st.st_mode)
    return out


def test_a_snapshot_keeps_binary_values_modes_and_directories(d, tmp_path):
    """driverfsd --save and driverfsctl save write the same file; its mount
    shows the function's files as the live mount did: config's header
    (binary), the root-only file with its mode, queue/iosched/ nested."""
    import subprocess
    from harness import CTL, DAEMON, umockdev_env
    saved, ctl_saved = tmp_path / "saved.json", tmp_path / "ctl.json"
    r = subprocess.run([DAEMON, "--save", str(saved)], env=umockdev_env(d.testbed),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([CTL, "-m", d.mnt, "save", str(ctl_saved)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert ctl_saved.read_text() == saved.read_text()
    live = device_files(d.path("root", XHCI))
    snap = Daemon(None, ["--snapshot", str(saved)])
    try:
        got = device_files(snap.path("root", XHCI))
    finally:
        snap.stop()
    assert got == live, sorted(k for k in set(got) | set(live) if got.get(k) != live.get(k))
    assert live["config"][0] == CONFIG[:64]
    assert live["root_only"][1] & 0o777 == 0o400
    assert live["queue/iosched/quantum"][0] in (b"4\n", b"8\n")


USB_TESTBED = os.path.join(HERE, "..", "testbeds", "usb-tree.umockdev")
KBD = "pci0000:00/0000:00:14.0/usb1/1-1/1-1.2/1-1.2.1"
KBD_INPUT = KBD + "/1-1.2.1:1.0/0003:05F3:0007.0001/input5"


def test_the_kernels_name_comes_first_and_driverfsds_file_moves_aside(tmp_path):
    """USB's devpath (a port chain) and an input device's name are the
    kernel's, under their names; driverfsd's devpath (the sysfs path) and
    name (its description) are beside them as driverfs:devpath and
    driverfs:name (docs/design.md §6.2). Names whose value driverfsd copies
    from sysfs (the per-bus values, dev, uevent) are one file."""
    daemon = Daemon(USB_TESTBED)
    try:
        sys_kbd = os.path.join(daemon.testbed.get_root_dir(), "sys/devices", KBD)
        kbd = daemon.path("root", KBD)
        listed = os.listdir(kbd)
        assert "driverfs:devpath" in listed and "devpath" in listed
        assert read(os.path.join(kbd, "devpath")) == read(os.path.join(sys_kbd, "devpath"))
        assert read(os.path.join(kbd, "devpath")) == b"1.2.1\n"
        assert read(os.path.join(kbd, "driverfs:devpath")) == f"/devices/{KBD}\n".encode()
        assert own(kbd, "devpath") == os.path.join(kbd, "driverfs:devpath")
        # a name the kernel does not use keeps its own name
        assert "power" in listed and "driverfs:power" not in listed
        for same in ("idVendor", "dev", "uevent"):
            assert same in listed and f"driverfs:{same}" not in listed, same
        for absent in ("driverfs:idVendor", "driverfs:nothing", "driverfs:power",
                       "driverfs:driverfs:devpath", "sysfs:devpath"):
            with pytest.raises(FileNotFoundError):
                os.stat(os.path.join(kbd, absent))

        inp = daemon.path("root", KBD_INPUT)
        sys_inp = os.path.join(sys_kbd, "1-1.2.1:1.0/0003:05F3:0007.0001/input/input5")
        sys_name = read(os.path.join(sys_inp, "name"))
        assert sys_name == b"HID 05f3:0007 Keyboard\n"
        assert read(os.path.join(inp, "name")) == sys_name
        assert "driverfs:name" in os.listdir(inp)
        assert read(os.path.join(inp, "driverfs:name")).strip()
        sys_mode = os.stat(os.path.join(sys_inp, "name")).st_mode
        assert os.stat(os.path.join(inp, "name")).st_mode & 0o777 == sys_mode & 0o777
        # driverfsctl finds driverfsd's files where they are
        r = subprocess.run([CTL, "-m", daemon.mnt, "info", "--json", KBD], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        files = json.loads(r.stdout)["files"]
        assert files["devpath"] == "1.2.1" and files["driverfs:devpath"] == f"/devices/{KBD}"
    finally:
        daemon.stop()


PASSTHROUGH = "the kernel reads passed-through attributes itself"


def passthrough_opens(output):
    m = re.search(r"; opened for passthrough: (\d+)", output)
    return int(m.group(1)) if m else 0


def daemon_reads(output):
    m = re.search(r"fuse requests: .* read=(\d+)", output)
    return int(m.group(1)) if m else 0


@pytest.mark.parametrize("mode", ["passthrough", "no-passthrough"])
def test_passed_through_values_are_the_same_read_by_the_kernel_or_the_daemon(mode):
    """Where the kernel offers FUSE passthrough (docs/design.md §6.4) it
    reads a passed-through attribute itself, from the sysfs file opened
    anew at each open; --no-passthrough takes every read to the daemon.
    Either way a value is read when opened, files open at once on one
    attribute read the same value, a root write while another file holds
    the attribute open reaches sysfs (and the kernel's refusal comes back),
    and PCI config stays cut to what an unprivileged reader gets."""
    args = ["--no-passthrough"] if mode == "no-passthrough" else []
    daemon = Daemon(TESTBED, args, prepare=add_files, extra_env={
        "LD_PRELOAD": os.environ["DRIVERFS_FAILWRITE"],
        "DRIVERFS_FAIL_WRITES": FAIL_WRITES})
    try:
        cpus = daemon.path("root", XHCI, "local_cpulist")
        sys_cpus = os.path.join(daemon.testbed.get_root_dir(), SYS_XHCI, "local_cpulist")
        reads = 0
        for value in (b"0-3\n", b"0\n", b"0-1\n"):
            with open(sys_cpus, "wb") as f:
                f.write(value)
            assert read(cpus) == value
            reads += 1
        offered = PASSTHROUGH in daemon.output()
        if mode == "passthrough" and not offered:
            pytest.skip("this kernel offers no FUSE passthrough (Linux >= 6.9)")
        assert offered == (mode == "passthrough")

        with open(cpus, "rb") as held, open(cpus, "rb") as second:
            reads += 2
            with open(sys_cpus, "wb") as f:
                f.write(b"0-7\n")
            assert second.read() == b"0-7\n"
            assert held.read() == b"0-7\n"
            # a writer meanwhile: through the daemon, to sysfs
            enable = daemon.path("root", XHCI, "enable")
            with open(enable, "rb") as reader:
                reads += 1
                assert reader.read() == b"1\n"
                with open(enable, "w") as f:
                    f.write("0\n")
                assert read(os.path.join(daemon.testbed.get_root_dir(), SYS_XHCI,
                                         "enable")) == b"0\n"
                assert read(enable) == b"0\n"
                reads += 1
            held_d3 = open(daemon.path("root", XHCI, "d3cold_allowed"), "rb")
            with held_d3, pytest.raises(OSError) as e:
                reads += 1
                with open(daemon.path("root", XHCI, "d3cold_allowed"), "w") as f:
                    f.write("0\n")
            assert e.value.errno == errno.EBUSY
        assert read(daemon.path("root", XHCI, "config")) == CONFIG[:64]
        assert as_nobody(lambda q: open(q, "rb").read().hex(),
                         daemon.path("root", XHCI, "config")) == CONFIG[:64].hex()
        assert daemon.terminate() == 0
        out = daemon.output()
        opened = passthrough_opens(out)
        if mode == "passthrough":
            # every read-only open of a passed-through file but config's,
            # none of whose reads came to the daemon: only config's (root's
            # and nobody's, each to its end) did
            assert opened >= reads, out
            assert daemon_reads(out) <= 4, out
        else:
            assert opened == 0
            assert daemon_reads(out) >= reads, out
    finally:
        daemon.stop()
