# SPDX-License-Identifier: LGPL-2.1-or-later
"""The live smoke test: driverfsd on this machine's own /sys, compared with
what lspci reports (docs/design.md §13); in a guest whose devices are known,
with lsusb too: the vm tier's tests/vm/guest/test_tree.sh."""
import os
import re
import shutil
import subprocess

import pytest

from harness import Daemon, has_devpath, own


def udev_devpaths():
    if shutil.which("udevadm") is None:
        return None
    out = subprocess.run(["udevadm", "info", "--export-db"], check=True,
                         capture_output=True, text=True).stdout
    return [line[3:] for line in out.splitlines() if line.startswith("P: ")]


@pytest.fixture(scope="module")
def d():
    if not os.path.isdir("/sys/devices"):
        pytest.skip("this machine has no sysfs")
    before = udev_devpaths()
    daemon = Daemon(None)
    # The devices present before the daemon started and still there: the
    # mount itself adds one (its bdi), which the daemon cannot have seen.
    after = udev_devpaths()
    daemon.udev = None if before is None else [p for p in before if p in set(after)]
    yield daemon
    daemon.stop()


@pytest.mark.skipif(shutil.which("lspci") is None, reason="lspci (pciutils) is not installed")
def test_every_lspci_function_with_its_ids(d):
    if not os.path.isdir("/sys/bus/pci/devices") or not os.listdir("/sys/bus/pci/devices"):
        pytest.skip("this machine has no PCI devices")
    out = subprocess.run(["lspci", "-D", "-n"], check=True, capture_output=True, text=True).stdout
    functions = {}
    for line in out.splitlines():
        slot, _cls, ids = line.split()[:3]
        vendor, device = ids.split(":")
        functions[slot] = (vendor, device)
    assert functions, "lspci listed nothing"
    listed = set(os.listdir(d.path("bus", "pci", "devices")))
    assert listed == set(functions)
    for slot, (vendor, device) in functions.items():
        base = d.path("bus", "pci", "devices", slot)
        with open(os.path.join(base, "vendor")) as f:
            assert f.read() == f"0x{vendor}\n", slot
        with open(os.path.join(base, "device")) as f:
            assert f.read() == f"0x{device}\n", slot
        # the same place as in sysfs
        with open(own(base, "devpath")) as f:
            assert "/sys" + f.read().strip() == os.path.realpath(f"/sys/bus/pci/devices/{slot}")


def run_clean(cmd, allowed=()):
    """Runs @cmd on the live tree; returns it with the error lines of its
    stderr (less those containing one of @allowed). Devices of this machine
    come and go (other FUSE mounts' bdi devices, for one): a run whose only
    errors are of paths that vanished (ENOENT) is run again, up to twice, so
    that only errors that stay fail the test."""
    for _ in range(3):
        r = subprocess.run(cmd, capture_output=True, text=True)
        errors = [ln for ln in r.stderr.splitlines() if not any(a in ln for a in allowed)
                  and not vanished(ln)]
        if not errors or not all("No such file or directory" in ln for ln in errors):
            break
    return r, errors


def vanished(line):
    """Whether the error line ("tool: ‘PATH’: No such file or directory", or
    PATH unquoted) names a path that is gone now: a device that went while
    the tool walked (another test's FUSE mount and its bdi device, in a
    parallel run), not one the tree lists and fails."""
    if not line.endswith(": No such file or directory"):
        return False
    head = line[:-len(": No such file or directory")]
    quoted = re.search(r"[‘']([^’']+)[’']", head)
    path = quoted.group(1) if quoted else head.split(": ", 1)[-1]
    return path.startswith("/") and not os.path.lexists(path)


def same_error_as_sysfs(d, line):
    """Whether grep's error line "grep: PATH: MESSAGE" names a passed-through
    attribute whose read in sysfs fails with the same message."""
    path, _, message = line[len("grep: "):].rpartition(": ")
    # the device's directory: the nearest one up with a devpath file (the
    # attribute may be in an attribute directory, such as queues/tx-0/)
    top, rel = os.path.split(path)
    while top != d.mnt and not os.path.isfile(own(top, "devpath")):
        top, part = os.path.split(top)
        rel = os.path.join(part, rel)
    try:
        with open(own(top, "devpath")) as f:
            sys_path = "/sys" + f.read().strip() + "/" + rel
        with open(sys_path, "rb") as f:
            f.read()
    except OSError as e:
        return os.strerror(e.errno) == message
    return False


