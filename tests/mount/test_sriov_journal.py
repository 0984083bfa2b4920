# SPDX-License-Identifier: LGPL-2.1-or-later
"""An SR-IOV transaction survives the daemon's death (issue 33 items 1 and
5, docs/design.md §7.5): it records what it found (the PF's count, its
sriov_drivers_autoprobe, each VF's driver and driver_override) in the
binding journal before its first write; the daemon is killed (SIGKILL)
while the kernel, played by tests/helpers/kbind.c, holds one step's write;
a new daemon on the same testbed and journal leaves the PF exactly as it
was before the request (its count, its autoprobe, every VF's driver and
override), or, killed past the verify step, exactly as requested; never in
between; and the PF's sriov file says what it did."""
import os
import subprocess
import time

import pytest

from harness import Daemon
from test_binding_journal import wait_file
from test_inuse import proc_root
from test_sriov import (CTL, IDS, PF, PF_PLACE, TESTBED, VFS, SriovKernel, add_sriov, ctl,
                        kernel_state, native, on, read)


class Held:
    """kernel_state()'s view of a testbed whose daemon is gone."""

    def __init__(self, testbed):
        self.testbed = testbed


@pytest.fixture
def kernel(tmp_path):
    """The test's kernel, its proc root and the journal's path, in the
    test's own directory."""
    tmp = str(tmp_path)
    k = SriovKernel(tmp)
    yield k, proc_root(tmp), os.path.join(tmp, "binding-journal")
    k.stopped = True
    if k.thread.is_alive():
        k.thread.join()


def drain(d):
    """The daemon's notifications read (test_sriov.ctl() says why)."""
    import socket
    d.sock.settimeout(0.05)
    try:
        d.__dict__.setdefault("status_backlog", []).extend(
            d.sock.recv(65536).decode(errors="replace").split("\n"))
    except (socket.timeout, OSError):
        pass


