# SPDX-License-Identifier: LGPL-2.1-or-later
"""A binding transaction survives the daemon's death (issue 33 item 1,
docs/design.md §7.5): the daemon is killed (SIGKILL) while the kernel,
played by tests/helpers/kbind.c, holds one step's write; a new daemon on the
same testbed and journal leaves the device exactly as it was before the
request (driver, driver_override, the drivers' links, the uevent's DRIVER=),
or, killed past the verify step, exactly as requested; never in between; and
the device's binding file says what it did. A journal anyone but root could
change is refused and not acted on. Against the real driver core: the vm
tier's tests/vm/guest/test_binding.sh leaves a NIC half-moved, as a daemon
killed at its probe step does, with its journal, and a new daemon rolls it
back."""
import os
import threading
import time

import pytest

from harness import Daemon
from test_binding import IDS, NIC, NIC_PLACE, SYS_NIC, TESTBED, Kernel, add_drivers

BEFORE = ("e1000e", "(null)\n", ["e1000e"], ["DRIVER=e1000e"])
REQUESTED = ("vfio-pci", "vfio-pci\n", ["vfio-pci"], ["DRIVER=vfio-pci"])


def state(testbed):
    """The kernel's side of the NIC's binding (as test_binding.state())."""
    root = testbed.get_root_dir()
    nic = os.path.join(root, SYS_NIC)
    try:
        drv = os.path.basename(os.readlink(os.path.join(nic, "driver")))
    except FileNotFoundError:
        drv = None
    with open(os.path.join(nic, "driver_override")) as f:
        override = f.read()
    with open(os.path.join(nic, "uevent")) as f:
        uevent = [line for line in f.read().splitlines() if line.startswith("DRIVER=")]
    drivers = os.path.join(root, "sys/bus/pci/drivers")
    linked = sorted(d for d in os.listdir(drivers) if os.path.lexists(os.path.join(drivers, d, NIC)))
    return drv, override, linked, uevent


def status(d):
    with open(d.path("root", NIC_PLACE, "binding")) as f:
        return f.read()


def wait_file(path, d, timeout=120):
    """Until @path exists; fails if the daemon @d ends first or it takes
    longer than @timeout (a bound for a hung test, not a measure)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert d.proc.poll() is None, "the daemon ended:\n" + d.output()
        assert time.monotonic() < deadline, f"{path} never came:\n" + d.output()
        time.sleep(0.02)


@pytest.fixture
def kernel(tmp_path):
    """The test's kernel (test_binding.Kernel), and its binding journal's
    path, in the test's own directory."""
    tmp = str(tmp_path)
    k = Kernel(tmp)
    yield k, os.path.join(tmp, "binding-journal")
    k.stopped = True
    if k.thread.is_alive():
        k.thread.join()


def start(k, journal, testbed):
    """A daemon on @testbed (the killed one's) with the same journal."""
    return Daemon(None, ["--binding-journal", journal], testbed=testbed, extra_env=k.env(IDS))


def ask(d, request):
    """@request written to the NIC's binding file, the daemon dying under
    it (the write fails)."""
    try:
        fd = os.open(d.path("root", NIC_PLACE, "binding"), os.O_WRONLY)
        try:
            os.write(fd, request)
        finally:
            os.close(fd)
    except OSError:
        pass


def kill_while_held(k, suffix, journal, prepare=add_drivers, request=b"vfio-pci"):
    """A daemon asked to bind the NIC to vfio-pci (@request), killed while
    the write ending in @suffix is held; its testbed (kept) and what the
    kernel's side was just before the kill."""
    d = Daemon(TESTBED, ["--binding-journal", journal], prepare=prepare,
               extra_env=k.env(IDS))
    k.serve(d)
    assert state(d.testbed) == BEFORE
    k.refuse([(suffix, -3)])
    t = threading.Thread(target=ask, args=(d, request), daemon=True)
    t.start()
    wait_file(k.fail + ".held", d)
    d.proc.kill()
    d.proc.wait()
    # the held write never finishes: the daemon is gone (the .go file
    # is never made)
    k.refuse([])
    at_death = state(d.testbed)
    testbed = d.testbed
    d.stop()
    t.join()
    return testbed, at_death


