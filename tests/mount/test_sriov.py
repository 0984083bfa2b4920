# SPDX-License-Identifier: LGPL-2.1-or-later
"""SR-IOV virtual functions as one transaction (issue 33 item 5,
docs/design.md §7.5): driverfsctl sriov DEV N [--driver DRIVER] sets the
ConnectX-5 PF's VF count through 0 (the kernel refuses one non-zero count
for another) with sriov_drivers_autoprobe off meanwhile, and binds the new
VFs to DRIVER; a failure at any step (the kernel refusing the count, a VF's
bind failing, the autoprobe write) puts back the PF's count, its autoprobe
and every VF's driver and driver_override; a VF in use (a route on its
netdev) refuses it, --force proceeds; --persist records it, applied at
start before serving and when the PF appears. The kernel is played by
tests/helpers/kbind.c (sriov_numvfs: VF devices made and removed, with
their add/remove uevents, which this test sends into the testbed)."""
import os
import shutil
import subprocess
import threading

import pytest

from harness import Daemon
from test_binding import Kernel
from test_inuse import proc_root

HERE = os.path.dirname(__file__)
TESTBED = os.path.join(HERE, "..", "testbeds", "server-2dom.umockdev")
CTL = os.environ.get("DRIVERFSCTL", "driverfsctl")
PF = "0000:04:00.0"
PF_PATH = "/devices/pci0000:00/0000:00:02.0/0000:01:00.0/0000:02:10.0/" + PF
PF_PLACE = PF_PATH[len("/devices/"):]
PF_ID = "pci:15b3:1017:15b3:0020"
# offset 2, stride 1: the VFs at 04:00.2 ... 04:01.1
VFS = ["0000:04:00.%d" % f for f in range(2, 8)] + ["0000:04:01.0", "0000:04:01.1"]
IDS = "mlx5_core=0000:04:00.0 0000:04:00.1 " + " ".join(VFS)
VF_NETDEV = "enp4s0f0v0"


def add_sriov(root):
    """The ConnectX-5's first port an SR-IOV PF with 8 VFs, none enabled;
    vfio-pci loaded and the bus's drivers_probe."""
    pf = os.path.join(root, "sys" + PF_PATH)
    for name, value in (("sriov_totalvfs", "8"), ("sriov_numvfs", "0"), ("sriov_offset", "2"),
                        ("sriov_stride", "1"), ("sriov_vf_device", "0x1018"),
                        ("sriov_drivers_autoprobe", "1")):
        with open(os.path.join(pf, name), "w") as f:
            f.write(value + "\n")
    d = os.path.join(root, "sys/bus/pci/drivers/vfio-pci")
    os.makedirs(d)
    for f in ("bind", "unbind", "new_id", "remove_id", "uevent"):
        open(os.path.join(d, f), "w").close()
    open(os.path.join(root, "sys/bus/pci/drivers_probe"), "w").close()


class SriovKernel(Kernel):
    """kbind's uevents, and a VF's removal: its subtree's devices' removes
    (deepest first), sent while they are there, then the directory gone
    (kbind waits for that)."""

    def deliver(self, action, devpath):
        if action != "remove":
            super().deliver(action, devpath)
            return
        top = self.testbed.get_root_dir() + "/sys" + devpath
        devices = [p for p, dirs, files in os.walk(top) if "uevent" in files]
        for p in sorted(devices, key=lambda p: -p.count("/")):
            self.testbed.uevent(p[len(self.testbed.get_root_dir()):], "remove")
        shutil.rmtree(top)


def pf_dir(d):
    return os.path.join(d.testbed.get_root_dir(), "sys" + PF_PATH)


def read(path):
    with open(path) as f:
        return f.read()


def kernel_state(d):
    """The kernel's side: the PF's count, its autoprobe, and each VF (its
    virtfn link's) driver and driver_override."""
    pf = pf_dir(d)
    vfs = []
    i = 0
    while os.path.lexists(os.path.join(pf, f"virtfn{i}")):
        vf = os.path.realpath(os.path.join(pf, f"virtfn{i}"))
        link = os.path.join(vf, "driver")
        drv = os.path.basename(os.readlink(link)) if os.path.lexists(link) else None
        vfs.append((os.path.basename(vf), drv, read(os.path.join(vf, "driver_override"))))
        i += 1
    return (int(read(os.path.join(pf, "sriov_numvfs"))),
            read(os.path.join(pf, "sriov_drivers_autoprobe")).strip(), vfs)


