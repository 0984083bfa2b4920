#!/usr/bin/python3
"""Generate server-2dom.umockdev: a two-socket Skylake-SP server whose two
sockets are two PCI domains (segments) 0000 and 0001, each with a PCIe switch
three bridges deep (root port -> switch upstream port -> downstream port ->
endpoint), on-board devices (ASPEED BMC VGA behind its PCIe-to-PCI bridge,
I350 LOM), NUMA nodes 0/1 and IOMMU groups.

Run:  /usr/bin/python3 gen-server-2dom.py > server-2dom.umockdev
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tbgen import *  # noqa: E402,F401,F403

D0 = "/devices/pci0000:00"
D1 = "/devices/pci0001:00"
ACPI_SB = "/devices/LNXSYSTM:00/LNXSYBUS:00"
NODE_CPUS = {0: ("0000ffff,0000ffff", "0-15,32-47"), 1: ("ffff0000,ffff0000", "16-31,48-63")}
SMC = (0x15d9, 0x095d)          # Supermicro board subsystem id
DMAR = {0: "/devices/virtual/iommu/dmar0", 1: "/devices/virtual/iommu/dmar1"}

groups = iter(range(0, 100))


def fn(domain, path, **kw):
    slot = path.rsplit("/", 1)[1]
    node = 0 if domain == 0 else 1
    mask, lst = NODE_CPUS[node]
    d = dict(slot=slot, path=path, numa_node=node, cpus_mask=mask, cpus_list=lst,
             iommu=DMAR[node], iommu_group=kw.pop("group", None))
    if d["iommu_group"] is None:
        d["iommu_group"] = next(groups)
    d.update(kw)
    return d


def root_port(domain, path, device, buses, link, slot=True, **kw):
    return fn(domain, path, vendor=0x8086, device=device, revision=0x04, class_=0x060400,
              subsys=SMC, header_type=0x01, buses=buses, command=0x0407, status=0x0010,
              enable=2, driver="pcieport", irq=kw.pop("irq", 26), pin=1, pcie_link=link,
              caps=[(0x40, "ssvid", ()), (0x60, "msi", (0x0080,)),
                    (0x90, "pcie", (PCIE_ROOT_PORT, link[0], link[1], slot)),
                    (0xe0, "pm", (0x0003, 0x0008))], **kw)


def switch_port(domain, path, device, port_type, buses, link, **kw):
    return fn(domain, path, vendor=0x10b5, device=device, revision=0xca, class_=0x060400,
              subsys=(0x10b5, device), header_type=0x01, buses=buses, command=0x0407,
              status=0x0010, enable=2, driver="pcieport", irq=kw.pop("irq", 26), pin=1,
              pcie_link=link,
              caps=[(0x40, "pm", (0x0003, 0x0008)), (0x48, "msi", (0x0080,)),
                    (0x68, "pcie", (port_type, link[0], link[1], port_type == PCIE_DOWNSTREAM)),
                    (0xa4, "ssvid", ())], **kw)


# ---- domain 0000, NUMA node 0 -------------------------------------------
RP0 = D0 + "/0000:00:02.0"
US0 = RP0 + "/0000:01:00.0"
DS0A = US0 + "/0000:02:08.0"
DS0B = US0 + "/0000:02:10.0"
NVME0 = DS0A + "/0000:03:00.0"
CX5 = [DS0B + "/0000:04:00.0", DS0B + "/0000:04:00.1"]
RP_VGA = D0 + "/0000:00:1c.0"
AST_BR = RP_VGA + "/0000:05:00.0"
AST = AST_BR + "/0000:06:00.0"
RP_LOM = D0 + "/0000:00:1c.4"
I350 = [RP_LOM + "/0000:07:00.0", RP_LOM + "/0000:07:00.1"]

# ---- domain 0001, NUMA node 1 -------------------------------------------
RP1 = D1 + "/0001:00:02.0"
US1 = RP1 + "/0001:01:00.0"
DS1A = US1 + "/0001:02:00.0"
DS1B = US1 + "/0001:02:01.0"
BNXT = [DS1A + "/0001:03:00.0", DS1A + "/0001:03:00.1"]
NVME1 = DS1B + "/0001:04:00.0"

AST_GROUP = 90      # the VGA shares the group of its conventional PCI bridge
I350_GROUP = 91     # no ACS between the two LOM functions

FUNCS = [
    fn(0, D0 + "/0000:00:00.0", root_uevent=True,
       root_firmware_node=ACPI_SB + "/PNP0A08:00",
       vendor=0x8086, device=0x2020, revision=0x04, class_=0x060000, subsys=SMC,
       command=0x0000, status=0x0010, enable=0,
       caps=[(0x90, "pcie", (9, 1, 1)), (0xe0, "pm", (0x0003, 0x0008))]),
    root_port(0, RP0, 0x2030, (0, 1, 4), (3, 16),
              mem_window=(0x9d000000, 0x9d2fffff), pref_window=(0x38bffa000000, 0x38bffdffffff)),
    switch_port(0, US0, 0x8747, PCIE_UPSTREAM, (1, 2, 4), (3, 16),
                bars=[(0x9d200000, 0x40000, RES_MEM32)],
                mem_window=(0x9d000000, 0x9d1fffff), pref_window=(0x38bffa000000, 0x38bffdffffff)),
    switch_port(0, DS0A, 0x8747, PCIE_DOWNSTREAM, (2, 3, 3), (3, 4), pcie_max=(3, 16),
                mem_window=(0x9d000000, 0x9d0fffff)),
    switch_port(0, DS0B, 0x8747, PCIE_DOWNSTREAM, (2, 4, 4), (3, 8), pcie_max=(3, 16),
                pref_window=(0x38bffa000000, 0x38bffdffffff)),
    fn(0, NVME0, vendor=0x144d, device=0xa80a, revision=0x00, class_=0x010802,
       subsys=(0x144d, 0xa813), command=0x0406, status=0x0010, enable=1, driver="nvme",
       dma_bits=64, bars=[(0x9d000000, 0x8000, RES_MEM64)], irq=32, pin=1,
       pcie_link=(3, 4), pcie_max=(4, 4),
       caps=[(0x40, "pm", (0x0003, 0x0008)), (0x50, "msi", (0x0080,)),
             (0x70, "pcie", (PCIE_ENDPOINT, 3, 4, False, 4, 4)), (0xb0, "msix", (64, 0, 0x3000))]),
] + [
    fn(0, CX5[f], vendor=0x15b3, device=0x1017, revision=0x00, class_=0x020000,
       subsys=(0x15b3, 0x0020), header_type=0x80, command=0x0406, status=0x0010, enable=1,
       driver="mlx5_core", dma_bits=64,
       bars=[(0x38bffa000000 + f * 0x2000000, 0x2000000, RES_MEM64_PREF)], irq=36 + f, pin=1 + f,
       pcie_link=(3, 8),
       caps=[(0x40, "pm", (0x0003, 0x0008)), (0x60, "pcie", (PCIE_ENDPOINT, 3, 8)),
             (0x9c, "msix", (64, 0, 0x2000)), (0xc0, "vendor", ())])
    for f in (0, 1)
] + [
    root_port(0, RP_VGA, 0xa190, (0, 5, 6), (1, 1), irq=16, slot=False,
              io_window=(0x2000, 0x2fff), mem_window=(0x9e000000, 0x9f0fffff), bridge_ctl=0x0018),
    fn(0, AST_BR, group=AST_GROUP, vendor=0x1a03, device=0x1150, revision=0x04, class_=0x060400,
       subsys=(0x1a03, 0x1150), header_type=0x01, buses=(5, 6, 6), command=0x0007, status=0x0010,
       enable=1, io_window=(0x2000, 0x2fff), mem_window=(0x9e000000, 0x9f0fffff),
       bridge_ctl=0x0018, sec_status=0x0220, pcie_link=(1, 1),
       caps=[(0x50, "pm", (0x4603, 0x0008)), (0x78, "pcie", (7, 1, 1))]),
    fn(0, AST, group=AST_GROUP, vendor=0x1a03, device=0x2000, revision=0x41, class_=0x030000,
       subsys=(0x15d9, 0x095d), command=0x0007, status=0x0210, enable=1, driver="ast",
       boot_vga=1, bars=[(0x9e000000, 0x1000000, RES_MEM32), (0x9f000000, 0x20000, RES_MEM32),
                         (0x2000, 0x80, RES_IO)], irq=16, pin=1,
       caps=[(0x40, "pm", (0x0223, 0x0008)), (0x50, "msi", (0x0080,))]),
    root_port(0, RP_LOM, 0xa194, (0, 7, 7), (2, 1), irq=17, slot=False,
              mem_window=(0x9d400000, 0x9d6fffff)),
] + [
    fn(0, I350[f], group=I350_GROUP, vendor=0x8086, device=0x1521, revision=0x01,
       class_=0x020000, subsys=(0x15d9, 0x1521), header_type=0x80, command=0x0406,
       status=0x0010, enable=1, driver="igb", dma_bits=64,
       bars=[(0x9d400000 + f * 0x100000, 0x100000, RES_MEM32),
             (0x9d600000 + f * 0x4000, 0x4000, RES_MEM32, 3)], irq=17 + f, pin=1 + f,
       pcie_link=(2, 1), pcie_max=(2, 4),
       caps=[(0x40, "pm", (0xc823, 0x2008)), (0x50, "msi", (0x0180,)),
             (0x70, "msix", (10, 3, 0x0000)), (0xa0, "pcie", (PCIE_ENDPOINT, 2, 1, False, 2, 4))])
    for f in (0, 1)
] + [
    fn(0, D0 + "/0000:00:1f.0", vendor=0x8086, device=0xa1c1, revision=0x09, class_=0x060100,
       subsys=SMC, header_type=0x80, command=0x0007, status=0x0200, enable=0),
    # ---- domain 0001 ----
    fn(1, D1 + "/0001:00:00.0", root_uevent=True,
       root_firmware_node=ACPI_SB + "/PNP0A08:01",
       vendor=0x8086, device=0x2020, revision=0x04, class_=0x060000, subsys=SMC,
       command=0x0000, status=0x0010, enable=0,
       caps=[(0x90, "pcie", (9, 1, 1)), (0xe0, "pm", (0x0003, 0x0008))]),
    root_port(1, RP1, 0x2032, (0, 1, 4), (3, 16), irq=40,
              mem_window=(0xc5000000, 0xc53fffff), pref_window=(0x3afffa000000, 0x3afffa4fffff)),
    switch_port(1, US1, 0x9733, PCIE_UPSTREAM, (1, 2, 4), (3, 16), irq=40,
                bars=[(0xc5300000, 0x40000, RES_MEM32)],
                mem_window=(0xc5000000, 0xc50fffff), pref_window=(0x3afffa000000, 0x3afffa4fffff)),
    switch_port(1, DS1A, 0x9733, PCIE_DOWNSTREAM, (2, 3, 3), (3, 8), pcie_max=(3, 16), irq=40,
                pref_window=(0x3afffa000000, 0x3afffa4fffff)),
    switch_port(1, DS1B, 0x9733, PCIE_DOWNSTREAM, (2, 4, 4), (3, 4), pcie_max=(3, 16), irq=40,
                mem_window=(0xc5000000, 0xc50fffff)),
] + [
    fn(1, BNXT[f], vendor=0x14e4, device=0x16d7, revision=0x01, class_=0x020000,
       subsys=(0x14e4, 0x1402), header_type=0x80, command=0x0406, status=0x0010, enable=1,
       driver="bnxt_en", dma_bits=64,
       bars=[(0x3afffa000000 + f * 0x210000, 0x10000, RES_MEM64_PREF),
             (0x3afffa100000 + f * 0x200000, 0x100000, RES_MEM64_PREF),
             (0x3afffa200000 + f * 0x200000, 0x10000, RES_MEM64_PREF)],
       irq=41 + f, pin=1 + f, pcie_link=(3, 8),
       caps=[(0x48, "pm", (0xc803, 0x0008)), (0x58, "msi", (0x0080,)),
             (0xa0, "msix", (74, 4, 0x0000)), (0xac, "pcie", (PCIE_ENDPOINT, 3, 8))])
    for f in (0, 1)
] + [
    fn(1, NVME1, vendor=0x8086, device=0x0a54, revision=0x00, class_=0x010802,
       subsys=(0x1028, 0x1fff), command=0x0406, status=0x0010, enable=1, driver="nvme",
       dma_bits=64, bars=[(0xc5000000, 0x4000, RES_MEM64)], irq=43, pin=1, pcie_link=(3, 4),
       caps=[(0x40, "pm", (0x0003, 0x0008)), (0x50, "msix", (129, 0, 0x2000)),
             (0x60, "pcie", (PCIE_ENDPOINT, 3, 4))]),
    fn(1, D1 + "/0001:00:05.0", vendor=0x8086, device=0x2024, revision=0x04, class_=0x088000,
       subsys=(0x0000, 0x0000), command=0x0000, status=0x0010, enable=0,
       caps=[(0x40, "pcie", (9, 1, 1))]),
]

BRIDGES = [RP0, US0, DS0A, DS0B, RP_VGA, AST_BR, RP_LOM, RP1, US1, DS1A, DS1B]


def pci(tb):
    for d in FUNCS:
        pci_function(tb, d)
    for dom, root in ((0, D0), (1, D1)):
        mask, lst = NODE_CPUS[dom]
        pci_bus(tb, root + "/pci_bus/%04x:00" % dom, root, mask, lst)
    for path in BRIDGES:
        d = next(x for x in FUNCS if x["path"] == path)
        sec = d["buses"][1]
        dom = int(d["slot"][:4], 16)
        mask, lst = NODE_CPUS[dom]
        pci_bus(tb, path + "/pci_bus/%04x:%02x" % (dom, sec), path, mask, lst)


def iommus(tb):
    for node, path in DMAR.items():
        d = tb.dev(path, "iommu")
        d.a("intel-iommu/address", "%x\n" % (0xc5ffc000 if node else 0x9d7fc000))
        d.a("intel-iommu/cap", "8d2078c106f0466\n")
        d.a("intel-iommu/ecap", "f020df\n")
        d.a("intel-iommu/version", "1:0\n")


def storage(tb):
    nvme_controller(tb, NVME0, 0, 0, "SAMSUNG MZQL2960HCJR-00A07", "S64FNE0R812345",
                    "GDC5602Q", "nqn.1994-11.com.samsung:nvme:PM9A3:2.5-inch:S64FNE0R812345",
                    [(1, 0, 1875385008, 1, [(1, 2048, 1048576), (2, 1050624, 1874331648)])],
                    cntlid=6, numa_node=0)
    nvme_controller(tb, NVME1, 1, 1, "Dell Express Flash NVMe P4510 2TB SFF", "PHLJ912345672P0BGN",
                    "VDV1DP23", "nqn.2014.08.org.nvmexpress:80868086PHLJ912345672P0BGN  "
                    "Dell Express Flash NVMe P4510 2TB SFF", [(1, 3, 3907029168, 2,
                                                              [(1, 2048, 3907026944)])],
                    cntlid=0, numa_node=1)


def network(tb):
    net_if(tb, I350[0], "eno1", 2, "3c:ec:ef:4a:11:e0", speed=1000, nrx=8, ntx=8)
    net_if(tb, I350[1], "eno2", 3, "3c:ec:ef:4a:11:e1", speed=1000, nrx=8, ntx=8,
           carrier=False, operstate="down", flags="0x1003", dev_port=0)
    for f in (0, 1):
        net_if(tb, CX5[f], "enp4s0f%dnp%d" % (f, f), 4 + f, "b8:59:9f:c2:3a:%02x" % (0x10 + f),
               speed=25000, nrx=16, ntx=16, phys_port="p%d" % f)
    for f in (0, 1):
        net_if(tb, BNXT[f], "enP1p3s0f%dnp%d" % (f, f), 6 + f, "00:0a:f7:b4:52:%02x" % (0x60 + f),
               speed=25000, nrx=16, ntx=16, phys_port="p%d" % f)
    net_if(tb, None, "lo", 1, "00:00:00:00:00:00", path="/devices/virtual/net/lo", mtu=65536,
           type_=772, flags="0x9", operstate="unknown", name_assign=3)


def graphics(tb):
    drm_card(tb, AST, 0, [("VGA-1", "connected", ["1024x768", "800x600", "640x480"])])
    framebuffer(tb, AST, 0, "astdrmfb", "1024x768", bpp=32)


def acpi(tb):
    acpi_device(tb, "/devices/LNXSYSTM:00", hid="LNXSYSTM", acpi_path="\\")
    acpi_device(tb, ACPI_SB, hid="LNXSYBUS", acpi_path="\\_SB_")
    for n, root in ((0, D0), (1, D1)):
        acpi_device(tb, ACPI_SB + "/PNP0A08:%02x" % n, hid="PNP0A08", acpi_path="\\_SB_.PC%02d" % n,
                    uid=str(n), status=15, physical_node=root)


def system(tb):
    cpu_root = dict(kernel_max="8191\n", offline="64-255\n", online="0-63\n", possible="0-255\n",
                    present="0-63\n")
    for n in (0, 1):
        mask, lst = NODE_CPUS[n]
        node = system_device(tb, "node", "node%d" % n,
                             root_attrs=dict(has_cpu="0-1\n", has_memory="0-1\n",
                                             has_normal_memory="0-1\n", online="0-1\n",
                                             possible="0-1\n"),
                             extra={"cpulist": lst + "\n", "cpumap": mask + "\n",
                                    "distance": ("10 21\n" if n == 0 else "21 10\n")})
    for c in range(64):
        pkg = (c // 16) % 2
        core = c % 16
        d = system_device(tb, "cpu", "cpu%d" % c, driver="processor",
                          modalias="cpu:type:x86,ven0000fam0006mod0055:feature:,0000,0001,0002,"
                                   "0003,0004,0005,0006,0007,0008,0009,000B,000C,000D,000E,000F,"
                                   "0010,0011,0013,0015,0016,0017,0018,0019,001A,001B,001C,001D,"
                                   "002B,0034,003A,003B,003D,0068,006F,0070,0072,0074,0075,0076,"
                                   "0079,0080,0081,0089,008C,008D,0091,0093,0094,0096,0097,0099,"
                                   "009A,009B,009C,009D,009E,009F,00C0,00C5,00E1,00E3,00E4,00E6,"
                                   "00E7,00EA,00F0,00F1,00F2,00F3,00F5,00F9,00FA,00FB,00FE,00FF",
                          root_attrs=cpu_root if c == 0 else None,
                          extra={"crash_notes": "%x\n" % (0x1fc018000 + c * 0x40000),
                                 "crash_notes_size": "368\n",
                                 "online": "1\n" if c else None,
                                 "topology/core_id": "%d\n" % core,
                                 "topology/physical_package_id": "%d\n" % pkg,
                                 "topology/die_id": "0\n",
                                 "topology/thread_siblings_list": "%d,%d\n" % (c % 32, c % 32 + 32)})
        d.attrs = [a for a in d.attrs if a[4] is not None]
        d.link("node%d" % pkg, "/devices/system/node/node%d" % pkg)


def main():
    tb = Testbed(cpus_mask=NODE_CPUS[0][0], cpus_list=NODE_CPUS[0][1])
    pci(tb)
    iommus(tb)
    storage(tb)
    network(tb)
    graphics(tb)
    acpi(tb)
    system(tb)
    tb.write()


if __name__ == "__main__":
    main()