@pytest.mark.parametrize("step,suffix,at_death", [
    ("driver_override", f"{NIC}/driver_override", BEFORE),
    ("unbind", "drivers/e1000e/unbind", ("e1000e", "vfio-pci\n", ["e1000e"], ["DRIVER=e1000e"])),
    # half-moved: the override set, unbound, bound to nothing
    ("probe", "drivers/vfio-pci/bind", (None, "vfio-pci\n", [], [])),
])
def test_killed_before_verify_is_rolled_back_at_start(kernel, step, suffix, at_death):
    k, journal = kernel
    testbed, seen = kill_while_held(k, suffix, journal)
    assert seen == at_death
    assert os.path.exists(journal), "the transaction is recorded"
    d = start(k, journal, testbed)
    try:
        assert state(testbed) == BEFORE
        assert not os.path.exists(journal), "dropped once acted on"
        s = status(d)
        assert f"recovered at start: rolled back after the daemon died at step {step}" in s, s
        assert "after rollback: e1000e" in s, s
        assert "recovered at start: rolled back" in d.output()
    finally:
        d.stop()


def test_killed_at_verify_is_completed_at_start(kernel):
    """Past its verify step (killed while the journal's drop is held) the
    device is bound as requested: left so, said so."""
    k, journal = kernel
    testbed, seen = kill_while_held(k, "binding-journal", journal)
    assert seen == REQUESTED
    assert os.path.exists(journal)
    d = start(k, journal, testbed)
    try:
        assert state(testbed) == REQUESTED
        assert not os.path.exists(journal)
        s = status(d)
        assert "recovered at start: completed: the daemon died at step verify" in s, s
        assert s.startswith("bound to vfio-pci by a request through driverfsd\n"), s
    finally:
        d.stop()


@pytest.mark.parametrize("mode,owner", [(0o666, 0), (0o644, 65534)])
def test_a_journal_anyone_but_root_could_change_is_refused(kernel, mode, owner):
    """Half-moved by a daemon killed at its probe step, then the journal
    made writable by others (or owned by nobody): the next daemon refuses
    it with the reason and writes nothing; root's own again, the one after
    rolls the device back."""
    k, journal = kernel
    testbed, seen = kill_while_held(k, "drivers/vfio-pci/bind", journal)
    half = (None, "vfio-pci\n", [], [])
    assert seen == half
    os.chmod(journal, mode)
    os.chown(journal, owner, -1)
    d = start(k, journal, testbed)
    try:
        assert state(testbed) == half
        assert os.path.exists(journal)
        out = d.output()
        assert f"{journal}: refused, anyone but root could change it" in out, out
        assert "recovered at start" not in status(d)
    finally:
        d.stop()
    os.chmod(journal, 0o644)
    os.chown(journal, 0, -1)
    d = start(k, journal, testbed)
    try:
        assert state(testbed) == BEFORE
        assert "recovered at start: rolled back after the daemon died at step probe" in status(d)
    finally:
        d.stop()


XHCI = "0000:00:14.0"


def with_companion(root):
    """add_drivers(), and the USB controller in the NIC's IOMMU group: a
    companion bound to a driver that keeps VFIO out."""
    add_drivers(root)
    group = os.path.join(root, "sys", "kernel", "iommu_groups", "7", "devices")
    xhci = os.path.join(root, "sys/devices/pci0000:00", XHCI)
    os.symlink(os.path.relpath(xhci, group), os.path.join(group, XHCI))
    os.symlink(os.path.relpath(os.path.dirname(group), xhci), os.path.join(xhci, "iommu_group"))


def companion(testbed):
    """The USB controller's driver and driver_override."""
    xhci = os.path.join(testbed.get_root_dir(), "sys/devices/pci0000:00", XHCI)
    try:
        drv = os.path.basename(os.readlink(os.path.join(xhci, "driver")))
    except FileNotFoundError:
        drv = None
    with open(os.path.join(xhci, "driver_override")) as f:
        return drv, f.read()


def test_a_group_move_killed_midway_puts_every_member_back(kernel):
    """vfio-pci with group: the companion moved first (its own transaction
    done), the daemon killed at the NIC's unbind; the next one rolls the
    NIC back and puts the companion back on its driver."""
    k, journal = kernel
    testbed, seen = kill_while_held(k, "drivers/e1000e/unbind", journal,
                                    prepare=with_companion, request=b"vfio-pci group")
    assert seen == ("e1000e", "vfio-pci\n", ["e1000e"], ["DRIVER=e1000e"])
    assert companion(testbed) == ("vfio-pci", "vfio-pci\n"), "the companion had moved"
    d = start(k, journal, testbed)
    try:
        assert state(testbed) == BEFORE
        assert companion(testbed) == ("xhci_hcd", "(null)\n")
        assert not os.path.exists(journal)
        s = status(d)
        assert "recovered at start: rolled back after the daemon died at step unbind" in s, s
        assert f"recovered at start: group move to vfio-pci rolled back\ngroup: {XHCI} back to " \
               "xhci_hcd: ok" in s, s
    finally:
        d.stop()