def ctl(d, *args):
    """driverfsctl's run, the daemon's notifications read meanwhile (kept
    for wait_status()): a request makes more hotplug events than the
    notification socket queues (net.unix.max_dgram_qlen, 10 here), and a
    daemon whose monitor waits to report one takes no more uevents, which
    the test's sender then cannot queue."""
    import socket
    backlog = d.__dict__.setdefault("status_backlog", [])
    with subprocess.Popen([CTL, "-m", d.mnt, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as p:
        out = {}
        t = threading.Thread(target=lambda: out.update(zip(("stdout", "stderr"),
                                                           p.communicate())))
        t.start()
        d.sock.settimeout(0.1)
        while t.is_alive():
            try:
                backlog += d.sock.recv(65536).decode(errors="replace").split("\n")
            except (socket.timeout, OSError):
                pass
        t.join()
        return subprocess.CompletedProcess(p.args, p.returncode, out["stdout"], out["stderr"])


def wait_log(d, text, count=1, timeout=120):
    """Until the daemon's log has @text @count times (a bound for a hung
    test, not a measure), its notifications read meanwhile."""
    import socket
    import time
    backlog = d.__dict__.setdefault("status_backlog", [])
    deadline = time.monotonic() + timeout
    d.sock.settimeout(0.05)
    while d.output().count(text) < count:
        assert d.proc.poll() is None, "the daemon ended:\n" + d.output()
        assert time.monotonic() < deadline, f"{text!r} never logged:\n" + d.output()
        try:
            backlog += d.sock.recv(65536).decode(errors="replace").split("\n")
        except (socket.timeout, OSError):
            pass


def sriov(d, *args):
    return ctl(d, "sriov", PF, *args)


def wait_event(d, action, name, timeout=60):
    d.wait_status(lambda line: line.startswith(f"STATUS=hotplug {action} ") and
                  line.split(" ")[2].endswith("/" + name), timeout=timeout)


def on(driver, n):
    """@n VFs each bound to @driver by a request (driver_override set)."""
    return [(VFS[i], driver, driver + "\n") for i in range(n)]


def native(n):
    """@n VFs the kernel's autoprobe bound to mlx5_core."""
    return [(VFS[i], "mlx5_core", "(null)\n") for i in range(n)]


@pytest.fixture
def served(tmp_path):
    """The server testbed with the SR-IOV PF, kbind playing the kernel, the
    test's proc root (routes) given to the in-use checks."""
    k = SriovKernel(str(tmp_path))
    proc = proc_root(str(tmp_path))
    d = Daemon(TESTBED, ["--proc-root", proc], prepare=add_sriov, extra_env=k.env(IDS))
    k.serve(d)
    yield d, k, proc
    k.stopped = True
    k.thread.join()
    d.stop()


def test_vfs_made_and_bound_to_vfio_pci(served):
    """4 VFs on vfio-pci: autoprobe off meanwhile (no native driver ever
    takes them), each VF's override set and bound; then 2 (through 0: the
    kernel refuses 4 -> 2); then the count kept and the VFs moved back to
    the kernel's driver."""
    d, k, _ = served
    assert os.path.exists(d.path("root", PF_PLACE, "sriov"))
    # the second port has no SR-IOV capability: no file
    assert not os.path.exists(d.path("root", PF_PLACE[:-1] + "1", "sriov"))
    r = sriov(d, "4", "--driver", "vfio-pci")
    assert r.returncode == 0, r.stdout + r.stderr
    assert kernel_state(d) == (4, "1", on("vfio-pci", 4))
    assert "plan: sriov_drivers_autoprobe <- 0" in r.stdout
    assert "done: 4 VFs: 0000:04:00.2=vfio-pci" in r.stdout
    # the mount has them, bound as the kernel says
    wait_event(d, "bind", VFS[3])
    assert read(d.path("bus", "pci", "devices", VFS[3], "kernel_driver")) == "vfio-pci\n"
    status = read(d.path("root", PF_PLACE, "sriov"))
    assert "total: 8\n" in status and "numvfs: 4 VFs:" in status

    r = sriov(d, "2", "--driver", "vfio-pci")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "plan: sriov_numvfs <- 0" in r.stdout
    assert kernel_state(d) == (2, "1", on("vfio-pci", 2))
    wait_event(d, "remove", VFS[2])
    assert not os.path.exists(d.path("bus", "pci", "devices", VFS[2]))

    # the count kept: the VFs moved, nothing made or removed
    r = sriov(d, "2", "--driver", "mlx5_core")
    assert r.returncode == 0, r.stdout + r.stderr
    assert kernel_state(d) == (2, "1", on("mlx5_core", 2))
    assert "sriov_numvfs <-" not in r.stdout


def test_the_kernel_refusing_the_count_puts_everything_back(served):
    """2 VFs on vfio-pci; 4 asked for, and the kernel refuses 4 (ENOMEM):
    the 2 made again, each on vfio-pci with its override, autoprobe 1."""
    d, k, _ = served
    assert sriov(d, "2", "--driver", "vfio-pci").returncode == 0
    before = kernel_state(d)
    assert before == (2, "1", on("vfio-pci", 2))
    k.refuse([("sriov_numvfs=4", 12)])
    r = sriov(d, "4", "--driver", "vfio-pci")
    assert r.returncode != 0
    assert "failed: enable: Cannot allocate memory (ENOMEM)" in r.stdout, r.stdout
    assert "rollback: sriov_numvfs <- 2: ok" in r.stdout
    assert "put back" in r.stderr
    assert kernel_state(d) == before
    # the disable step refused: nothing changed but autoprobe, put back
    k.refuse([("sriov_numvfs=0", 16)])
    r = sriov(d, "3", "--driver", "vfio-pci")
    assert "failed: disable: Device or resource busy (EBUSY)" in r.stdout, r.stdout
    assert kernel_state(d) == before
    # the autoprobe write refused: nothing written at all
    k.refuse([("sriov_drivers_autoprobe", 5)])
    r = sriov(d, "3", "--driver", "vfio-pci")
    assert "failed: autoprobe: Input/output error (EIO)" in r.stdout, r.stdout
    assert kernel_state(d) == before
    k.refuse([])


def test_a_vf_bind_failing_puts_everything_back(served):
    """2 VFs the kernel bound to mlx5_core; 4 on vfio-pci asked for, and
    the third VF's bind fails (vfio-pci's probe: EINVAL): the 4 go, the 2
    come back on mlx5_core, no override, autoprobe 1."""
    d, k, _ = served
    assert sriov(d, "2").returncode == 0
    before = kernel_state(d)
    assert before == (2, "1", native(2))
    k.refuse([(f"drivers/vfio-pci/bind={VFS[2]}", 22)])
    r = sriov(d, "4", "--driver", "vfio-pci")
    assert r.returncode != 0
    assert f"failed: bind VF {VFS[2]} to vfio-pci: bind: Invalid argument (EINVAL)" \
        in r.stdout, r.stdout
    assert "rollback: sriov_numvfs <- 0: ok" in r.stdout
    assert "rollback: sriov_drivers_autoprobe <- 1: ok" in r.stdout
    assert kernel_state(d) == before
    k.refuse([])

    # the count kept, a VF's move failing: the one moved put back
    assert sriov(d, "2", "--driver", "vfio-pci").returncode == 0
    k.refuse([(f"drivers/mlx5_core/bind={VFS[1]}", 19)])
    r = sriov(d, "2", "--driver", "mlx5_core")
    assert r.returncode != 0
    assert kernel_state(d) == (2, "1", on("vfio-pci", 2)), r.stdout
    k.refuse([])


def test_a_vf_in_use_refuses_the_count(served):
    """A route on the first VF's netdev: 0 VFs (or 3) refused with EBUSY,
    naming it, nothing written; a dry run says so too; --force proceeds
    (the netdev's remove before its VF's)."""
    d, k, proc = served
    assert sriov(d, "2").returncode == 0
    wait_event(d, "add", VFS[0])
    d.testbed.add_from_string(
        f"P: {PF_PATH[:-len(PF)]}{VFS[0]}/net/{VF_NETDEV}\nE: INTERFACE={VF_NETDEV}\n"
        "E: IFINDEX=40\nE: SUBSYSTEM=net\nA: ifindex=40\\n\n")
    wait_event(d, "add", VF_NETDEV)
    with open(os.path.join(proc, "net/route"), "a") as f:
        f.write(f"{VF_NETDEV}\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
    before = kernel_state(d)
    r = sriov(d, "0")
    assert r.returncode != 0
    assert f"VF {VFS[0]} (removed by the new count):" in r.stdout, r.stdout
    assert f"in use: network interface {VF_NETDEV}" in r.stdout or VF_NETDEV in r.stdout
    assert "a VF is in use" in r.stderr
    assert kernel_state(d) == before
    r = sriov(d, "3", "--driver", "vfio-pci", "--dry-run")
    assert r.returncode != 0
    assert "dry run: nothing written; refused: in use" in r.stdout, r.stdout
    assert kernel_state(d) == before
    r = sriov(d, "0", "--force")
    assert r.returncode == 0, r.stdout + r.stderr
    assert kernel_state(d) == (0, "1", [])
    wait_event(d, "remove", VF_NETDEV)
    wait_event(d, "remove", VFS[0])


def test_bad_requests_change_nothing(served):
    d, k, _ = served
    r = sriov(d, "9")
    assert r.returncode != 0 and "sriov_totalvfs" in r.stderr
    r = sriov(d, "2", "--driver", "no-such-driver")
    assert r.returncode != 0 and "no kernel driver of that name" in r.stderr
    r = ctl(d, "sriov", "0000:04:00.1", "2")
    assert r.returncode != 0 and "not an SR-IOV physical function" in r.stderr
    for text in ("x", "-1", "2 vfio-pci vfio-pci", "2 force force", "99999999", "2 a/b"):
        fd = os.open(d.path("root", PF_PLACE, "sriov"), os.O_WRONLY)
        try:
            with pytest.raises(OSError):
                os.write(fd, text.encode())
        finally:
            os.close(fd)
    assert kernel_state(d) == (0, "1", [])


def persisting(tmp_path, state_file, testbed=None):
    conf = str(tmp_path / "driverfsd.conf")
    with open(conf, "w") as f:
        f.write(f"[Binding]\nPersistFile={state_file}\n")
    tmp = tmp_path / ("second" if testbed else "first")
    tmp.mkdir()
    k = SriovKernel(str(tmp))
    proc = proc_root(str(tmp))
    if testbed is None:
        d = Daemon(TESTBED, ["--proc-root", proc, "-c", conf], prepare=add_sriov,
                   extra_env=k.env(IDS))
    else:
        d = Daemon(None, ["--proc-root", proc, "-c", conf], testbed=testbed,
                   extra_env=k.env(IDS))
    k.serve(d)
    return k, d


def bindings(d):
    r = ctl(d, "bindings")
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_persisted_vfs_applied_at_start_and_when_the_pf_appears(tmp_path):
    """3 VFs on vfio-pci persisted: a sriov line with the PF's identity;
    a new daemon on a testbed whose PF has none (a boot) makes them before
    it serves; the PF unplugged and plugged back with none: made again by
    the persist worker."""
    os.chmod(str(tmp_path), 0o755)
    state_file = str(tmp_path / "state" / "bindings")
    k, d = persisting(tmp_path, state_file)
    try:
        r = sriov(d, "3", "--driver", "vfio-pci", "--persist")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "persisted: yes" in r.stdout
        assert f"sriov pci {PF} 3 vfio-pci {PF_ID}\n" in read(state_file)
        assert bindings(d) == f"pci {PF} sriov:3:vfio-pci in-force\n"
    finally:
        k.stopped = True
        k.thread.join()
        testbed = d.testbed
        d.stop()
    # a boot: the VFs are gone, the PF has none
    pf = os.path.join(testbed.get_root_dir(), "sys" + PF_PATH)
    for i in range(3):
        vf = os.path.realpath(os.path.join(pf, f"virtfn{i}"))
        shutil.rmtree(vf)
        os.unlink(os.path.join(pf, f"virtfn{i}"))
        os.unlink(os.path.join(testbed.get_root_dir(), "sys/bus/pci/devices",
                               os.path.basename(vf)))
    with open(os.path.join(pf, "sriov_numvfs"), "w") as f:
        f.write("0\n")

    k, d = persisting(tmp_path, state_file, testbed=testbed)
    try:
        # made before READY: the kernel's side is as recorded already
        assert kernel_state(d) == (3, "1", on("vfio-pci", 3)), d.output()
        assert f"persisted VFs of {PF} applied: 3 on vfio-pci" in d.output()
        wait_event(d, "bind", VFS[2])
        assert bindings(d) == f"pci {PF} sriov:3:vfio-pci in-force\n"

        # unplugged (its VFs first, as the kernel does), plugged back with none
        assert sriov(d, "0", "--force").returncode == 0
        wait_event(d, "remove", VFS[0])
        assert bindings(d) == f"pci {PF} sriov:3:vfio-pci numvfs:0\n"
        testbed.uevent("/sys" + PF_PATH, "remove")
        wait_event(d, "remove", PF)
        assert bindings(d) == f"pci {PF} sriov:3:vfio-pci absent\n"
        testbed.uevent("/sys" + PF_PATH, "add")
        wait_event(d, "add", PF)
        # applied by the persist worker, after the add's report
        wait_log(d, f"persisted VFs of {PF} applied: 3 on vfio-pci", count=2)
        assert kernel_state(d) == (3, "1", on("vfio-pci", 3)), d.output()
        assert bindings(d) == f"pci {PF} sriov:3:vfio-pci in-force\n"

        # forgotten
        r = sriov(d, "0", "--forget")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "persisted: forgotten" in r.stdout
        assert bindings(d) == ""
        assert PF not in read(state_file)
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()


def test_a_vf_held_through_vfio_refuses_the_count(served):
    """2 VFs on vfio-pci, the first's IOMMU group /dev/vfio/G held open by
    a process (a VM, DPDK: in the test's proc root): 0 VFs refused with
    EBUSY, naming the node, its VF and the process (for root); the VF's own
    unbind through binding refused too; the holder gone, it goes through."""
    d, k, proc = served
    assert sriov(d, "2", "--driver", "vfio-pci").returncode == 0
    wait_event(d, "bind", VFS[1])
    vf = os.path.join(d.testbed.get_root_dir(), "sys/bus/pci/devices", VFS[0])
    group = os.path.basename(os.readlink(os.path.join(vf, "iommu_group")))
    fd = os.path.join(proc, "4242", "fd")
    os.makedirs(fd)
    with open(os.path.join(proc, "4242", "comm"), "w") as f:
        f.write("qemu-system-x86\n")
    os.symlink(f"/dev/vfio/{group}", os.path.join(fd, "7"))
    before = kernel_state(d)
    r = sriov(d, "0")
    assert r.returncode != 0
    held = f"/dev/vfio/{group} (VFIO, {VFS[0]} on vfio-pci) is open in process 4242 " \
           "(qemu-system-x86)"
    assert f"in use: {held}" in r.stdout, r.stdout
    assert kernel_state(d) == before
    # the count kept, the VFs moved: the same
    r = sriov(d, "2", "--driver", "mlx5_core")
    assert r.returncode != 0 and held in r.stdout, r.stdout
    r = ctl(d, "unbind", VFS[0])
    assert r.returncode != 0 and held in r.stdout, r.stdout
    assert kernel_state(d) == before
    # a process holding the second VF's group is not the first's
    os.unlink(os.path.join(fd, "7"))
    assert sriov(d, "0").returncode == 0
    assert kernel_state(d) == (0, "1", [])


def test_protected_vfs_refuse_without_force(tmp_path):
    """driverfsd.conf's Protect= naming a VF and the VFs' native driver: a
    count that removes them, or a move off their driver, is refused with
    EBUSY naming each, nothing written; force proceeds."""
    conf = str(tmp_path / "driverfsd.conf")
    with open(conf, "w") as f:
        f.write(f"[Binding]\nProtect={VFS[1]} mlx5_core\n")
    k = SriovKernel(str(tmp_path))
    proc = proc_root(str(tmp_path))
    d = Daemon(TESTBED, ["--proc-root", proc, "-c", conf], prepare=add_sriov,
               extra_env=k.env(IDS))
    k.serve(d)
    try:
        # none there yet: nothing protected goes
        r = sriov(d, "2")
        assert r.returncode == 0, r.stdout + r.stderr
        before = kernel_state(d)
        assert before == (2, "1", native(2))
        r = sriov(d, "2", "--driver", "vfio-pci")
        assert r.returncode != 0
        assert f"in use: VF {VFS[0]} (moved): its driver mlx5_core is protected " \
               "(driverfsd.conf, Protect=)" in r.stdout, r.stdout
        assert f"in use: VF {VFS[1]} (moved) is protected (driverfsd.conf, Protect=)" \
            in r.stdout, r.stdout
        assert kernel_state(d) == before
        r = sriov(d, "1")
        assert r.returncode != 0
        assert f"in use: VF {VFS[1]} (removed by the new count) is protected" in r.stdout
        assert kernel_state(d) == before
        r = sriov(d, "0", "--force")
        assert r.returncode == 0, r.stdout + r.stderr
        assert kernel_state(d) == (0, "1", [])
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()