def test_ls_find_and_grep_run_clean(d):
    """What every tool does to sysfs, on this machine's tree: `ls -lR` and
    `find` with no error, no dangling link, and `grep -r` reading every
    value with no error but the files only root may read."""
    r, errors = run_clean(["find", d.mnt])
    assert errors == [], errors[:5]
    assert len(r.stdout.splitlines()) > 20
    r, errors = run_clean(["find", d.mnt, "-xtype", "l"])
    assert errors == [], errors[:5]
    assert r.stdout == "", "dangling links: " + r.stdout
    r, errors = run_clean(["ls", "-lR", d.mnt])
    assert errors == [], "ls -lR: " + "\n".join(errors[:5])
    r, errors = run_clean(["grep", "-r", ".", d.path("root")],
                          ("Permission denied", "binary file matches"))
    # a sysfs attribute passed through fails as sysfs fails it (a network
    # interface's `speed` while it is down: EINVAL): the same error is fine
    errors = [e for e in errors if not same_error_as_sysfs(d, e)]
    assert errors == [], f"grep -r: {len(errors)} errors, e.g. {errors[:5]}"
    assert r.stdout.count("\n") > 20, "grep -r read next to nothing"


def mount_devpaths(d):
    """{devpath: [path under root/]} for every device directory of the mount."""
    found = {}
    root = d.path("root")
    for top, dirs, names in os.walk(root):
        if top != root and has_devpath(names):
            with open(own(top, "devpath")) as f:
                found.setdefault(f.read().strip(), []).append(os.path.relpath(top, root))
    return found


@pytest.mark.skipif(shutil.which("udevadm") is None, reason="udevadm is not installed")
def test_every_udev_device_once_under_its_sysfs_parent(d):
    udev = d.udev
    assert udev, "udev knows no device"
    found = mount_devpaths(d)
    missing = [p for p in udev if p not in found]
    assert missing == [], f"{len(missing)} of {len(udev)} udev devices missing, e.g. {missing[:5]}"
    twice = {p: v for p, v in found.items() if len(v) > 1}
    assert twice == {}, f"devices in the tree more than once: {list(twice.items())[:3]}"
    for devpath in udev:
        place = found[devpath][0]
        parent_dir = os.path.dirname(place)
        # the sysfs parent: the nearest ancestor directory with a uevent file
        sys_parent = os.path.dirname("/sys" + devpath)
        while sys_parent != "/sys/devices" and not os.path.exists(sys_parent + "/uevent"):
            sys_parent = os.path.dirname(sys_parent)
        if sys_parent == "/sys/devices":
            container = devpath.split("/")[2]
            expect = container if container in ("system", "virtual") else ""
            assert parent_dir == expect, f"{devpath} is at root/{place}"
        else:
            with open(own(d.path("root", parent_dir), "devpath")) as f:
                got = f.read().strip()
            assert "/sys" + got == sys_parent, f"{devpath}: parent {got}, sysfs says {sys_parent}"


def read_as_seen(path):
    """What a read of @path gives: its bytes, or the errno name."""
    import errno as errnos
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return errnos.errorcode.get(e.errno, str(e.errno))


# Values the kernel changes between any two reads (counters, sensors, what
# moves with power management), whose bytes cannot be compared: both reads
# must give bytes. The list is docs/snapshot.md's (volatile.py).
from volatile import is_volatile  # noqa: E402


def compare_as_nobody(pairs):
    """[(mount path, sysfs path, what each gives)] of the pairs that differ,
    read in the same child as nobody: the mount first, then sysfs."""
    out = []
    for mine, theirs in pairs:
        a, b = read_as_seen(mine), read_as_seen(theirs)
        if is_volatile(mine) and isinstance(a, bytes) and isinstance(b, bytes):
            continue
        if a != b:
            out.append((mine, repr(a)[:80], repr(b)[:80]))
    return out


def test_nobody_reads_what_sysfs_gives_nobody(d):
    """Never more than sysfs gives (issue 16): as nobody, each sysfs
    attribute passed through reads the same bytes or fails with the same
    error as the same read of sysfs. Values that change between two reads
    (counters) are read twice, and a pair that differs both times fails."""
    from test_security import as_nobody
    pairs = []
    for top, dirs, files in os.walk(d.path("root")):
        dirs[:] = [x for x in dirs if x != "pm"]
        if not has_devpath(files):
            continue
        with open(own(top, "devpath")) as f:
            sysdir = "/sys" + f.read().strip()
        for name in files:
            sys_path = os.path.join(sysdir, name)
            if os.path.isfile(sys_path) and not os.path.islink(sys_path):
                pairs.append((os.path.join(top, name), sys_path))
    assert len(pairs) > 100, "the machine's devices have attributes"
    # driverfsd's own files keep their meanings (docs/design.md §6.7): only
    # the passed-through ones are sysfs's, told by their size (4096)
    pairs = [(m, s) for m, s in pairs if os.stat(m).st_size == 4096
             and os.path.basename(m) != "kernel_driver"]
    differ = as_nobody(compare_as_nobody, pairs)
    if differ:
        again = as_nobody(compare_as_nobody, [(m, s) for m, _, _ in differ
                                              for s in [dict(pairs)[m]]])
        assert again == [], f"{len(again)} files differ for nobody, e.g. {again[:5]}"


