# SPDX-License-Identifier: LGPL-2.1-or-later
"""A user driver lets a device go once the kernel binds a driver to it, on
the server testbed: pci-pm claims the unbound AST bridge function; after
the kernel binds a driver to it (the testbed's driver link and DRIVER=
change, and a bind uevent, or no uevent at all), a whole-system suspend
leaves its PMCSR and config header untouched.

Runs under umockdev-wrapper: uevents are injected from this process."""
import os

import pytest

from harness import Daemon, pci_pmcsr
from hotplug_util import event

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "server-2dom.umockdev")
AST_BRIDGE = "pci0000:00/0000:00:1c.0/0000:05:00.0"  # no kernel driver, PM capability at 0x50
SLOT = "0000:05:00.0"


@pytest.fixture
def d():
    daemon = Daemon(TESTBED)
    yield daemon
    daemon.stop()


def claimed(d):
    return os.path.lexists(d.path("bus", "pci", "drivers", "pci-pm", SLOT))


def kernel_binds(d, driver):
    """Plays the kernel binding @driver to the function: the driver link,
    then DRIVER= in its uevent (a bind uevent is the caller's to send)."""
    root = d.testbed.get_root_dir()
    sysdir = os.path.join(root, "sys", "devices", AST_BRIDGE)
    target = os.path.join(root, "sys", "bus", "pci", "drivers", driver)
    os.makedirs(target, exist_ok=True)
    os.symlink(os.path.relpath(target, sysdir), os.path.join(sysdir, "driver"))
    with open(os.path.join(sysdir, "uevent")) as f:
        uevent = f.read()
    d.testbed.set_attribute("/sys/devices/" + AST_BRIDGE, "uevent",
                            uevent.rstrip("\n") + f"\nDRIVER={driver}\n")


def suspend_and_resume_all(d):
    with open(d.path("power"), "w") as f:
        f.write("suspend")
    sys_devices = os.path.join(d.testbed.get_root_dir(), "sys", "devices")
    during = pci_pmcsr(sys_devices, AST_BRIDGE)
    with open(d.path("power"), "w") as f:
        f.write("resume")
    return during


def test_bind_event_ends_the_claim(d):
    assert claimed(d), "pci-pm did not claim the unbound bridge function"
    sys_devices = os.path.join(d.testbed.get_root_dir(), "sys", "devices")
    before = pci_pmcsr(sys_devices, AST_BRIDGE)
    kernel_binds(d, "pcieport")
    event(d, "bind", "/devices/" + AST_BRIDGE)
    pmcsr, header = suspend_and_resume_all(d)
    assert pmcsr & 3 == 0, f"PMCSR {pmcsr:#06x}: D3hot written behind pcieport"
    assert (pmcsr, header) == before, "config space written behind pcieport"
    assert not claimed(d), "pci-pm still holds the function the kernel bound"
    with open(d.path("root", AST_BRIDGE, "kernel_driver")) as f:
        assert f.read() == "pcieport\n"
    assert os.readlink(d.path("root", AST_BRIDGE, "driver")).endswith("bus/pci/drivers/pcieport")


def test_bind_without_event_ends_the_claim_at_suspend(d):
    """The bind uevent is late (still queued): suspend looks at sysfs."""
    assert claimed(d), "pci-pm did not claim the unbound bridge function"
    sys_devices = os.path.join(d.testbed.get_root_dir(), "sys", "devices")
    before = pci_pmcsr(sys_devices, AST_BRIDGE)
    kernel_binds(d, "pcieport")
    pmcsr, header = suspend_and_resume_all(d)
    assert pmcsr & 3 == 0, f"PMCSR {pmcsr:#06x}: D3hot written behind pcieport"
    assert (pmcsr, header) == before, "config space written behind pcieport"
    assert not claimed(d), "pci-pm kept the function after finding it bound"
