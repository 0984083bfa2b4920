# SPDX-License-Identifier: LGPL-2.1-or-later
"""Binding transactions (issue 17, docs/design.md §7.5) on the small PCI
testbed, whose kernel is played by tests/helpers/kbind.c: a root write to a
device's binding file (or driverfsctl bind) moves it to another kernel driver
through check, driver_override, unbind, probe and verify; a failure at any
step leaves the device exactly as it began (driver link, driver_override,
uevent), with the step and errno in the report the binding file shows; a step the kernel does
not answer in time is reported pending; a dry run writes nothing; while
the transaction runs no user driver is offered the device.

The vm tier covers these against Linux itself: tests/vm/guest/test_binding.sh
(vm-binding) moves a NIC to vfio-pci and back on the real driver core, has a
probe refused (vfio-pci's EINVAL for a bridge) rolled back, recovers a
transaction a killed daemon left, and checks the kernel's answer to each
binding write that kbind plays (test_direct_binding_writes_get_the_kernels_answers)."""
import errno
import os
import re
import socket
import subprocess
import threading

import pytest

from harness import Daemon, umockdev_env

HERE = os.path.dirname(__file__)
TESTBED = os.path.join(HERE, "..", "testbeds", "small-pci.umockdev")
CTL = os.environ.get("DRIVERFSCTL", "driverfsctl")
NIC = "0000:00:1f.6"
NIC_PLACE = "pci0000:00/" + NIC
SYS_NIC = "sys/devices/" + NIC_PLACE
IDS = "e1000e=0000:00:1f.6;xhci_hcd=0000:00:14.0;nvme=0000:01:00.0;pcieport=0000:00:1c.0"


def add_drivers(root):
    """vfio-pci and pci-stub loaded, with nothing bound; the bus's
    drivers_probe; the NIC alone in IOMMU group 7 (the USB controller in
    none: a machine without an IOMMU for it)."""
    for drv in ("vfio-pci", "pci-stub"):
        d = os.path.join(root, "sys", "bus", "pci", "drivers", drv)
        os.makedirs(d)
        for f in ("bind", "unbind", "new_id", "remove_id", "uevent"):
            open(os.path.join(d, f), "w").close()
    open(os.path.join(root, "sys", "bus", "pci", "drivers_probe"), "w").close()
    group = os.path.join(root, "sys", "kernel", "iommu_groups", "7", "devices")
    os.makedirs(group)
    nic = os.path.join(root, SYS_NIC)
    os.symlink(os.path.relpath(nic, group), os.path.join(group, NIC))
    os.symlink(os.path.relpath(os.path.dirname(group), nic), os.path.join(nic, "iommu_group"))


class Kernel:
    """The uevents kbind asks for, sent from this process (the testbed's
    owner), and the refusals it is told."""

    def __init__(self, tmp):
        self.events = os.path.join(tmp, "kbind-events")
        self.fail = os.path.join(tmp, "kbind-fail")
        open(self.fail, "w").close()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.events)
        self.sock.settimeout(0.2)
        self.testbed = None
        self.stopped = False
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stopped:
            try:
                msg = self.sock.recv(4096).decode()
            except socket.timeout:
                continue
            action, devpath = msg.split(" ", 1)
            self.deliver(action, devpath)

    def deliver(self, action, devpath):
        """The uevent kbind asked for, sent."""
        self.testbed.uevent("/sys" + devpath, action)

    def env(self, ids):
        """The daemon's environment: kbind preloaded, talking to this,
        with the drivers' @ids (DRIVERFS_KBIND_IDS)."""
        return {"LD_PRELOAD": os.environ["DRIVERFS_KBIND"], "DRIVERFS_KBIND_EVENTS": self.events,
                "DRIVERFS_KBIND_FAIL": self.fail, "DRIVERFS_KBIND_IDS": ids}

    def serve(self, d):
        """Sends the uevents kbind asks for into @d's testbed, from now on."""
        self.testbed = d.testbed
        self.thread.start()

    def refuse(self, lines):
        with open(self.fail, "w") as f:
            f.write("".join(f"{suffix} {err}\n" for suffix, err in lines))


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("binding"))
    k = Kernel(tmp)
    d = Daemon(TESTBED, prepare=add_drivers, extra_env=k.env(IDS))
    k.serve(d)
    yield d, k
    k.stopped = True
    k.thread.join()
    d.stop()