def whole_tree(mnt):
    """{path: (kind, bytes or read error or link target, mode)} of a mount,
    less pm/ (the machine's runtime PM, live, which a snapshot does not keep),
    the binding control files, the metrics and the kernel's deferred probes
    at the top (the serving daemon's state and counters, debugfs's list)."""
    out = {}
    for top, dirs, files in os.walk(mnt):
        dirs[:] = [x for x in dirs if x != "pm"]
        files = [x for x in files if x not in ("binding", "bindings") and
                 (x not in ("metrics", "devices_deferred") or top != mnt)]
        for name in dirs + files:
            p = os.path.join(top, name)
            st = os.lstat(p)
            if os.path.islink(p):
                out[os.path.relpath(p, mnt)] = ("link", os.readlink(p), st.st_mode)
            elif os.path.isdir(p):
                out[os.path.relpath(p, mnt)] = ("dir", None, st.st_mode)
            else:
                out[os.path.relpath(p, mnt)] = ("file", read_as_seen(p), st.st_mode)
    return out


def test_a_saved_machine_shows_what_the_live_one_does(d, tmp_path):
    """driverfsd --save of this machine, served by --snapshot: every file,
    link and directory of the live mount with the same mode and the same
    bytes or read error (volatile values aside)."""
    from harness import DAEMON
    saved = tmp_path / "machine.json"
    r = subprocess.run([DAEMON, "--save", str(saved)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    snap = Daemon(None, ["--snapshot", str(saved)])
    try:
        live, kept = whole_tree(d.mnt), whole_tree(snap.mnt)
    finally:
        snap.stop()
    # a FUSE mount's own backing device (root/virtual/0:NN) comes and goes
    # with the mounts: the save saw the live daemon's, the live one did not
    def ours(p):
        return p.startswith("root/virtual/0:") or "/virtual/0:" in p or p.startswith(
            "class/bdi/") or p.startswith("bus/") and "/0:" in p
    extra = {p for p in set(live) ^ set(kept) if not ours(p)}
    assert not extra, sorted(extra)[:10]
    differ = [p for p in set(live) & set(kept) if live[p] != kept[p] and
              not (is_volatile(p) and live[p][0] == "file" and
                   isinstance(live[p][1], bytes) and isinstance(kept[p][1], bytes))]
    assert not differ, [(p, repr(live[p])[:80], repr(kept[p])[:80]) for p in sorted(differ)[:5]]
    assert len(live) > 100
    # driverfsctl diff says the same of the saved machine and the live mount:
    # nothing changed but the FUSE mounts' own devices, volatile files aside
    import json
    from harness import CTL
    r = subprocess.run([CTL, "diff", "--json", str(saved), d.mnt], capture_output=True,
                       text=True)
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    moved = [m["from"] for m in doc["devices"]["moved"]] + [m["to"] for m in
                                                           doc["devices"]["moved"]]
    assert all(ours("root/" + p) for p in
               doc["devices"]["added"] + doc["devices"]["removed"] + moved), doc["devices"]
    assert doc["changes"] == [] and doc["values"] == [], (doc["changes"][:3], doc["values"][:3])
    assert doc["volatile_skipped"] > 0


def pci_function_of(sys_path):
    """The PCI function above a sysfs device directory, as a bus id."""
    p = os.path.realpath(sys_path)
    while p.startswith("/sys/devices/"):
        if os.path.exists(os.path.join(p, "driver_override")) and \
                os.path.basename(os.path.realpath(os.path.join(p, "subsystem"))) == "pci":
            return os.path.basename(p)
        p = os.path.dirname(p)
    return None


def dry_unbind(d, function):
    """driverfsctl unbind --dry-run: writes nothing (a dry run never
    reaches sysfs, and this is the machine the tests run on)."""
    return subprocess.run([CTL, "-m", d.mnt, "unbind", "--dry-run", function],
                          capture_output=True, text=True)


CTL = os.environ.get("DRIVERFSCTL", "driverfsctl")


def test_the_root_disk_and_the_default_route_nic_are_refused_dry(d):
    """The machine's own disk (mounted as /) and NIC (carrying the default
    route): a dry-run unbind of their PCI functions is refused, with those
    reasons."""
    checked = 0
    with open("/proc/self/mountinfo") as f:
        root = [line.split()[2] for line in f if line.split()[4] == "/"]
    fn = pci_function_of(f"/sys/dev/block/{root[0]}") if root else None
    if fn:
        r = dry_unbind(d, fn)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "is mounted at /\n" in r.stdout and "nothing written" in r.stdout, r.stdout
        checked += 1
    with open("/proc/net/route") as f:
        default = [line.split()[0] for line in f
                   if line.split()[1:2] == ["00000000"] and line.split()[7] == "00000000"]
    fn = pci_function_of(f"/sys/class/net/{default[0]}") if default else None
    if fn:
        r = dry_unbind(d, fn)
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"interface {default[0]} carries the default route" in r.stdout, r.stdout
        checked += 1
    if not checked:
        pytest.skip("neither / nor the default route is on a PCI function here")
