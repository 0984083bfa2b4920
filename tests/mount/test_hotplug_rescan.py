# SPDX-License-Identifier: LGPL-2.1-or-later
"""No lost state: when uevents are lost (a seqnum that never comes, or an
overrun socket), the daemon reconciles the tree with sysfs and reports
"STATUS=hotplug rescan <why> added=N removed=N changed=N"; the tree is then
the testbed's, with bus and class views and cached values up to date. The
events here are sent by the test (Sender), as udevd would: a rename's
"move" with DEVPATH_OLD among them."""
import os

import pytest

from harness import Daemon
from hotplug_util import (HUB2, KBD, ROOT_HUB2, STICK, TESTBED, Hidden, Sender, blocks, devpath,
                          devpaths_in_mount, devpaths_in_testbed, read, under, wait_rescan, without)

USB1 = "/devices/pci0000:00/0000:00:14.0/usb1"
PLACE = ROOT_HUB2


@pytest.fixture
def d(tmp_path):
    daemon = Daemon(without(tmp_path, KBD))  # the keyboard comes unannounced
    yield daemon
    daemon.stop()


def test_the_tree_at_start_is_the_testbeds(d):
    # what the other tests compare with
    assert set(devpaths_in_mount(d)) == devpaths_in_testbed(d)


def wait_sent(d, action, path, seqnum):
    d.wait_status(lambda l: l == f"STATUS=hotplug {action} {path} {seqnum}")


def test_a_seqnum_gap_rescans(d):
    sender = Sender(d)
    wait_sent(d, "change", USB1, sender.send("change", USB1))  # the count starts
    serial = read(d, "root", PLACE, "1-1.2.3", "serial")  # in the kernel's cache now
    bus_usb = os.listdir(d.path("bus", "usb", "devices"))  # a cached listing
    assert "1-1.2.1" not in bus_usb and "1-1.2.3" in bus_usb
    stick = [devpath(b) for b in blocks(TESTBED) if under(b, STICK)]
    # what the daemon never hears of: a keyboard plugged in, the stick
    # pulled out, a changed value
    with Hidden(d):
        for b in (b for b in blocks(TESTBED) if under(b, KBD)):
            assert d.testbed.add_from_string(b + "\n")
        d.testbed.remove_device("/sys" + STICK)
        d.testbed.set_attribute("/sys" + HUB2, "product", "Renamed Hub\n")
    # the events that told it were lost: the next one skips their seqnums,
    # and nothing fills the gap
    wait_sent(d, "change", USB1, sender.send("change", USB1, seqnum=sender.seqnum + 3))
    why = wait_rescan(d)
    assert why.startswith("seqnum-gap "), why
    n_kbd = sum(1 for b in blocks(TESTBED) if under(b, KBD))
    # the hub's product changed; so did the root hub's: udev sees the
    # keyboard's hub port as a new child (no value of its own changed)
    assert f"added={n_kbd} removed={len(stick)} " in why, why
    assert set(devpaths_in_mount(d)) == devpaths_in_testbed(d)
    assert read(d, "root", PLACE, "1-1.2.1", "idVendor") == "05f3\n"
    assert read(d, "root", PLACE, "product") == "Renamed Hub\n"
    assert not os.path.lexists(d.path("root", PLACE, "1-1.2.3"))
    with pytest.raises(FileNotFoundError):
        read(d, "root", PLACE, "1-1.2.3", "serial")
    assert serial  # it was there before
    bus_usb = os.listdir(d.path("bus", "usb", "devices"))
    assert "1-1.2.1" in bus_usb and "1-1.2.3" not in bus_usb, bus_usb
    assert "sdb" not in os.listdir(d.path("class", "block", "devices"))
    assert os.path.realpath(d.path("root", PLACE, "1-1.2.1", "1-1.2.1:1.0", "driver")) == \
        d.path("bus", "usb", "drivers", "usbhid")
    # events apply as before afterwards
    intf = KBD + "/1-1.2.1:1.0"  # bound to usbhid: unbound, then removed
    wait_sent(d, *sender.unplug([intf], {intf: sender.subsystem(intf)},
                                {intf: sender.driver(intf)}))
    assert not os.path.exists(d.path("root", PLACE, "1-1.2.1", "1-1.2.1:1.0"))


