# SPDX-License-Identifier: LGPL-2.1-or-later
"""The example system of the 2002 driver-model paper (testbeds/2002-example),
spelled out: the paths a user of that paper would look for. test_testbeds.py
checks every device generically; this names the ones that matter."""
import os

import pytest

from harness import CTL, Daemon

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "2002-example.umockdev")
SCSI = "pci0000:00/0000:00:0a.0/host0"


@pytest.fixture(scope="module")
def d():
    daemon = Daemon(TESTBED)
    yield daemon
    daemon.stop()


def read(d, *parts):
    with open(d.path(*parts)) as f:
        return f.read()


def test_scsi_bus_zero_disk_tape_and_cd_writer(d):
    disk = d.path("root", SCSI, "target0:0:0", "0:0:0:0")
    # the disk and its two partitions, glue directory block/ skipped
    assert {"sda1", "sda2"} <= set(os.listdir(os.path.join(disk, "sda")))
    assert read(d, "root", SCSI, "target0:0:0", "0:0:0:0", "sda", "sda1", "devnode") == \
        "/dev/sda1\n"
    # three class devices of the disk are all called 0:0:0:0: each gets its class
    for cls in ("scsi_disk", "scsi_device", "bsg"):
        assert os.path.isdir(os.path.join(disk, f"{cls}:0:0:0:0")), cls
        # and the class view lists it under the kernel's name
        assert os.path.realpath(d.path("class", cls, "devices", "0:0:0:0")) == \
            os.path.join(disk, f"{cls}:0:0:0:0")
    tape = d.path("root", SCSI, "target0:0:1", "0:0:1:0")
    assert os.path.isdir(os.path.join(tape, "st0")) and os.path.isdir(os.path.join(tape, "nst0"))
    assert os.path.lexists(d.path("class", "scsi_tape", "st", "st0"))
    assert os.path.lexists(d.path("class", "scsi_tape", "nst", "nst0"))
    cd = d.path("root", SCSI, "target0:0:4", "0:0:4:0", "sr0")
    assert os.path.realpath(d.path("class", "block", "disk", "sr0")) == cd
    assert os.path.realpath(d.path("class", "block", "partition", "sda2")).endswith("/sda/sda2")
    # the disk's driver is the kernel's sd, on the scsi bus
    assert os.path.realpath(os.path.join(disk, "driver")) == d.path("bus", "scsi", "drivers", "sd")


def test_usb_card_reader_on_the_uhci_bus(d):
    reader = d.path("root", "pci0000:00", "0000:00:07.2", "usb1", "1-1")
    assert read(d, "root", "pci0000:00", "0000:00:07.2", "usb1", "1-1", "idVendor") == "0781\n"
    assert "SmartMedia" in read(d, "root", "pci0000:00", "0000:00:07.2", "usb1", "1-1", "name")
    assert os.path.realpath(d.path("bus", "usb", "devices", "1-1")) == reader


def test_system_and_virtual_containers(d):
    assert os.path.isdir(d.path("root", "system", "cpu", "cpu0"))
    assert os.path.isdir(d.path("root", "virtual", "lo"))
    assert os.path.realpath(d.path("class", "net", "devices", "lo")) == d.path("root", "virtual", "lo")
    assert os.path.realpath(d.path("root", "virtual", "lo", "subsystem")) == d.path("class", "net")
    assert os.path.realpath(d.path("root", "system", "subsystem")) == d.path("bus", "sys")


def test_input_and_tty_interfaces(d):
    assert os.path.lexists(d.path("class", "input", "event", "event1"))
    assert os.path.lexists(d.path("class", "input", "mouse", "mouse0"))
    assert os.path.lexists(d.path("class", "tty", "ttyS", "ttyS0"))
    assert read(d, "class", "tty", "ttyS", "ttyS0", "dev") == "4:64\n"


def test_ethernet_audio_and_graphics(d):
    assert os.path.isdir(d.path("root", "pci0000:00", "0000:00:0b.0", "eth0"))
    assert os.path.isdir(d.path("root", "pci0000:00", "0000:00:0c.0", "card0", "midiC0D0"))
    assert "G400" in read(d, "root", "pci0000:00", "0000:00:01.0", "0000:01:00.0", "name")




def ctl(d, *args):
    import subprocess
    return subprocess.run([CTL, "-m", d.mnt, *args], capture_output=True, text=True)


def test_driverfsctl_info(d):
    r = ctl(d, "info", "sda")  # a class device, by its name
    assert r.returncode == 1  # a class name is not a bus id
    r = ctl(d, "info", SCSI + "/target0:0:0/0:0:0:0/sda")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "subsystem            block" in lines
    assert "interface            block/disk" in lines
    assert "devnode: /dev/sda" in lines
    r = ctl(d, "info", "0:0:0:0")  # a bus id on the scsi bus
    assert r.returncode == 0 and "driver               sd" in r.stdout.splitlines(), r.stdout


def test_driverfsctl_dot_renders(d):
    import shutil
    import subprocess
    r = ctl(d, "dot")
    assert r.returncode == 0, r.stderr
    listed = ctl(d, "list").stdout.split()
    # one edge per device but root, each from its parent
    edges = [line for line in r.stdout.splitlines() if " -> " in line]
    assert len(edges) == len(listed) - 1
    assert f'  "{SCSI}" -> "{SCSI}/target0:0:0";' in edges
    if shutil.which("dot"):
        svg = subprocess.run(["dot", "-Tsvg"], input=r.stdout, capture_output=True, text=True)
        assert svg.returncode == 0 and "<svg" in svg.stdout, svg.stderr
