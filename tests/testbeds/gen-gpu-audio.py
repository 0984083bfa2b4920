#!/usr/bin/python3
"""Generate gpu-audio.umockdev: an x86 desktop's discrete GPU with its HDMI
audio function (an AMD Radeon RX 6600, Navi 23, behind a root port), the
two functions in one IOMMU group, and the device link snd_hda_intel makes
from the audio function (consumer) to the GPU (supplier): stateless, with
runtime PM (pci_create_device_link(): DL_FLAG_STATELESS | DL_FLAG_PM_RUNTIME),
so its status is "not tracked" and it is never removed on its own.

Run:  /usr/bin/python3 gen-gpu-audio.py > gpu-audio.umockdev
      /usr/bin/python3 gen-gpu-audio.py --expected > gpu-audio.expected
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tbgen import Testbed, devlink, pci_bus, pci_function, RES_MEM64  # noqa: E402

SAPPHIRE = (0x1da2, 0xe448)

FUNCS = [
    dict(slot="0000:00:00.0", path="/devices/pci0000:00/0000:00:00.0", root_uevent=True,
         vendor=0x1022, device=0x1480, revision=0x00, class_=0x060000, subsys=(0x1022, 0x1480),
         command=0x0006, status=0x0010, enable=0, iommu_group=0,
         caps=[(0x40, "vendor", ())]),
    dict(slot="0000:00:01.1", path="/devices/pci0000:00/0000:00:01.1",
         vendor=0x1022, device=0x1483, revision=0x00, class_=0x060400, subsys=(0x1022, 0x1453),
         header_type=0x01, buses=(0, 1, 1), mem_window=(0xfcb00000, 0xfcbfffff),
         command=0x0407, status=0x0010, enable=2, driver="pcieport", irq=28, pin=1,
         pcie_link=(4, 16), iommu_group=1,
         caps=[(0x50, "pm", (0xc803, 0x0000)), (0x58, "pcie", (4, 4, 16, True)),
               (0xa0, "msi", (0x0081,))]),
    dict(slot="0000:01:00.0", path="/devices/pci0000:00/0000:00:01.1/0000:01:00.0",
         vendor=0x1002, device=0x73ff, revision=0xc7, class_=0x030000, subsys=SAPPHIRE,
         command=0x0407, status=0x0010, enable=1, driver="amdgpu", dma_bits=44, boot_vga=1,
         bars=[(0xe0000000, 0x10000000, RES_MEM64), (0xf0000000, 0x200000, RES_MEM64)],
         irq=76, pin=1, pcie_link=(4, 16), iommu_group=2,
         caps=[(0x48, "vendor", ()), (0x50, "pm", (0x7e03, 0x0008)),
               (0x64, "pcie", (0, 4, 16)), (0xa0, "msi", (0x0080,))]),
    dict(slot="0000:01:00.1", path="/devices/pci0000:00/0000:00:01.1/0000:01:00.1",
         vendor=0x1002, device=0xab28, revision=0x00, class_=0x040300, subsys=(0x1002, 0xab28),
         command=0x0406, status=0x0010, enable=1, driver="snd_hda_intel", dma_bits=64,
         bars=[(0xfcb20000, 0x4000, RES_MEM64)], irq=80, pin=2, pcie_link=(4, 16),
         iommu_group=2,
         caps=[(0x48, "vendor", ()), (0x50, "pm", (0x7e03, 0x0008)),
               (0x64, "pcie", (0, 4, 16)), (0xa0, "msi", (0x0080,))]),
]


def main():
    tb = Testbed(cpus_mask="ffff", cpus_list="0-15")
    devs = {d["slot"]: pci_function(tb, d) for d in FUNCS}
    pci_bus(tb, "/devices/pci0000:00/pci_bus/0000:00", "/devices/pci0000:00")
    pci_bus(tb, "/devices/pci0000:00/0000:00:01.1/pci_bus/0000:01",
            "/devices/pci0000:00/0000:00:01.1")
    devlink(tb, devs["0000:01:00.0"], devs["0000:01:00.1"], "pci", "pci",
            status="not tracked", runtime_pm=True, auto_remove_on="never")
    tb.write()


if __name__ == "__main__":
    main()
