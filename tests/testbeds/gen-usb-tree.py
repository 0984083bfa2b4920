#!/usr/bin/python3
"""Generate usb-tree.umockdev: a USB tree two hubs deep on a Cannon Lake xHCI
controller, with a keyboard (descriptors of the real usbkbd.umockdev
recording) and a USB stick, plus the SATA controller that owns sda/host0-5
(so the stick is host6/sdb, as on a real desktop).

Run:  /usr/bin/python3 gen-usb-tree.py > usb-tree.umockdev
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tbgen import *  # noqa: E402,F401,F403

KVER = (6, 1)
KREL = "6.1.0-18-amd64"
PCI = "/devices/pci0000:00"
XHCI = PCI + "/0000:00:14.0"
AHCI = PCI + "/0000:00:17.0"
BSG_MAJOR = 248
HIDRAW_MAJOR = 245
DELL = (0x1028, 0x0869)

FUNCS = [
    dict(slot="0000:00:00.0", path=PCI + "/0000:00:00.0", root_uevent=True,
         vendor=0x8086, device=0x3ec2, revision=0x07, class_=0x060000, subsys=DELL,
         command=0x0006, status=0x2090, enable=0, caps=[(0xe0, "vendor", ())]),
    dict(slot="0000:00:14.0", path=XHCI,
         vendor=0x8086, device=0xa36d, revision=0x10, class_=0x0c0330, subsys=DELL,
         command=0x0006, status=0x0290, enable=1, driver="xhci_hcd", dma_bits=64,
         bars=[(0xa1100000, 0x10000, RES_MEM64)], irq=16, pin=1,
         caps=[(0x70, "pm", (0xc1c2,)), (0x80, "msi", (0x0086,))]),
    dict(slot="0000:00:17.0", path=AHCI,
         vendor=0x8086, device=0xa352, revision=0x10, class_=0x010601, subsys=DELL,
         command=0x0007, status=0x02b0, enable=1, driver="ahci", dma_bits=64,
         bars=[(0xa1130000, 0x2000, RES_MEM32), (0xa1134000, 0x100, RES_MEM32),
               (0x3090, 0x8, RES_IO), (0x3080, 0x4, RES_IO), (0x3060, 0x20, RES_IO),
               (0xa1133000, 0x800, RES_MEM32)], irq=16, pin=1,
         caps=[(0x80, "msi", (0x0080,)), (0x70, "pm", (0x0003, 0x0008))]),
]

# Kinesis Advantage keyboard (PI Engineering 05f3:0007): device + config
# descriptors exactly as in the usbkbd.umockdev recording
KBD_DESCRIPTORS = bytes.fromhex(
    "1201100100000008F305070020030000000109023B00020100A02009040000010301010009210001"
    "2101223F000705810308000809040100010300000009210001000122640007058203040008")

# report descriptor of interface 0: the HID boot keyboard (63 = 0x3f bytes,
# the length the recorded HID descriptor announces)
KBD_REPORT0 = bytes.fromhex(
    "05010906A101050719E029E71500250175019508810295017508810195057501050819012905910295"
    "017503910195067508150025650507190029658100C0")
# interface 1: System Control (id 1), Consumer Control (id 2) and a vendor
# collection (ids 3, 4); 100 = 0x64 bytes, the recorded length
KBD_REPORT1 = bytes.fromhex(
    "05010980A101850119812983150025017501950381029505810" "1C0"
    "050C0901A10185021500263C0219002A3C0275109501810" "0C0"
    "0600FF0901A1018503150026FF0075089507090281029507090391029507090" "4B102"
    "850426FF00950175080905810" "2C0")


def usb_tree(tb):
    rh2 = root_hub_descriptors("xhci2", KVER, 12)
    usb1, rh1_if = usb_device(
        tb, XHCI + "/usb1", 1, 1, rh2, "480",
        strings=dict(manufacturer="Linux %s xhci-hcd" % KREL, product="xHCI Host Controller",
                     serial="0000:00:14.0"),
        maxchild=12, ports=["hotplug"] * 6 + ["hardwired"] + ["not used"] * 5,
        root_hub=True, urbnum=152)
    rh3 = root_hub_descriptors("xhci3", KVER, 6)
    usb2, rh2_if = usb_device(
        tb, XHCI + "/usb2", 2, 1, rh3, "10000",
        strings=dict(manufacturer="Linux %s xhci-hcd" % KREL, product="xHCI Host Controller",
                     serial="0000:00:14.0"),
        maxchild=6, ports=["hotplug"] * 6, root_hub=True, urbnum=42)
    # xHCI pairs each USB2 port with the SuperSpeed port of the same connector
    for i in range(1, 7):
        rh1_if[0].link("usb1-port%d/peer" % i, rh2_if[0].path + "/usb2-port%d" % i)
        rh2_if[0].link("usb2-port%d/peer" % i, rh1_if[0].path + "/usb1-port%d" % i)

    # 1-1: Genesys Logic GL850G 4-port USB 2.0 hub (single TT)
    d = usb_dev_desc(0x0200, 9, 0, 1, 64, 0x05e3, 0x0608, 0x6060, 0, 1, 0)
    d += usb_config(1, 0xe0, 50, [hub_intf(4)])
    hub1, hub1_if = usb_device(tb, usb1.path + "/1-1", 1, 2, d, "480",
                               strings=dict(product="USB2.0 Hub"), maxchild=4,
                               ports=["unknown"] * 4, removable="removable",
                               port=usb_port_path(usb1.path, 1, 1, root_hub=True), urbnum=60)
    # 1-1.2: Terminus FE1.1s 4-port hub (single TT)
    d = usb_dev_desc(0x0200, 9, 0, 1, 64, 0x1a40, 0x0101, 0x0111, 0, 1, 0)
    d += usb_config(1, 0xe0, 50, [hub_intf(4)])
    hub2, _ = usb_device(tb, hub1.path + "/1-1.2", 1, 3, d, "480",
                         strings=dict(product="USB 2.0 Hub"), maxchild=4, ports=["unknown"] * 4,
                         removable="removable", port=usb_port_path(hub1.path, 1, 2), urbnum=55)

    # 1-1.2.1: the keyboard
    kbd, kbd_if = usb_device(tb, hub2.path + "/1-1.2.1", 1, 4, KBD_DESCRIPTORS, "12",
                             removable="removable", port=usb_port_path(hub2.path, 1, 1),
                             intf_drivers={0: "usbhid", 1: "usbhid"}, urbnum=21560)
    phys0 = "usb-0000:00:14.0-1.2.1/input0"
    hid0 = hid_device(tb, kbd_if[0].path, 0x0003, 0x05f3, 0x0007, 1, KBD_REPORT0,
                      "HID 05f3:0007", phys0)
    hidraw(tb, hid0, 0, HIDRAW_MAJOR)
    input_device(tb, hid0.path, 5, "HID 05f3:0007 Keyboard", phys0, (0x3, 0x05f3, 0x0007, 0x100),
                 {"ev": "120013", "key": "80000000000000 e0b0ffdf01cfffff fffffffffffffffe",
                  "msc": "10", "led": "1f"},
                 event=5, leds=("numlock", "capslock", "scrolllock", "compose", "kana"))
    phys1 = "usb-0000:00:14.0-1.2.1/input1"
    hid1 = hid_device(tb, kbd_if[1].path, 0x0003, 0x05f3, 0x0007, 2, KBD_REPORT1,
                      "HID 05f3:0007", phys1)
    hidraw(tb, hid1, 1, HIDRAW_MAJOR)
    input_device(tb, hid1.path, 6, "HID 05f3:0007 System Control", phys1,
                 (0x3, 0x05f3, 0x0007, 0x100),
                 {"ev": "13", "key": "c000 10000000000000 0", "msc": "10"}, event=6)
    input_device(tb, hid1.path, 7, "HID 05f3:0007 Consumer Control", phys1,
                 (0x3, 0x05f3, 0x0007, 0x100),
                 {"ev": "1f", "key": "3f000303ff 0 0 483ffff17aff32d bfd4444600000000 1 "
                                     "130ff38b17c000 677bfad9415fed 19ed68000004400 10000002",
                  "rel": "1040", "abs": "100000000", "msc": "10"}, event=7)

    # 1-1.2.3: SanDisk Cruzer Blade USB stick
    d = usb_dev_desc(0x0200, 0, 0, 0, 64, 0x0781, 0x5567, 0x0100, 1, 2, 3)
    d += usb_config(1, 0x80, 100, [usb_intf(0, 0, 8, 6, 0x50, [
        usb_ep(0x81, 2, 512, 0), usb_ep(0x02, 2, 512, 1)])])
    stick, stick_if = usb_device(tb, hub2.path + "/1-1.2.3", 1, 5, d, "480",
                                 strings=dict(manufacturer="SanDisk", product="Cruzer Blade",
                                              serial="4C530001230816115324"),
                                 removable="removable", port=usb_port_path(hub2.path, 1, 3),
                                 intf_drivers={0: "usb-storage"}, urbnum=1874)
    h6 = scsi_host(tb, stick_if[0].path, 6, "usb-storage", can_queue=1, sg_tablesize=2048,
                   unique_id=0)
    t = scsi_target(tb, h6, 6, 0, 0)
    sdev = scsi_device(tb, t, (6, 0, 0, 0), 0, "SanDisk", "Cruzer Blade", "1.00", "sd", 1,
                       BSG_MAJOR, rmb=True, version=6)
    scsi_disk_class(tb, sdev, cache="write through")
    sdb = block_disk(tb, sdev.path, "sdb", SD_MAJOR, 16, 30031872, diskseq=9, removable=1,
                     capability="1", events="media_change")
    block_partition(tb, sdb, 1, 2048, 30029824, 9)


def sata(tb):
    for port in range(1, 7):
        host = ata_port(tb, AHCI, port, port - 1, sata=True,
                        dev_class="ata" if port == 1 else None, proc_name="ahci")
        if port == 1:
            t = scsi_target(tb, host, 0, 0, 0)
            sdev = scsi_device(tb, t, (0, 0, 0, 0), 0, "ATA", "Samsung SSD 860", "4B6Q", "sd", 0,
                               BSG_MAJOR, version=5, queue_depth=32)
            scsi_disk_class(tb, sdev, fua=1)
            sda = block_disk(tb, sdev.path, "sda", SD_MAJOR, 0, 976773168, diskseq=1,
                             rotational=0)
            block_partition(tb, sda, 1, 2048, 1048576, 1, partname="EFI System Partition")
            block_partition(tb, sda, 2, 1050624, 975720448, 1)


def main():
    tb = Testbed(cpus_mask="ff", cpus_list="0-7")
    for d in FUNCS:
        pci_function(tb, d)
    pci_bus(tb, PCI + "/pci_bus/0000:00", PCI)
    usb_tree(tb)
    sata(tb)
    tb.write()


if __name__ == "__main__":
    assert len(KBD_REPORT0) == 0x3f and len(KBD_REPORT1) == 0x64, (len(KBD_REPORT0), len(KBD_REPORT1))
    main()