def kill_while_held(k, proc, journal, setup, suffix, request):
    """A daemon whose PF was given @setup (driverfsctl sriov's arguments),
    then asked @request, killed while the write ending in @suffix is held;
    its testbed (kept), the kernel's side before the request and at the
    kill."""
    d = Daemon(TESTBED, ["--binding-journal", journal, "--proc-root", proc],
               prepare=add_sriov, extra_env=k.env(IDS))
    k.serve(d)
    r = ctl(d, "sriov", PF, *setup)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not os.path.exists(journal), "dropped when done"
    before = kernel_state(d)
    k.refuse([(suffix, -3)])
    p = subprocess.Popen([CTL, "-m", d.mnt, "sriov", PF, *request], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not os.path.exists(k.fail + ".held"):
        assert d.proc.poll() is None, "the daemon ended:\n" + d.output()
        assert time.monotonic() < deadline, "never held:\n" + d.output()
        drain(d)
    d.proc.kill()
    d.proc.wait()
    # the held write never finishes: the daemon is gone
    k.refuse([])
    at_death = kernel_state(d)
    testbed = d.testbed
    d.stop()
    p.wait()
    return testbed, before, at_death


def start(k, proc, journal, testbed):
    """A daemon on @testbed (the killed one's) with the same journal."""
    return Daemon(None, ["--binding-journal", journal, "--proc-root", proc], testbed=testbed,
                  extra_env=k.env(IDS))


def report(d):
    return read(d.path("root", PF_PLACE, "sriov"))


# 1 VF on vfio-pci, 2 asked for: killed at each step. (Small: what the
# new daemon's recovery makes the kernel send waits in its monitor's socket
# until it serves, and umockdev's emulated netlink, a datagram socket,
# queues 10 at most: net.unix.max_dgram_qlen.)
ONE = ["1", "--driver", "vfio-pci"]
TWO = ["2", "--driver", "vfio-pci"]


@pytest.mark.parametrize("step,suffix,at_death", [
    ("autoprobe", "sriov_drivers_autoprobe=0", (1, "1", on("vfio-pci", 1))),
    ("disable", "sriov_numvfs=0", (1, "0", on("vfio-pci", 1))),
    ("enable", "sriov_numvfs=2", (0, "0", [])),
    # 2 made, the first bound, the second's override set and its bind held
    ("bind VF", f"drivers/vfio-pci/bind={VFS[1]}",
     (2, "0", on("vfio-pci", 1) + [(VFS[1], None, "vfio-pci\n")])),
])
def test_killed_before_verify_is_rolled_back_at_start(kernel, step, suffix, at_death):
    k, proc, journal = kernel
    testbed, before, seen = kill_while_held(k, proc, journal, ONE, suffix, TWO)
    assert before == (1, "1", on("vfio-pci", 1))
    assert seen == at_death
    assert os.path.exists(journal), "the transaction is recorded"
    assert "\nsriov " in read(journal), read(journal)
    d = start(k, proc, journal, testbed)
    try:
        assert kernel_state(d) == before, d.output()
        assert not os.path.exists(journal), "dropped once acted on"
        s = report(d)
        assert f"recovered at start: rolled back after the daemon died at step {step}\n" in s, s
        assert f"after rollback: 1 VF: {VFS[0]}=vfio-pci\n" in s, s
        assert f"sriov {PF}: recovered at start: rolled back" in d.output()
        assert "acted on 1 SR-IOV transaction" in d.output()
    finally:
        d.stop()


def test_killed_at_verify_is_completed_at_start(kernel):
    """Past its verify step (killed while sriov_drivers_autoprobe is put
    back) the VFs are as requested: left so, the autoprobe put back."""
    k, proc, journal = kernel
    testbed, before, seen = kill_while_held(k, proc, journal, ONE, "sriov_drivers_autoprobe=1",
                                            TWO)
    assert seen == (2, "0", on("vfio-pci", 2))
    d = start(k, proc, journal, testbed)
    try:
        assert kernel_state(d) == (2, "1", on("vfio-pci", 2)), d.output()
        assert not os.path.exists(journal)
        s = report(d)
        assert "recovered at start: completed: the daemon died at step verify; the PF has 2 " \
               "VFs on vfio-pci as requested\nsriov_drivers_autoprobe <- 1: ok\n" in s, s
    finally:
        d.stop()


def test_count_kept_killed_mid_move_is_rolled_back(kernel):
    """2 VFs the kernel bound to mlx5_core, moved to vfio-pci with the
    count kept: killed at the second VF's bind (unbound from mlx5_core, its
    override set); the next daemon puts both back on mlx5_core, no
    override."""
    k, proc, journal = kernel
    testbed, before, seen = kill_while_held(k, proc, journal, ["2"],
                                            f"drivers/vfio-pci/bind={VFS[1]}",
                                            ["2", "--driver", "vfio-pci"])
    assert before == (2, "1", native(2))
    assert seen == (2, "1", on("vfio-pci", 1) + [(VFS[1], None, "vfio-pci\n")])
    d = start(k, proc, journal, testbed)
    try:
        assert kernel_state(d) == before, d.output()
        assert not os.path.exists(journal)
        s = report(d)
        assert "recovered at start: rolled back after the daemon died at step bind VF\n" in s, s
        assert f"rollback: VF {VFS[1]} back to mlx5_core (driver_override (none)): ok" in s, s
    finally:
        d.stop()


def test_a_journal_anyone_but_root_could_change_is_not_acted_on(kernel):
    """Killed at the enable step (no VF left), the journal made writable by
    others: the next daemon does nothing with it; root's again, the one
    after rolls the PF back."""
    k, proc, journal = kernel
    testbed, before, seen = kill_while_held(k, proc, journal, ONE, "sriov_numvfs=2", TWO)
    assert seen == (0, "0", [])
    os.chmod(journal, 0o666)
    d = start(k, proc, journal, testbed)
    try:
        assert kernel_state(d) == seen
        assert "refused, anyone but root could change it" in d.output()
        assert "recovered at start" not in report(d)
    finally:
        d.stop()
    os.chmod(journal, 0o644)
    d = start(k, proc, journal, testbed)
    try:
        assert kernel_state(d) == before
        assert "recovered at start: rolled back after the daemon died at step enable" in report(d)
    finally:
        d.stop()
