#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes a synthetic, sysfs-shaped driverfs snapshot (docs/snapshot.md):
N devices in trees 3-6 deep under a few PCI-like roots, each with about 12
attribute values, on a bus with a bound driver and some in a class with an
interface (3 links per device: subsystem, driver and the bus or class entry).

    gen-snapshot.py N OUT.json [SEED]
"""
import json
import random
import sys


def main():
    n = int(sys.argv[1])
    out = sys.argv[2]
    rnd = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    buses = ["pci", "usb", "scsi", "platform"]
    drivers = {b: [f"{b}drv{i}" for i in range(4)] for b in buses}
    devices = [{"path": "", "power": "on", "values": {"name": "bench"}}]
    # breadth first: each device gets children until n, depths 3..6
    frontier = []
    count = 0
    roots = max(1, n // 5000)
    for r in range(roots):
        path = f"pci{r:04x}:00"
        devices.append(dev(path, "sys", None, rnd, count))
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
            devices.append(dev(path, bus, rnd.choice(drivers[bus]), rnd, count))
            frontier.append((path, depth + 1))
            count += 1
    doc = {
        "format": "driverfs-snapshot",
        "version": 1,
        "buses": [{"name": b, "drivers": [{"name": d, "kind": "kernel", "priority": 0}
                                          for d in sorted(drivers.get(b, []))]}
                  for b in sorted(buses + ["sys"])],
        "classes": [],
        "devices": devices,
    }
    with open(out, "w") as f:
        json.dump(doc, f)


def dev(path, bus, driver, rnd, i):
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
    return d


if __name__ == "__main__":
    main()
