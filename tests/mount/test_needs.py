# SPDX-License-Identifier: LGPL-2.1-or-later
"""Exec drivers that need a kernel driver (issue 17 item 7, KernelDriver=,
docs/design.md §7.5), on the small PCI testbed whose kernel is played by
tests/helpers/kbind.c: a driver whose [Match] takes the NIC moves it to
vfio-pci through the binding transaction, claims it once the kernel's bind
uevent says so (its probe sees the device bound to vfio-pci), and gives it back to e1000e
when it lets it go (a reload without it); a move the in-use checks refuse,
or a probe that declines, is not tried again."""
import os
import signal
import subprocess
import time

from harness import Daemon
from test_binding import IDS, NIC, NIC_PLACE, TESTBED, Kernel, add_drivers, state

DRIVERFSD = os.environ.get("DRIVERFSD", "driverfsd")

DRIVER = """[Driver]
Name=dpdk-nic
Bus=pci
KernelDriver=vfio-pci
[Match]
vendor=0x8086
device=0x15bc
[Hooks]
Probe={hook} probe
Remove={hook} remove
"""

HOOK = """#!/bin/sh
echo "$1 $KERNEL_DRIVER" >> {log}
[ "$1" = probe ] && [ -e {decline} ] && exit 1
exit 0
"""


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Env:
    """A drivers.d with dpdk-nic, and the daemon serving the testbed."""

    def __init__(self, tmp, conf_extra="", decline=False):
        self.tmp = str(tmp)
        os.chmod(self.tmp, 0o755)
        os.makedirs(os.path.join(self.tmp, "drivers.d"))
        self.log = os.path.join(self.tmp, "hooks.log")
        self.decline = os.path.join(self.tmp, "decline")
        if decline:
            write(self.decline, "")
        hook = os.path.join(self.tmp, "hook.sh")
        write(hook, HOOK.format(log=self.log, decline=self.decline))
        os.chmod(hook, 0o755)
        self.driver = os.path.join(self.tmp, "drivers.d", "50-dpdk.conf")
        write(self.driver, DRIVER.format(hook=hook))
        self.conf = os.path.join(self.tmp, "driverfsd.conf")
        write(self.conf, "[PM]\nHookTimeout=10\n" + conf_extra)
        self.k = Kernel(self.tmp)
        self.d = Daemon(TESTBED, ["--config", self.conf], prepare=add_drivers,
                        extra_env=self.k.env(IDS))
        self.k.serve(self.d)

    def stop(self):
        self.k.stopped = True
        self.k.thread.join()
        self.d.stop()

    def hooks(self):
        try:
            with open(self.log) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def claimed_by(self):
        try:
            return os.path.basename(os.readlink(self.d.path("root", NIC_PLACE, "driver")))
        except FileNotFoundError:
            return None

    def wait(self, cond, what, timeout=20):
        end = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < end, f"{what}; hooks {self.hooks()}; {self.d.output()}"
            time.sleep(0.05)

    def hup(self):
        self.d.proc.send_signal(signal.SIGHUP)
        self.d.wait_status(lambda line: line == "STATUS=reloaded"
                           or line.startswith("STATUS=reload failed"))


def test_the_nic_is_moved_to_vfio_pci_claimed_and_given_back(tmp_path):
    e = Env(tmp_path)
    try:
        e.wait(lambda: e.claimed_by() == "dpdk-nic", "dpdk-nic never claimed the NIC")
        assert state(e.d)[:3] == ("vfio-pci", "vfio-pci\n", ["vfio-pci"])
        # its probe ran once, under vfio-pci (never under e1000e)
        assert e.hooks() == ["probe vfio-pci"]
        assert "dpdk-nic needs vfio-pci: 0000:00:1f.6 moved to it from e1000e" in e.d.output()
        with open(e.d.path("root", NIC_PLACE, "binding")) as f:
            report = f.read()
        assert "request: bind to vfio-pci" in report and "done: vfio-pci" in report, report

        # a reload that keeps the driver keeps the device where it is
        e.hup()
        e.wait(lambda: e.claimed_by() == "dpdk-nic", "not claimed again after the reload")
        assert state(e.d)[0] == "vfio-pci"
        assert "needs: 0000:00:1f.6 given back" not in e.d.output()

        # a reload without it: its remove runs, the NIC goes back to e1000e
        os.unlink(e.driver)
        e.hup()
        e.wait(lambda: state(e.d)[0] == "e1000e", "the NIC was not given back")
        assert state(e.d) == ("e1000e", "(null)\n", ["e1000e"], ["DRIVER=e1000e"])
        assert e.hooks()[-1] == "remove vfio-pci"
        # (logged once the restore returned: just after the kernel shows it)
        e.wait(lambda: "needs: 0000:00:1f.6 given back to e1000e" in e.d.output(),
               "the give-back was not logged")
        e.wait(lambda: e.claimed_by() == "e1000e", "the kernel's e1000e not shown")
    finally:
        e.stop()


def test_a_move_the_checks_refuse_is_not_tried_again(tmp_path):
    e = Env(tmp_path, conf_extra=f"[Binding]\nProtect={NIC}\n")
    try:
        e.wait(lambda: "not moved" in e.d.output(), "no move was tried")
        assert "dpdk-nic needs vfio-pci: 0000:00:1f.6 not moved: Device or resource busy" \
            in e.d.output()
        with open(e.d.path("root", NIC_PLACE, "binding")) as f:
            assert "is protected" in f.read()
        # offered again (a change event): no second move, no probe
        e.d.testbed.uevent("/sys/devices/" + NIC_PLACE, "change")
        e.d.wait_status(lambda line: line.startswith(f"STATUS=hotplug change /devices/{NIC_PLACE} "))
        assert e.d.output().count("needs vfio-pci: 0000:00:1f.6") == 1
        assert e.hooks() == []
        assert state(e.d)[:2] == ("e1000e", "(null)\n")
        assert e.claimed_by() == "e1000e"
    finally:
        e.stop()


def test_a_probe_that_declines_gives_the_device_back_once(tmp_path):
    e = Env(tmp_path, decline=True)
    try:
        e.wait(lambda: "given back to e1000e" in e.d.output(), "the NIC was not given back")
        e.wait(lambda: state(e.d)[0] == "e1000e" and e.claimed_by() == "e1000e",
               "the NIC is not e1000e's again")
        assert state(e.d) == ("e1000e", "(null)\n", ["e1000e"], ["DRIVER=e1000e"])
        assert e.hooks() == ["probe vfio-pci"]
        assert e.d.output().count("moved to it from e1000e") == 1
    finally:
        e.stop()


def test_a_bad_kernel_driver_is_a_config_error(tmp_path):
    os.makedirs(tmp_path / "drivers.d")
    write(str(tmp_path / "drivers.d" / "50-bad.conf"),
          "[Driver]\nName=x\nBus=pci\nKernelDriver=../vfio-pci\n")
    write(str(tmp_path / "driverfsd.conf"), "")
    r = subprocess.run([DRIVERFSD, "--check-config", "--config", str(tmp_path / "driverfsd.conf")],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "50-bad.conf:4: bad KernelDriver '../vfio-pci'" in r.stderr + r.stdout, r.stderr
