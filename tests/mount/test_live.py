# SPDX-License-Identifier: LGPL-2.1-or-later
"""The live smoke test: driverfsd on this machine's own /sys, compared with
what lspci reports (DESIGN.md section 10)."""
import os
import shutil
import subprocess

import pytest

from harness import Daemon


@pytest.fixture(scope="module")
def d():
    if not os.path.isdir("/sys/bus/pci/devices") or not os.listdir("/sys/bus/pci/devices"):
        pytest.skip("this machine has no PCI devices")
    daemon = Daemon(None)
    yield daemon
    daemon.stop()


@pytest.mark.skipif(shutil.which("lspci") is None, reason="lspci (pciutils) is not installed")
def test_every_lspci_function_with_its_ids(d):
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
        with open(os.path.join(base, "devpath")) as f:
            assert "/sys" + f.read().strip() == os.path.realpath(f"/sys/bus/pci/devices/{slot}")


def test_find_walks_the_whole_mount(d):
    r = subprocess.run(["find", d.mnt], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert len(r.stdout.splitlines()) > 20
    r = subprocess.run(["find", d.mnt, "-xtype", "l"], capture_output=True, text=True)
    assert r.stdout == "", "dangling links: " + r.stdout
