#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Generate values.umockdev: the values and names real machines have that a
rebuilt value or a database name gets wrong (README.md beside this file).

An ICH7-era PC: a PCIe root port with all three windows (17 `resource`
lines), an SR-IOV NIC behind it (VF BARs on lines 7 and 10), an IDE
controller in legacy mode (the one-byte control ports 0x3f6 and 0x376), and
an EHCI controller whose root hub holds USB devices the udev hwdb knows only
in part: a model it lacks, a vendor it lacks (with and without a
manufacturer string), no strings at all, a product string longer than
lsusb's buffer, and a device without a device node (libusb does not list
it). One device has bMaxPower as kernels before 3.x padded it ("  2mA").

Run:  /usr/bin/python3 gen-values.py > values.umockdev
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tbgen import (PCIE_ENDPOINT, PCIE_ROOT_PORT, RES_IO, RES_IO_FIXED, RES_MEM32,  # noqa: E402
                   RES_MEM64_PREF, Testbed, pci_bus, pci_function, root_hub_descriptors,
                   usb_config, usb_dev_desc, usb_device, usb_ep, usb_intf, usb_port_path)

KVER = (6, 1)
KREL = "6.1.0-18-amd64"
PCI = "/devices/pci0000:00"
RP = PCI + "/0000:00:1c.0"
NIC = RP + "/0000:01:00.0"
EHCI = PCI + "/0000:00:1d.7"
IDE = PCI + "/0000:00:1f.1"
LENOVO = (0x17aa, 0x2009)

FUNCS = [
    dict(slot="0000:00:00.0", path=PCI + "/0000:00:00.0", root_uevent=True,
         vendor=0x8086, device=0x27a0, revision=0x03, class_=0x060000, subsys=LENOVO,
         command=0x0106, status=0x2090, enable=0, caps=[(0xe0, "vendor", ())]),
    # root port with an I/O, a memory and a 64-bit prefetchable window
    dict(slot="0000:00:1c.0", path=RP,
         vendor=0x8086, device=0x27d0, revision=0x02, class_=0x060400, subsys=LENOVO,
         header_type=0x81, buses=(0, 1, 1), io_window=(0x2000, 0x2fff),
         mem_window=(0xe4000000, 0xe40fffff), pref_window=(0xc0000000, 0xc03fffff),
         pref64=True, command=0x0107, status=0x0010, enable=2, driver="pcieport", irq=16,
         pin=1, pcie_link=(1, 1),
         caps=[(0x40, "pcie", (PCIE_ROOT_PORT, 1, 1, True)), (0x80, "msi", (0x0080,)),
               (0xa0, "pm", (0xc802, 0x0000))]),
    # 82576 NIC, SR-IOV physical function: BAR0, BAR2 (I/O), BAR3 and the
    # 64-bit prefetchable VF BAR0 and VF BAR3 (eight VFs of 16K each)
    dict(slot="0000:01:00.0", path=NIC,
         vendor=0x8086, device=0x10c9, revision=0x01, class_=0x020000, subsys=(0x8086, 0xa03c),
         command=0x0507, status=0x0010, enable=1, driver="igb", dma_bits=64,
         bars=[(0xe4000000, 0x20000, RES_MEM32), (0x2000, 0x20, RES_IO, 2),
               (0xe4080000, 0x4000, RES_MEM32, 3)],
         vf_bars=[(0xc0000000, 0x20000, RES_MEM64_PREF, 0),
                  (0xc0020000, 0x20000, RES_MEM64_PREF, 3)],
         irq=16, pin=1, pcie_link=(1, 1),
         caps=[(0x40, "pm", (0xc823, 0x2008)), (0x50, "msi", (0x0180,)),
               (0x70, "msix", (10, 3, 0x0000)), (0xa0, "pcie", (PCIE_ENDPOINT, 1, 1))],
         extra={"sriov_drivers_autoprobe": "1\n", "sriov_numvfs": "0\n",
                "sriov_offset": "128\n", "sriov_stride": "2\n", "sriov_totalvfs": "7\n",
                "sriov_vf_device": "10ca\n", "sriov_vf_total_msix": "0\n"}),
    dict(slot="0000:00:1d.7", path=EHCI,
         vendor=0x8086, device=0x27cc, revision=0x02, class_=0x0c0320, subsys=LENOVO,
         command=0x0106, status=0x0290, enable=1, driver="ehci-pci",
         bars=[(0xe4444000, 0x400, RES_MEM32)], irq=23, pin=4,
         caps=[(0x50, "pm", (0xc9c2, 0x0000))]),
    # ICH7 IDE in legacy mode: the kernel's fixed regions, no BAR registers
    dict(slot="0000:00:1f.1", path=IDE,
         vendor=0x8086, device=0x27df, revision=0x02, class_=0x01018a, subsys=LENOVO,
         command=0x0005, status=0x0288, enable=1, driver="ata_piix",
         bars=[(0x1f0, 8, RES_IO_FIXED, 0), (0x3f6, 1, RES_IO_FIXED, 1),
               (0x170, 8, RES_IO_FIXED, 2), (0x376, 1, RES_IO_FIXED, 3),
               (0x1810, 0x10, RES_IO, 4)], irq=16, pin=1),
]