def test_events_out_of_order_are_no_gap(d):
    """udevd's workers finish out of order: a seqnum that comes late fills
    its gap, and no rescan follows."""
    sender = Sender(d)
    first = sender.send("change", USB1)
    wait_sent(d, "change", USB1, first)
    for late, early in ((first + 2, first + 1), (first + 4, first + 3)):
        sender.send("change", HUB2, seqnum=late)
        sender.send("change", HUB2, seqnum=early)
        wait_sent(d, "change", HUB2, early)
    # long past the grace period of the gaps the late ones opened
    import time
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        wait_sent(d, "change", USB1, sender.send("change", USB1))
    assert not [l for l in d.__dict__.get("status_backlog", []) if "rescan" in l]


def test_the_socket_overruns_in_a_flood(d):
    """Events the daemon's full socket could not take are dropped, as the
    kernel drops them on an overrun: the gap they leave brings a rescan, and
    the tree ends as the testbed is."""
    hub = [devpath(b) for b in blocks(TESTBED) if under(b, HUB2) and not under(b, KBD)]
    look = Sender(d)
    subsystems = {p: look.subsystem(p) for p in hub}
    drivers = {p: look.driver(p) for p in hub if look.driver(p)}
    look.close()
    assert drivers, "the hub's devices have drivers"
    sender = Sender(d, blocking=False)
    sender.send("change", USB1)
    for _ in range(30):
        sender.unplug(list(reversed(hub)), subsystems, drivers)
        sender.plug(hub, subsystems, drivers)
    assert sender.dropped, "the flood overran the socket"
    # the last events may be the lost ones: a later one shows the gap
    blocking = Sender(d, first_seqnum=sender.seqnum)
    wait_sent(d, "change", USB1, blocking.send("change", USB1))
    # the flood may have brought rescans before its end (too many lost at
    # once): the one that counts came after the last event lost
    why = wait_rescan(d, after=sender.last_dropped)
    assert why.startswith("seqnum-gap "), why
    assert set(devpaths_in_mount(d)) == devpaths_in_testbed(d)


def net_device(name, ifindex):
    """Its testbed record (a value's newline written as umockdev writes it)."""
    return (f"P: /devices/virtual/net/{name}\nE: INTERFACE={name}\nE: IFINDEX={ifindex}\n"
            f"E: SUBSYSTEM=net\nA: ifindex={ifindex}\\n\nA: address=6a:1c:0e:52:9d:31\\n\n"
            f"A: operstate=down\\n\nA: mtu=1500\\n\n")


def test_a_renamed_interface_moves(d):
    """A network interface renamed (`ip link set dummy0 name uplink0`, or
    udev naming a NIC): the kernel's "move" uevent carries the new path
    and the old one (DEVPATH_OLD), from which the device has gone; the
    tree follows, in root/ and in the class view (issue 35 item 6: a
    mutation dropping the old path's removal went unnoticed)."""
    sender = Sender(d)
    old, new = "/devices/virtual/net/dummy0", "/devices/virtual/net/uplink0"
    with Hidden(d):
        assert d.testbed.add_from_string(net_device("dummy0", 7))
    wait_sent(d, "add", old, sender.send("add", old))
    assert "dummy0" in os.listdir(d.path("class", "net", "devices"))
    assert old in devpaths_in_mount(d)
    with Hidden(d):
        d.testbed.remove_device("/sys" + old)
        assert d.testbed.add_from_string(net_device("uplink0", 7))
    wait_sent(d, "move", new, sender.send("move", new, more=[f"DEVPATH_OLD={old}"]))
    names = os.listdir(d.path("class", "net", "devices"))
    assert "uplink0" in names and "dummy0" not in names, names
    found = devpaths_in_mount(d)
    assert new in found and old not in found, sorted(found)
    assert read(d, "class", "net", "devices", "uplink0", "ifindex") == "7\n"
    assert set(found) == devpaths_in_testbed(d)
