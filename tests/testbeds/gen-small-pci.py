#!/usr/bin/python3
"""Generate small-pci.umockdev: a hand-built umockdev testbed of a small Intel
(Coffee Lake / Cannon Lake PCH, Dell Vostro 3470-like) PCI system.

The config space of each function is assembled by tbgen from the same numbers
that go into the text attributes, so `config`, `resource`, `irq`, ids and
uevent stay consistent.  Run:  /usr/bin/python3 gen-small-pci.py > small-pci.umockdev
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tbgen import Testbed, pci_function, pci_bus, RES_MEM32, RES_MEM64  # noqa: E402

DELL = (0x1028, 0x0869)  # Dell Vostro 3470

FUNCS = [
    dict(slot="0000:00:00.0", path="/devices/pci0000:00/0000:00:00.0", root_uevent=True,
         vendor=0x8086, device=0x3ec2, revision=0x07, class_=0x060000, subsys=DELL,
         command=0x0006, status=0x2090, enable=0,
         caps=[(0xe0, "vendor", ())]),
    dict(slot="0000:00:14.0", path="/devices/pci0000:00/0000:00:14.0",
         vendor=0x8086, device=0xa36d, revision=0x10, class_=0x0c0330, subsys=DELL,
         command=0x0006, status=0x0290, enable=1, driver="xhci_hcd", dma_bits=64,
         bars=[(0xa1100000, 0x10000, RES_MEM64)], irq=16, pin=1,
         caps=[(0x70, "pm", (0xc1c2,)), (0x80, "msi", (0x0086,))]),
    dict(slot="0000:00:1c.0", path="/devices/pci0000:00/0000:00:1c.0",
         vendor=0x8086, device=0xa338, revision=0xf0, class_=0x060400, subsys=DELL,
         header_type=0x01, buses=(0, 1, 1), mem_window=(0xa1200000, 0xa12fffff),
         command=0x0006, status=0x0010, enable=2, driver="pcieport", irq=17, pin=1,
         pcie_link=(3, 4),
         caps=[(0x40, "pcie", (4, 3, 4, True)), (0x80, "msi", (0x0080,)),
               (0x90, "ssvid", ()), (0xa0, "pm", (0xc803, 0x0000))]),
    dict(slot="0000:00:1f.6", path="/devices/pci0000:00/0000:00:1f.6",
         vendor=0x8086, device=0x15bc, revision=0x10, class_=0x020000, subsys=DELL,
         command=0x0006, status=0x0010, enable=1, driver="e1000e", dma_bits=64,
         bars=[(0xa1000000, 0x20000, RES_MEM32)], irq=18, pin=1,
         caps=[(0xc8, "pm", (0xc823, 0x0008)), (0xd0, "msi", (0x0080,))]),
    dict(slot="0000:01:00.0", path="/devices/pci0000:00/0000:00:1c.0/0000:01:00.0",
         vendor=0x8086, device=0xf1a8, revision=0x03, class_=0x010802, subsys=(0x8086, 0x390b),
         command=0x0006, status=0x0010, enable=1, driver="nvme", dma_bits=64,
         bars=[(0xa1200000, 0x4000, RES_MEM64)], irq=17, pin=1, pcie_link=(3, 4),
         caps=[(0x40, "pm", (0x0003, 0x0008)), (0x50, "msi", (0x0080,)),
               (0x70, "pcie", (0, 3, 4))]),
]


def main():
    tb = Testbed(cpus_mask="ff", cpus_list="0-7")  # an 8-thread machine
    for d in FUNCS:
        pci_function(tb, d)
    pci_bus(tb, "/devices/pci0000:00/pci_bus/0000:00", "/devices/pci0000:00")
    pci_bus(tb, "/devices/pci0000:00/0000:00:1c.0/pci_bus/0000:01",
            "/devices/pci0000:00/0000:00:1c.0")
    tb.write()


if __name__ == "__main__":
    main()