# a product string past lsusb's 128-byte buffer (lsusb shows 127 bytes of it)
LONG_PRODUCT = ("USB 3.2 Gen 1 Flash Drive with Hardware Write Protection Switch and "
                "Dual Interface, Model FD-32G-WP-UC, Firmware Revision 1.08, Lot 4711")


def disk_intf():
    return usb_intf(0, 0, 8, 6, 0x50, [usb_ep(0x81, 2, 512, 0), usb_ep(0x02, 2, 512, 0)])


def vendor_intf():
    return usb_intf(0, 0, 0xff, 0xff, 0xff, [usb_ep(0x81, 2, 512, 0), usb_ep(0x01, 2, 512, 0)])


# port, ids, string indices (manufacturer, product, serial), strings, speed,
# config attributes and power (2 mA units), interface
USB = [
    # the hwdb has the vendor, not the model: "Nokia Mobile Phones N78"
    (1, 0x0421, 0x0094, (1, 2, 3),
     dict(manufacturer="Nokia", product="N78", serial="355674020000000",
          configuration="Default"), "480", 0xc0, 250, vendor_intf()),
    # the hwdb has neither and the device no manufacturer: "USB DISK 3.2"
    (2, 0x346d, 0x5678, (0, 2, 3),
     dict(product="USB DISK 3.2", serial="7090501412158553061"), "480", 0x80, 150, disk_intf()),
    # the hwdb has neither: manufacturer and product, "YICHIP Wireless Device"
    (3, 0x3151, 0x3020, (1, 2, 0),
     dict(manufacturer="YICHIP", product="Wireless Device"), "12", 0xa0, 50,
     usb_intf(0, 0, 3, 1, 1, [usb_ep(0x81, 3, 8, 1)])),
    # the hwdb has the vendor, the device no product string
    (4, 0x0421, 0x04ff, (1, 0, 0), dict(manufacturer="Nokia"), "480", 0xc0, 250, vendor_intf()),
    # nothing anywhere: lsusb prints no name
    (5, 0x0000, 0x0000, (0, 0, 0), {}, "12", 0x80, 1, vendor_intf()),
    # the stick of port 2 again, without a device node
    (6, 0x346d, 0x5678, (0, 2, 3),
     dict(product="USB DISK 3.2", serial="7090501412158553062"), "480", 0x80, 150, disk_intf()),
    # a product string lsusb cuts
    (7, 0x346d, 0x5679, (0, 2, 0), dict(product=LONG_PRODUCT), "480", 0x80, 150, disk_intf()),
]
NO_NODE = {6}
PADDED_POWER = {5: "  2mA\n"}   # "%3dmA", as kernels before 3.x wrote it


def replace_attr(dev, name, value):
    for i, (key, seq, t, n, _) in enumerate(dev.attrs):
        if t == "A" and n == name:
            dev.attrs[i] = (key, seq, t, n, value)
            return
    raise KeyError(name)


def usb(tb):
    rh = root_hub_descriptors("ehci", KVER, 8)
    usb1, _ = usb_device(tb, EHCI + "/usb1", 1, 1, rh, "480",
                         strings=dict(manufacturer="Linux %s ehci_hcd" % KREL,
                                      product="EHCI Host Controller", serial="0000:00:1d.7"),
                         maxchild=8, root_hub=True, urbnum=88)
    for port, vid, pid, (iman, iprod, iser), strings, speed, attrs, power, intf in USB:
        iconf = 4 if "configuration" in strings else 0
        d = usb_dev_desc(0x0200, 0, 0, 0, 64, vid, pid, 0x0100, iman, iprod, iser)
        d += usb_config(1, attrs, power, [intf], iconf=iconf)
        dev, _ = usb_device(tb, "%s/1-%d" % (usb1.path, port), 1, port + 1, d, speed,
                            strings=strings, removable="removable",
                            port=usb_port_path(usb1.path, 1, port, root_hub=True), urbnum=12)
        if port in NO_NODE:
            dev.devname = dev.node = None
        if port in PADDED_POWER:
            replace_attr(dev, "bMaxPower", PADDED_POWER[port])


def main():
    tb = Testbed(cpus_mask="3", cpus_list="0-1")
    for d in FUNCS:
        pci_function(tb, d)
    pci_bus(tb, PCI + "/pci_bus/0000:00", PCI)
    pci_bus(tb, RP + "/pci_bus/0000:01", RP)
    usb(tb)
    tb.write()


if __name__ == "__main__":
    main()