def sysfs(d, *parts):
    return os.path.join(d.testbed.get_root_dir(), SYS_NIC, *parts)


def state(d):
    """The kernel's side of the NIC's binding: its driver, driver_override,
    the driver's link to it, and its uevent's DRIVER=."""
    try:
        drv = os.path.basename(os.readlink(sysfs(d, "driver")))
    except FileNotFoundError:
        drv = None
    with open(sysfs(d, "driver_override")) as f:
        override = f.read()
    with open(sysfs(d, "uevent")) as f:
        uevent = [line for line in f.read().splitlines() if line.startswith("DRIVER=")]
    root = d.testbed.get_root_dir()
    linked = sorted(drv for drv in os.listdir(os.path.join(root, "sys/bus/pci/drivers"))
                    if os.path.lexists(os.path.join(root, "sys/bus/pci/drivers", drv, NIC)))
    return drv, override, linked, uevent


def write_once(path, text):
    """@text written to @path in one write(2) (a buffered file would write a
    refused request again when closed): 0 or the errno."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
        return 0
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


def request(d, text, place=NIC_PLACE):
    """@text written to the binding file of the device at @place (the NIC)."""
    return write_once(d.path("root", place, "binding"), text)


def status(d):
    with open(d.path("root", NIC_PLACE, "binding")) as f:
        return f.read()


def kernel_driver(d):
    try:
        with open(d.path("root", NIC_PLACE, "kernel_driver")) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def wait_event(d, action):
    d.wait_status(lambda line: line.startswith(f"STATUS=hotplug {action} /devices/{NIC_PLACE} "))


@pytest.fixture(autouse=True)
def no_event_left(env):
    """Each test waits for every event its requests cause: none is left for
    the next test's waits to take for its own."""
    yield
    d, _ = env
    left = [line for line in getattr(d, "status_backlog", [])
            if line.startswith("STATUS=hotplug ") and NIC_PLACE in line]
    assert not left, left


def test_the_file_is_there_and_only_root_writes(env):
    d, _ = env
    assert os.stat(d.path("root", NIC_PLACE, "binding")).st_mode & 0o777 == 0o644
    # why it is bound as it is; no request yet
    assert status(d) == "bound to e1000e by the kernel\n"
    for bad in ("\n", "vfio-pci extra", "a/b", "force", "vfio-pci force force"):
        assert request(d, bad) == errno.EINVAL, bad
    assert state(d) == ("e1000e", "(null)\n", ["e1000e"], ["DRIVER=e1000e"])


def test_to_vfio_pci_and_back_to_the_default(env):
    d, _ = env
    begin = state(d)
    assert request(d, "vfio-pci\n") == 0
    assert state(d) == ("vfio-pci", "vfio-pci\n", ["vfio-pci"], ["DRIVER=vfio-pci"])
    assert "done: vfio-pci" in status(d)
    assert re.match(r"bound to vfio-pci by a request through driverfsd\n"
                    r"driver_override: vfio-pci\nlast request \(#\d+\):\n", status(d)), status(d)
    wait_event(d, "unbind")
    wait_event(d, "bind")
    assert kernel_driver(d) == "vfio-pci"
    # the same again: nothing to do
    assert request(d, "vfio-pci") == 0
    assert "already bound to vfio-pci" in status(d)
    assert request(d, "default") == 0
    assert state(d) == begin
    assert "done: e1000e" in status(d)
    wait_event(d, "unbind")
    wait_event(d, "bind")
    assert kernel_driver(d) == "e1000e"


