# SPDX-License-Identifier: LGPL-2.1-or-later
"""A devpath on its way to sd_notify (USB tree testbed,
tests/testbeds/usb-tree.umockdev, plus one device): a device whose name
carries newlines followed by MAINPID= and STATUS= lines is reported by the
hotplug helper's STATUS= line with its control characters escaped, and adds
no field of its own to the daemon's notification.

The device is in the testbed before the daemon starts and reaches the
helper through --coldplug: umockdev's uevents cannot carry such a devpath
(its sender cuts the message's fields at newlines)."""
import os
import signal

import pytest

from harness import Daemon, UMockdev
from hotplug_util import HUB2, TESTBED

# what a name with newlines would add to an sd_notify message unescaped
FORGED = ("MAINPID=1", "STATUS=forged")
NAME = "1-1.2.9\n" + "\n".join(FORGED)
DEVPATH = HUB2 + "/" + NAME


@pytest.fixture
def d():
    testbed = UMockdev.Testbed.new()
    assert testbed.add_from_file(TESTBED)
    assert testbed.add_device("usb", NAME, "/sys" + HUB2,
                              ["idVendor", "dead", "idProduct", "beef"],
                              ["DEVTYPE", "usb_device"]), "expected umockdev to add the device"
    daemon = Daemon(None, ["--hotplug-helper", "/bin/true", "--coldplug"], testbed=testbed)
    yield daemon
    daemon.stop()


def test_a_devpath_with_newlines_adds_no_notify_field(d):
    # the report starts as the devpath does, escaped or not
    line = d.wait_status(lambda line: line.startswith(f"STATUS=helper add {HUB2}/1-1.2.9"))
    escaped = DEVPATH.replace("\n", "\\n")
    assert line == f"STATUS=helper add {escaped} 0", \
        f"expected the devpath's newlines escaped in one STATUS= line: {line!r}"
    # every line of the daemon's notifications so far: none was forged
    lines = d.__dict__.get("status_backlog", [])
    for forged in FORGED:
        assert forged not in lines, \
            f"expected no {forged!r} line in the notifications: {lines!r}"
    # the device is served, the daemon with it
    assert NAME in os.listdir(d.path("root", "pci0000:00/0000:00:14.0/usb1/1-1/1-1.2"))
    # the helper's reports of every other device come too (read, so that
    # the daemon is not left blocked on a full notify socket), and the
    # daemon ends cleanly
    serving = d.wait_status(lambda line: line.startswith("STATUS=serving "))
    devices = int(serving.split()[1])
    for _ in range(devices - 2):  # neither the root nor the device above
        d.wait_status(lambda line: line.startswith("STATUS=helper add "))
    assert d.terminate(signal.SIGTERM) == 0, d.output()
