# SPDX-License-Identifier: LGPL-2.1-or-later
"""A USB disk with three partitions plugged in behind the second hub of the
USB tree testbed and pulled out again: after each step the tree, the bus and
class views and the driver bindings are what the testbed says."""
import os


from hotplug_util import (HUB2, ROOT_HUB2, STICK, TESTBED, blocks, devpath, devpaths_in_mount,
                          devpaths_in_testbed, read, under, unplug_events, wait_event)

DISK = HUB2 + "/1-1.2.4"
PARTS = 3


def disk_blocks():
    """The stick's records made a second disk, sdc at port 4 (SCSI host 7),
    with sdc1..sdc3: parents first, as the kernel announces them."""
    out = []
    for b in (b for b in blocks(TESTBED) if under(b, STICK)):
        for old, new in (("1-1.2.3", "1-1.2.4"), ("devpath=1.2.3", "devpath=1.2.4"),
                         ("host6", "host7"), ("target6:0:0", "target7:0:0"),
                         ("6:0:0:0", "7:0:0:0"), ("sg1", "sg2"), ("001/005", "001/006"),
                         ("DEVNUM=005", "DEVNUM=006"), ("devnum=5\\n", "devnum=6\\n"),
                         ("4C530001230816115324", "4C530001230816119999"),
                         ("dev=189:4\\n", "dev=189:5\\n"), ("dev=248:1\\n", "dev=248:2\\n"),
                         ("dev=21:1\\n", "dev=21:2\\n"), ("dev=8:16\\n", "dev=8:32\\n"),
                         ("sdb", "sdc")):
            b = b.replace(old, new)
        tail = devpath(b).rsplit("/", 2)[-2:]
        if tail == ["1-1.2", "1-1.2.4"]:
            b = b.replace("E: MINOR=4\n", "E: MINOR=5\n")
        elif tail[0] in ("bsg", "scsi_generic"):
            b = b.replace("E: MINOR=1\n", "E: MINOR=2\n")
        elif tail[1] == "sdc":
            b = b.replace("E: MINOR=16\n", "E: MINOR=32\n")
        if tail[1] != "sdc1":
            out.append(b)
            continue
        for n in range(1, PARTS + 1):  # the stick's one partition, three times
            p = b.replace("sdc1", f"sdc{n}").replace("E: MINOR=17\n", f"E: MINOR={32 + n}\n")
            p = p.replace("dev=8:17\\n", f"dev=8:{32 + n}\\n").replace("PARTN=1\n", f"PARTN={n}\n")
            p = p.replace("partition=1\\n", f"partition={n}\\n")
            out.append(p)
    return out


def place_of(d, path):
    return os.path.realpath(d.path(path)) if os.path.lexists(d.path(path)) else None


def check_views(d, present):
    """Tree, bus and class views and bindings of the disk, present or not."""
    assert set(devpaths_in_mount(d)) == devpaths_in_testbed(d)
    tree = devpaths_in_mount(d)
    disk_place = d.path("root", ROOT_HUB2, "1-1.2.4")
    sdc = [p for p in tree if p.endswith("/block/sdc")]
    assert bool(sdc) == present, sdc
    views = {
        "bus/usb/devices/1-1.2.4": disk_place,
        "bus/usb/devices/1-1.2.4:1.0": os.path.join(disk_place, "1-1.2.4:1.0"),
        "bus/usb/drivers/usb-storage/1-1.2.4:1.0": os.path.join(disk_place, "1-1.2.4:1.0"),
        "bus/scsi/devices/7:0:0:0": None,
        "bus/scsi/drivers/sd/7:0:0:0": None,
        "class/block/devices/sdc": None,
        "class/block/disk/sdc": None,
    }
    for n in range(1, PARTS + 1):
        views[f"class/block/devices/sdc{n}"] = None
        views[f"class/block/partition/sdc{n}"] = None
    for view, place in views.items():
        if not present:
            assert place_of(d, view) is None, view
            continue
        got = place_of(d, view)
        assert got and got.startswith(disk_place + "/") or got == disk_place, (view, got)
        if place:
            assert got == place, (view, got)
    if not present:
        assert "1-1.2.4" not in os.listdir(d.path("root", ROOT_HUB2))
        assert "sdc" not in os.listdir(d.path("class", "block", "disk"))
        return
    sdc_dir = d.path("root", tree[sdc[0]])
    # partitions are children of their disk, with their nodes
    assert sorted(e for e in os.listdir(sdc_dir) if e.startswith("sdc")) == \
        [f"sdc{n}" for n in range(1, PARTS + 1)]
    for n in range(1, PARTS + 1):
        assert read(d, sdc_dir, f"sdc{n}", "dev") == f"8:{32 + n}\n"
        assert read(d, sdc_dir, f"sdc{n}", "devnode") == f"/dev/sdc{n}\n"
        assert place_of(d, f"class/block/partition/sdc{n}") == os.path.join(sdc_dir, f"sdc{n}")
    assert read(d, sdc_dir, "dev") == "8:32\n"
    # bindings: usb-storage on the interface, sd on the SCSI device
    scsi = os.path.dirname(sdc_dir)
    assert os.path.basename(scsi) == "7:0:0:0"
    assert place_of(d, os.path.join(scsi, "driver")) == d.path("bus", "scsi", "drivers", "sd")
    assert place_of(d, os.path.join(disk_place, "1-1.2.4:1.0", "driver")) == \
        d.path("bus", "usb", "drivers", "usb-storage")
    assert read(d, disk_place, "serial") == "4C530001230816119999\n"


def test_plug_and_unplug_a_disk_with_partitions(full):
    d = full
    sdb = sorted(os.listdir(d.path("class", "block", "devices")))
    check_views(d, present=False)
    # plug: umockdev sends each device's "add" as it adds it
    added = disk_blocks()
    for b in added:
        assert d.testbed.add_from_string(b + "\n")
        wait_event(d, "add", devpath(b))
    check_views(d, present=True)
    # unplug: the kernel announces children first, each bound device's
    # unbind before its remove
    unplug_events(d, sorted((devpath(b) for b in added), key=lambda p: -p.count("/")))
    d.testbed.remove_device("/sys" + DISK)
    check_views(d, present=False)
    # the other disk is where it was
    assert sorted(os.listdir(d.path("class", "block", "devices"))) == sdb
    assert "sdb1" in os.listdir(d.path("class", "block", "partition"))