def test_a_request_for_the_driver_it_has_only_sets_the_override(env):
    """Bound to e1000e already (by the kernel, no override): a request for
    e1000e pins it with driver_override and probes nothing."""
    d, _ = env
    assert request(d, "e1000e") == 0
    assert state(d) == ("e1000e", "e1000e\n", ["e1000e"], ["DRIVER=e1000e"])
    s = status(d)
    assert "plan: driver_override <- e1000e" in s and "plan: bind to" not in s, s
    assert "done: e1000e" in s
    assert request(d, "default") == 0
    wait_event(d, "unbind")
    wait_event(d, "bind")
    assert state(d) == ("e1000e", "(null)\n", ["e1000e"], ["DRIVER=e1000e"])


def test_a_dry_run_writes_nothing_and_says_the_plan(env):
    d, _ = env
    begin = state(d)
    assert request(d, "vfio-pci dry-run") == 0
    assert state(d) == begin
    s = status(d)
    assert "plan: driver_override <- vfio-pci" in s
    assert "plan: unbind from e1000e" in s and "plan: bind to vfio-pci" in s
    assert "dry run: nothing written" in s


def test_a_driver_the_bus_does_not_have_is_refused(env):
    d, _ = env
    begin, before = state(d), status(d)
    # a bad value: EINVAL, and nothing changes, the last report (and its
    # number) included
    assert request(d, "no-such-driver") == errno.EINVAL
    assert status(d) == before
    assert state(d) == begin


@pytest.mark.parametrize("name", [".", "..", ". force", ".. dry-run", "..\n"])
def test_the_driver_names_dot_and_dotdot_are_refused_before_anything_is_done(env, name):
    """"." and ".." are no driver's name (bus/pci/drivers/. is the drivers
    directory, .. the bus's): refused at parse time, EINVAL, the device
    still bound, its override and the last report as they were."""
    d, _ = env
    begin, before = state(d), status(d)
    assert request(d, name) == errno.EINVAL
    assert state(d) == begin
    assert status(d) == before
    assert kernel_driver(d) == "e1000e"


