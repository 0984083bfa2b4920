#!/usr/bin/python3
"""Generate small-pci.umockdev: a hand-built umockdev testbed of a small Intel
(Coffee Lake / Cannon Lake PCH, Dell Vostro 3470-like) PCI system.

The config space of each function is assembled here from the same numbers that
go into the text attributes, so `config`, `resource`, `irq`, ids and uevent stay
consistent.  Run:  /usr/bin/python3 gen-small-pci.py > small-pci.umockdev
"""

import struct
import sys

CPUS_MASK = "ff"      # local_cpus of an 8-thread machine (nr_cpu_ids = 8)
CPUS_LIST = "0-7"

# IORESOURCE_* flag combinations as the kernel prints them in `resource`
RES_MEM32 = 0x00040200          # IORESOURCE_MEM | IORESOURCE_SIZEALIGN
RES_MEM64 = 0x00140204          # ... | IORESOURCE_MEM_64 | PCI_BASE_ADDRESS_MEM_TYPE_64
RES_BRIDGE_MEM = 0x00000200     # bridge memory window: IORESOURCE_MEM

# resource lines: 13 for a normal function (6 BARs, ROM, 6 SR-IOV BARs),
# 17 for a bridge (+ 4 bridge windows: I/O, mem, prefetchable mem, unused)
N_RES = 13
N_RES_BRIDGE = 17
RES_BRIDGE_IO, RES_BRIDGE_MEM_IDX, RES_BRIDGE_PREF = 13, 14, 15


class Cfg:
    def __init__(self):
        self.b = bytearray(256)

    def w8(self, off, v):
        self.b[off] = v

    def w16(self, off, v):
        struct.pack_into("<H", self.b, off, v)

    def w32(self, off, v):
        struct.pack_into("<I", self.b, off, v)


def pm_cap(c, off, nxt, pmc, pmcsr=0x0008):
    c.w8(off, 0x01); c.w8(off + 1, nxt); c.w16(off + 2, pmc); c.w16(off + 4, pmcsr)


def msi64_cap(c, off, nxt, ctrl=0x0080):
    # 64-bit MSI, not enabled (devices use their legacy INTx line here)
    c.w8(off, 0x05); c.w8(off + 1, nxt); c.w16(off + 2, ctrl)


def pcie_cap(c, off, nxt, port_type, speed, width, slot=False):
    flags = 0x0002 | (port_type << 4) | (0x0100 if slot else 0)
    c.w8(off, 0x10); c.w8(off + 1, nxt); c.w16(off + 2, flags)
    c.w32(off + 0x04, 0x00008fc0 if port_type == 0 else 0x00008000)  # DevCap
    c.w16(off + 0x08, 0x2810 if port_type == 0 else 0x0000)          # DevCtl
    c.w32(off + 0x0c, (1 << 24 if port_type == 4 else 0) | 0x00400c00 | (width << 4) | speed)  # LnkCap
    c.w16(off + 0x10, 0x0040 if port_type == 4 else 0x0000)          # LnkCtl
    c.w16(off + 0x12, 0x1000 | (width << 4) | speed if port_type == 4 else (width << 4) | speed)  # LnkSta
    c.w32(off + 0x24, 0x00000000)                                     # DevCap2
    c.w32(off + 0x2c, 0x0000000e)                                     # LnkCap2: 2.5/5/8 GT/s


SPEED = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe"}


