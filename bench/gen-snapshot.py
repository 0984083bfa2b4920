#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes a synthetic, sysfs-shaped driverfs snapshot (docs/snapshot.md):
N devices in trees 3-6 deep under a few PCI-like roots, each with the 12
values driverfsd keeps of a device (a live tree holds these, and nothing of
the sysfs attributes it passes through), on a bus with a bound driver and
some in a class with an interface (3 links per device: subsystem, driver and
the bus or class entry).

With --attrs, each device also has the sysfs attributes a saved machine
keeps (format 2), as many as real hardware has (the recordings of
tests/testbeds and ../fixtures: 19 to 31 attributes per USB or PCI device):
about 14 read-only text values, 4 tunables (mode 0644), 1 root-only file, a
binary descriptor (64 to 200 bytes, base64) on PCI and USB devices, and on
one SCSI device in four a queue/ directory of 20 files with iosched/ under it.

    gen-snapshot.py [--attrs] N OUT.json [SEED]
"""
import base64
import json
import random
import sys


def main():
    args = sys.argv[1:]
    attrs = "--attrs" in args
    args = [a for a in args if a != "--attrs"]
    n = int(args[0])
    out = args[1]
    rnd = random.Random(int(args[2]) if len(args) > 2 else 1)
    buses = ["pci", "usb", "scsi", "platform"]
    drivers = {b: [f"{b}drv{i}" for i in range(4)] for b in buses}
    devices = [{"path": "", "power": "on", "values": {"name": "bench"}}]
    # breadth first: each device gets children until n, depths 3..6
    frontier = []
    count = 0
    roots = max(1, n // 5000)
    for r in range(roots):
        path = f"pci{r:04x}:00"
        devices.append(dev(path, "sys", None, rnd, count, attrs))
        frontier.append((path, 1))
        count += 1
    i = 0
    while count < n:
        parent, depth = frontier[i % len(frontier)]
        i += 1
        if depth >= 6 or (depth >= 3 and rnd.random() < 0.3):
            continue
        kids = rnd.randint(2, 12)
        for k in range(kids):
            if count >= n:
                break
            bus = rnd.choice(buses)
            path = f"{parent}/{bus}{count:07d}"
            devices.append(dev(path, bus, rnd.choice(drivers[bus]), rnd, count, attrs))
            frontier.append((path, depth + 1))
            count += 1
    doc = {
        "format": "driverfs-snapshot",
        "version": 2 if attrs else 1,
        "buses": [{"name": b, "drivers": [{"name": d, "kind": "kernel", "priority": 0}
                                          for d in sorted(drivers.get(b, []))]}
                  for b in sorted(buses + ["sys"])],
        "classes": [],
        "devices": devices,
    }
    with open(out, "w") as f:
        json.dump(doc, f)


def sysfs_attrs(bus, rnd, i):
    """(values, files, dirs) of a device's own sysfs attributes."""
    values = {
        "enable": "1", "msi_bus": "1", "local_cpus": "ff", "local_cpulist": "0-7",
        "power_state": "D0", "current_link_speed": "8.0 GT/s PCIe",
        "current_link_width": "4", "max_link_speed": "8.0 GT/s PCIe", "max_link_width": "4",
        "ari_enabled": "0", "consistent_dma_mask_bits": "64", "dma_mask_bits": "64",
        "broken_parity_status": "0", "devspec": "",
    }
    files = {
        "d3cold_allowed": {"mode": "0644", "text": "1\n"},
        "reset_method": {"mode": "0644", "text": "flr bus\n"},
        "driver_override": {"mode": "0444", "text": "(null)\n"},
        "autosuspend_delay_ms": {"mode": "0644", "text": "2000\n"},
        "rom_size": {"mode": "0400", "text": f"{rnd.randrange(1 << 16)}\n"},
    }
    if bus in ("pci", "usb"):
        blob = bytes(rnd.randrange(256) for _ in range(rnd.randint(64, 200)))
        files["descriptors" if bus == "usb" else "config"] = {
            "mode": "0444", "base64": base64.b64encode(blob).decode()}
    dirs = {}
    if bus == "scsi" and i % 4 == 0:
        queue = {f"q{k:02d}": str(rnd.randrange(4096)) for k in range(16)}
        dirs["queue"] = {
            "values": queue,
            "files": {"scheduler": {"mode": "0644", "text": "none [mq-deadline]\n"},
                      "nr_requests": {"mode": "0644", "text": "64\n"},
                      "read_ahead_kb": {"mode": "0644", "text": "128\n"},
                      "rotational": {"mode": "0644", "text": "0\n"}},
            "dirs": {"iosched": {"values": {"fifo_batch": "16", "front_merges": "1"}}},
        }
    return values, files, dirs


def dev(path, bus, driver, rnd, i, attrs=False):
    values = {
        "name": f"Synthetic device {i}",
        "vendor": f"0x{rnd.randrange(0x10000):04x}",
        "device": f"0x{rnd.randrange(0x10000):04x}",
        "class": f"0x{rnd.randrange(0x1000000):06x}",
        "revision": f"0x{rnd.randrange(256):02x}",
        "subsystem_vendor": f"0x{rnd.randrange(0x10000):04x}",
        "subsystem_device": f"0x{rnd.randrange(0x10000):04x}",
        "irq": str(rnd.randrange(256)),
        "numa_node": "0",
        "modalias": f"bench:v{i:08X}",
        "uevent": f"DRIVER={driver or ''}\nMODALIAS=bench:v{i:08X}",
        "resource": "0x00000000fe000000 0x00000000fe0fffff 0x0000000000040200",
    }
    d = {"path": path, "devpath": "/devices/" + path, "bus": bus}
    if driver:
        d["driver"] = driver
        d["kernel_driver"] = driver
    d["power"] = "on"
    d["values"] = values
    if attrs:
        more, files, dirs = sysfs_attrs(bus, rnd, i)
        d["values"] = dict(sorted({**values, **more}.items()))
        d["files"] = files
        if dirs:
            d["dirs"] = dirs
    return d


if __name__ == "__main__":
    main()