@pytest.mark.parametrize("name", [".", ".."])
def test_driverfsctl_bind_refuses_dot_and_dotdot(env, name):
    d, _ = env
    begin, before = state(d), status(d)
    r = subprocess.run([CTL, "-m", d.mnt, "bind", NIC, name], capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "not a driver name" in r.stderr, r.stderr
    assert state(d) == begin and status(d) == before


@pytest.mark.parametrize("step,suffix,err", [
    ("driver_override", f"{NIC}/driver_override", errno.EPERM),
    ("unbind", "drivers/e1000e/unbind", errno.EBUSY),
    ("probe", "drivers/vfio-pci/bind", errno.ENOMEM),
    # the probe's own EINVAL (vfio-pci's for a header type it does not
    # take): a failure of the kernel's, not a request for no driver
    ("probe", "drivers/vfio-pci/bind", errno.EINVAL),
    ("verify", "drivers/vfio-pci/bind", 0),
])
def test_a_failure_at_each_step_leaves_the_device_as_it_began(env, step, suffix, err):
    d, k = env
    begin = state(d)
    k.refuse([(suffix, err)])
    try:
        got = request(d, "vfio-pci")
    finally:
        k.refuse([])
    assert got == (err or errno.ENODEV)
    s = status(d)
    assert re.match(r"bound to e1000e by the kernel\nlast request \(#\d+\):\n", s), s
    name = errno.errorcode[err or errno.ENODEV]
    assert f"failed: {step}: {os.strerror(err or errno.ENODEV)} ({name})\n" in s, s
    assert state(d) == begin, s
    if step != "driver_override":
        assert "rollback: driver_override restored to (none): ok" in s, s
    if step in ("probe", "verify"):
        assert "rollback: bind to e1000e again: ok" in s, s
        wait_event(d, "unbind")
        wait_event(d, "bind")
    assert kernel_driver(d) == "e1000e"


def test_rollback_rebinds_the_old_driver_only_after_restoring_the_override(env):
    """The old driver could not bind while driver_override names another:
    the override is restored first (kbind refuses a bind the override
    forbids, as the kernel does)."""
    d, k = env
    begin = state(d)
    k.refuse([("drivers/vfio-pci/bind", errno.EINVAL)])
    try:
        assert request(d, "vfio-pci") == errno.EINVAL
    finally:
        k.refuse([])
    s = status(d)
    assert s.index("rollback: driver_override restored") < s.index("rollback: bind to e1000e")
    assert state(d) == begin
    wait_event(d, "unbind")
    wait_event(d, "bind")


def test_no_user_driver_is_offered_a_device_in_a_transaction(env):
    """Between the unbind and a slow probe (kbind takes 2 s) the function
    has no kernel driver, which pci-pm would claim; the transaction keeps it
    from every driver until it ends."""
    d, k = env
    claim = d.path("bus", "pci", "drivers", "pci-pm", NIC)
    k.refuse([("drivers/vfio-pci/bind", -2)])
    result = {}
    t = threading.Thread(target=lambda: result.update(r=request(d, "vfio-pci")))
    try:
        t.start()
        wait_event(d, "unbind")
        assert kernel_driver(d) is None
        assert not os.path.lexists(claim), "pci-pm was offered the function mid-transaction"
        t.join(30)
    finally:
        k.refuse([])
    assert result["r"] == 0
    wait_event(d, "bind")
    assert kernel_driver(d) == "vfio-pci" and not os.path.lexists(claim)
    # unbound for good: now pci-pm may have it
    assert request(d, "none") == 0
    wait_event(d, "unbind")
    assert os.path.lexists(claim), "an unbound function is pci-pm's once the transaction ended"
    assert status(d).startswith("no driver: unbound by a request through driverfsd\n"
                                "driver_override: vfio-pci\n"
                                "held by user driver pci-pm\n"), status(d)
    assert request(d, "default") == 0
    wait_event(d, "bind")
    assert not os.path.lexists(claim) and kernel_driver(d) == "e1000e"


def driver_file(d, driver, name, text):
    return write_once(d.path("bus", "pci", "drivers", driver, name), text)


def test_the_kernel_drivers_bind_and_unbind_files_run_the_transaction(env):
    d, _ = env
    drivers = d.path("bus", "pci", "drivers")
    for drv in ("vfio-pci", "e1000e", "pci-stub"):
        assert {"bind", "unbind"} <= set(os.listdir(os.path.join(drivers, drv)))
        assert os.stat(os.path.join(drivers, drv, "bind")).st_mode & 0o777 == 0o200
    # a user driver's directory has none
    assert "bind" not in os.listdir(os.path.join(drivers, "pci-pm"))
    assert driver_file(d, "vfio-pci", "bind", NIC + "\n") == 0
    assert state(d)[:2] == ("vfio-pci", "vfio-pci\n")
    assert "done: vfio-pci" in status(d)
    wait_event(d, "unbind")
    wait_event(d, "bind")
    # unbind names a device bound to that driver, else ENODEV
    assert driver_file(d, "e1000e", "unbind", NIC) == errno.ENODEV
    assert driver_file(d, "vfio-pci", "unbind", "0000:99:00.0") == errno.ENODEV
    assert driver_file(d, "vfio-pci", "bind", "a/b") == errno.EINVAL
    assert driver_file(d, "vfio-pci", "unbind", NIC) == 0
    assert state(d)[0] is None
    wait_event(d, "unbind")
    assert request(d, "default") == 0
    wait_event(d, "bind")
    assert state(d) == ("e1000e", "(null)\n", ["e1000e"], ["DRIVER=e1000e"])


def test_vfio_pci_without_an_iommu_is_refused_unless_no_iommu_mode_is_on(env):
    d, _ = env
    xhci = "pci0000:00/0000:00:14.0"
    assert request(d, "vfio-pci dry-run", xhci) == errno.EOPNOTSUPP
    with open(d.path("root", xhci, "binding")) as f:
        assert "refused: the device has no IOMMU group" in f.read()
    param = os.path.join(d.testbed.get_root_dir(), "sys/module/vfio/parameters")
    os.makedirs(param)
    with open(os.path.join(param, "enable_unsafe_noiommu_mode"), "w") as f:
        f.write("Y\n")
    try:
        assert request(d, "vfio-pci dry-run", xhci) == 0
        with open(d.path("root", xhci, "binding")) as f:
            r = f.read()
        assert "no IOMMU: the kernel's no-IOMMU mode is on" in r and "plan: bind to vfio-pci" in r
    finally:
        os.unlink(os.path.join(param, "enable_unsafe_noiommu_mode"))


def test_unbind_and_bind_by_driverfsctl(env):
    d, _ = env
    r = subprocess.run([CTL, "-m", d.mnt, "unbind", NIC], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "done: no driver" in r.stdout
    assert state(d)[0] is None and state(d)[1] == "(null)\n"
    wait_event(d, "unbind")
    assert kernel_driver(d) is None
    r = subprocess.run([CTL, "-m", d.mnt, "bind", "--dry-run", NIC, "pci-stub"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "dry run" in r.stdout, r.stdout + r.stderr
    assert state(d)[0] is None
    r = subprocess.run([CTL, "-m", d.mnt, "bind", "--default", NIC], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert state(d)[0] == "e1000e"
    wait_event(d, "bind")
    r = subprocess.run([CTL, "-m", d.mnt, "bind", NIC, "no-such-driver"], capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert "no kernel driver of that name on its bus" in r.stderr
    assert r.stdout == "", r.stdout  # no report of its own: the last one is another's


def test_driverfsctl_tells_a_probe_s_einval_from_no_such_driver(env):
    """The probe refuses with EINVAL, the errno the daemon answers a
    driver the bus does not have with: driverfsctl says what the report
    says (the step, the kernel's errno, the rollback), and the metrics count
    a failure, not an invalid request."""
    d, k = env
    begin = state(d)

    def count(result):
        with open(d.path("metrics")) as f:
            for line in f:
                if line.startswith(f'driverfsd_binding_requests_total{{result="{result}"}} '):
                    return float(line.split()[-1])
        raise AssertionError(result)
    failed, invalid = count("failed"), count("invalid")
    number = int(re.search(r"last request \(#(\d+)\)", status(d)).group(1))
    k.refuse([("drivers/vfio-pci/bind", errno.EINVAL)])
    try:
        r = subprocess.run([CTL, "-m", d.mnt, "bind", NIC, "vfio-pci"], capture_output=True,
                           text=True)
    finally:
        k.refuse([])
    assert r.returncode == 1
    assert "failed: probe: Invalid argument (EINVAL)" in r.stdout, r.stdout
    assert "rollback: bind to e1000e again: ok" in r.stdout, r.stdout
    assert "no kernel driver of that name" not in r.stderr, r.stderr
    assert "a step failed with the kernel's error" in r.stderr, r.stderr
    assert count("failed") == failed + 1 and count("invalid") == invalid
    assert f"last request (#{number + 1}):" in r.stdout, r.stdout
    wait_event(d, "unbind")
    wait_event(d, "bind")
    assert state(d) == begin


def test_a_step_the_kernel_does_not_answer_in_time_is_pending(env):
    """An unbind that waits (kbind makes it wait 7 s, the transaction's
    bound is 5 s) is reported pending, nothing undone; the kernel's write
    then finishes and its uevent shows the outcome."""
    d, k = env
    k.refuse([("drivers/e1000e/unbind", -1)])
    try:
        assert request(d, "pci-stub") == errno.EINPROGRESS
    finally:
        k.refuse([])
    assert "pending: unbind did not return" in status(d)
    wait_event(d, "unbind")
    # the override stayed: the device is unbound, pci-stub may take it
    assert state(d)[:2] == (None, "pci-stub\n")
    assert request(d, "default") == 0
    wait_event(d, "bind")
    assert state(d) == ("e1000e", "(null)\n", ["e1000e"], ["DRIVER=e1000e"])


def test_a_driver_loaded_or_unloaded_later_follows_its_uevent(env):
    """modprobe igb after the start: the kernel's "add" uevent of
    /bus/pci/drivers/igb brings its directory into the tree (a request can
    name it at once); rmmod's "remove" takes it away."""
    import shutil
    d, _ = env
    root = d.testbed.get_root_dir()
    drv = os.path.join(root, "sys/bus/pci/drivers/igb")
    assert not os.path.exists(d.path("bus", "pci", "drivers", "igb"))
    os.makedirs(drv)
    for f in ("bind", "unbind", "new_id", "remove_id", "uevent"):
        open(os.path.join(drv, f), "w").close()
    d.testbed.uevent("/sys/bus/pci/drivers/igb", "add")
    d.wait_status(lambda line: line.startswith("STATUS=hotplug add /bus/pci/drivers/igb "))
    assert os.path.isdir(d.path("bus", "pci", "drivers", "igb"))
    assert request(d, "igb dry-run") == 0
    assert "plan: bind to igb" in status(d)

    d.testbed.uevent("/sys/bus/pci/drivers/igb", "remove")
    d.wait_status(lambda line: line.startswith("STATUS=hotplug remove /bus/pci/drivers/igb "))
    shutil.rmtree(drv)
    assert not os.path.exists(d.path("bus", "pci", "drivers", "igb"))
    assert request(d, "igb dry-run") == errno.EINVAL
    # the other drivers stay
    assert os.path.isdir(d.path("bus", "pci", "drivers", "e1000e"))


KERNEL_WRITE = """import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
try:
    os.write(fd, sys.argv[2].encode())
    print(0)
except OSError as e:
    print(e.errno)
"""


def kernel_write(d, k, path, text):
    """@text written to /sys/@path in one write(2) by a process of its own
    under kbind, behind the daemon's back (an admin's echo): 0 or the
    errno kbind, playing the kernel, answered."""
    import sys
    r = subprocess.run([sys.executable, "-c", KERNEL_WRITE, "/sys/" + path, text],
                       env=umockdev_env(d.testbed, k.env(IDS)), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return int(r.stdout)


def test_direct_binding_writes_get_the_kernels_answers(env):
    """What kbind answers to each binding write is what Linux 6.1 answered
    in the vm tier's guest (tests/vm/guest/test_binding.sh, which covers
    this against the real driver core): a bind of a device bound already
    is EBUSY (kbind said ENODEV), of a driver that does not match it or of
    no such device ENODEV; an unbind by another driver ENODEV;
    drivers_probe of a bound device does nothing and succeeds, and one
    whose probe the driver refuses succeeds too, the device left unbound,
    where a bind write returns the probe's errno."""
    d, k = env
    begin = state(d)
    assert begin == ("e1000e", "(null)\n", ["e1000e"], ["DRIVER=e1000e"])
    drivers = "bus/pci/drivers/"
    assert kernel_write(d, k, drivers + "e1000e/bind", NIC) == errno.EBUSY
    assert kernel_write(d, k, drivers + "vfio-pci/bind", NIC) == errno.ENODEV
    assert kernel_write(d, k, drivers + "vfio-pci/unbind", NIC) == errno.ENODEV
    assert kernel_write(d, k, drivers + "e1000e/bind", "0000:ff:1f.7") == errno.ENODEV
    assert kernel_write(d, k, "bus/pci/drivers_probe", NIC) == 0
    assert state(d) == begin
    k.refuse([("drivers/vfio-pci/bind", errno.EINVAL)])
    try:
        assert kernel_write(d, k, SYS_NIC[4:] + "/driver_override", "vfio-pci\n") == 0
        assert kernel_write(d, k, drivers + "e1000e/unbind", NIC) == 0
        wait_event(d, "unbind")
        assert kernel_write(d, k, "bus/pci/drivers_probe", NIC) == 0
        assert state(d)[0] is None
        assert kernel_write(d, k, drivers + "vfio-pci/bind", NIC) == errno.EINVAL
        assert state(d)[0] is None
    finally:
        k.refuse([])
    # as it began: the override cleared (a lone newline), e1000e probed
    assert kernel_write(d, k, SYS_NIC[4:] + "/driver_override", "\n") == 0
    assert kernel_write(d, k, "bus/pci/drivers_probe", NIC) == 0
    wait_event(d, "bind")
    assert state(d) == begin
    assert kernel_driver(d) == "e1000e"