def make_fn(d):
    """Fill d['config'] (bytes) and d['resource'] (list of (start, end, flags))."""
    c = Cfg()
    c.w16(0x00, d["vendor"]); c.w16(0x02, d["device"])
    c.w16(0x04, d["command"]); c.w16(0x06, d["status"])
    c.w8(0x08, d["revision"])
    c.w8(0x09, d["class"] & 0xff); c.w8(0x0a, (d["class"] >> 8) & 0xff); c.w8(0x0b, d["class"] >> 16)
    c.w8(0x0c, 0x10)  # cache line size (64 bytes)
    htype = d.get("header_type", 0)
    c.w8(0x0e, htype)
    bridge = (htype & 0x7f) == 1
    res = [(0, 0, 0)] * (N_RES_BRIDGE if bridge else N_RES)

    bar_off = 0x10
    for start, size, flags in d.get("bars", []):
        # sysfs resource line n describes BAR register n; a 64-bit BAR takes
        # registers n and n+1, and line n+1 stays zero
        res[(bar_off - 0x10) // 4] = (start, start + size - 1, flags)
        if flags == RES_MEM64:
            c.w32(bar_off, (start & 0xfffffff0) | 0x4); c.w32(bar_off + 4, start >> 32)
            bar_off += 8
        else:
            c.w32(bar_off, start & 0xfffffff0)
            bar_off += 4

    if bridge:
        pri, sec, sub = d["buses"]
        c.w8(0x18, pri); c.w8(0x19, sec); c.w8(0x1a, sub); c.w8(0x1b, 0)
        c.w8(0x1c, 0xf0); c.w8(0x1d, 0x00)          # I/O window disabled (base > limit)
        c.w16(0x1e, 0x2000)                          # secondary status
        mstart, mend = d["mem_window"]
        c.w16(0x20, (mstart >> 16) & 0xfff0); c.w16(0x22, (mend >> 16) & 0xfff0)
        c.w16(0x24, 0xfff1); c.w16(0x26, 0x0001)    # prefetchable window disabled
        c.w16(0x3e, 0x0000)                          # bridge control
        res[RES_BRIDGE_MEM_IDX] = (mstart, mend, RES_BRIDGE_MEM)
    else:
        sv, sd = d["subsys"]
        c.w16(0x2c, sv); c.w16(0x2e, sd)

    if d.get("caps"):
        c.w16(0x06, d["status"] | 0x0010)
        c.w8(0x34, d["caps"][0][0])
        for i, (off, kind, args) in enumerate(d["caps"]):
            nxt = d["caps"][i + 1][0] if i + 1 < len(d["caps"]) else 0
            if kind == "pm":
                pm_cap(c, off, nxt, *args)
            elif kind == "msi":
                msi64_cap(c, off, nxt, *args)
            elif kind == "pcie":
                pcie_cap(c, off, nxt, *args)
            elif kind == "ssvid":
                c.w8(off, 0x0d); c.w8(off + 1, nxt)
                c.w16(off + 4, d["subsys"][0]); c.w16(off + 6, d["subsys"][1])
            elif kind == "vendor":
                c.w8(off, 0x09); c.w8(off + 1, nxt); c.w8(off + 2, 0x10); c.w8(off + 3, 0x01)

    if d.get("pin"):
        c.w8(0x3c, d["irq"]); c.w8(0x3d, d["pin"])
    else:
        c.w8(0x3c, 0x00); c.w8(0x3d, 0x00)
    d["config"] = bytes(c.b)
    d["resource"] = res
    d["bridge"] = bridge


def esc(s):
    return s.replace("\\", "\\\\").replace("\n", "\\n")


def emit_fn(d, out):
    slot = d["slot"]
    sv, sd = d["subsys"]
    cls = d["class"]
    modalias = "pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X" % (
        d["vendor"], d["device"], sv, sd, cls >> 16, (cls >> 8) & 0xff, cls & 0xff)
    depth = d["path"].count("/")  # /devices/pci0000:00/X -> 3 ".." to reach /sys
    up = "../" * depth

    out.append("P: " + d["path"])
    # uevent: the kernel's order; SUBSYSTEM is umockdev's requirement (the kernel's
    # uevent file does not contain it)
    if d.get("driver"):
        out.append("E: DRIVER=" + d["driver"])
    out.append("E: PCI_CLASS=%X" % cls)
    out.append("E: PCI_ID=%04X:%04X" % (d["vendor"], d["device"]))
    out.append("E: PCI_SUBSYS_ID=%04X:%04X" % (sv, sd))
    out.append("E: PCI_SLOT_NAME=" + slot)
    out.append("E: MODALIAS=" + modalias)
    out.append("E: SUBSYSTEM=pci")

    attrs = []
    # uevent file of the host bridge container (no subsystem, so it cannot be
    # a device record of its own)
    if d.get("root_uevent"):
        attrs.append(("A", "../uevent", ""))
    attrs += [
        ("A", "ari_enabled", "0\n"),
        ("A", "broken_parity_status", "0\n"),
        ("A", "class", "0x%06x\n" % cls),
        ("H", "config", d["config"].hex().upper()),
        ("A", "consistent_dma_mask_bits", "%d\n" % d.get("dma_bits", 32)),
    ]
    if d.get("pcie_link"):
        speed, width = d["pcie_link"]
        attrs.append(("A", "current_link_speed", SPEED[speed] + "\n"))
        attrs.append(("A", "current_link_width", "%d\n" % width))
    attrs += [
        ("A", "d3cold_allowed", "1\n"),
        ("A", "device", "0x%04x\n" % d["device"]),
        ("A", "dma_mask_bits", "%d\n" % d.get("dma_bits", 32)),
    ]
    if d.get("driver"):
        drv = up + "bus/pci/drivers/" + d["driver"]
        attrs.append(("L", "driver", drv))
        # The driver directory /sys/bus/pci/drivers/<name> is not created by
        # umockdev, and libpci's PCI_FILL_DRIVER realpath()s the driver link, so
        # a dangling link means "no driver" to libpci/lspci -k.  umockdev writes
        # attribute names relative to the device directory, so "../"-names
        # reach outside it; use that to create the driver directory with its
        # (write-only in real sysfs) files and the device back-link.
        for f in ("bind", "new_id", "remove_id", "uevent", "unbind"):
            attrs.append(("A", drv + "/" + f, ""))
        attrs.append(("L", drv + "/" + d["slot"],
                      "../../../../devices/" + d["path"][len("/devices/"):]))
    attrs += [
        ("A", "driver_override", "(null)\n"),
        ("A", "enable", "%d\n" % d["enable"]),
        ("A", "irq", "%d\n" % d.get("irq", 0)),
        ("A", "local_cpulist", CPUS_LIST + "\n"),
        ("A", "local_cpus", CPUS_MASK + "\n"),
    ]
    if d.get("pcie_link"):
        speed, width = d["pcie_link"]
        attrs.append(("A", "max_link_speed", SPEED[speed] + "\n"))
        attrs.append(("A", "max_link_width", "%d\n" % width))
    attrs += [
        ("A", "modalias", modalias + "\n"),
        ("A", "msi_bus", "1\n"),
        ("A", "numa_node", "-1\n"),
        ("A", "power/control", "%s\n" % ("auto" if d.get("driver") else "on")),
        ("A", "power/runtime_status", "active\n"),
        ("A", "power_state", "D0\n"),
        ("A", "resource", "".join("0x%016x 0x%016x 0x%016x\n" % r for r in d["resource"])),
        ("A", "revision", "0x%02x\n" % d["revision"]),
    ]
    if d["bridge"]:
        attrs.append(("A", "secondary_bus_number", "%d\n" % d["buses"][1]))
        attrs.append(("A", "subordinate_bus_number", "%d\n" % d["buses"][2]))
    attrs += [
        ("A", "subsystem_device", "0x%04x\n" % sd),
        ("A", "subsystem_vendor", "0x%04x\n" % sv),
        ("A", "vendor", "0x%04x\n" % d["vendor"]),
    ]
    for t, k, v in attrs:
        out.append("%s: %s=%s" % (t, k, v if t != "A" else esc(v)))
    out.append("")


def emit_bus(path, device_link, out):
    out.append("P: " + path)
    out.append("E: SUBSYSTEM=pci_bus")
    out.append("A: cpuaffinity=%s\\n" % CPUS_MASK)
    out.append("A: cpulistaffinity=%s\\n" % CPUS_LIST)
    out.append("L: device=" + device_link)
    out.append("")


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
    out = []
    for d in FUNCS:
        d["class"] = d.pop("class_")
        make_fn(d)
        emit_fn(d, out)
    emit_bus("/devices/pci0000:00/pci_bus/0000:00", "../../../pci0000:00", out)
    emit_bus("/devices/pci0000:00/0000:00:1c.0/pci_bus/0000:01", "../../../0000:00:1c.0", out)
    sys.stdout.write("\n".join(out).rstrip("\n") + "\n")


if __name__ == "__main__":
    main()
