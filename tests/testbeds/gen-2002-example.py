#!/usr/bin/python3
"""Generate 2002-example.umockdev: the example system of the 2002 Linux
driver-model paper (a 440BX/PIIX4 PC with a SCSI adapter, Ethernet, audio, an
AGP graphics card and a USB SmartMedia reader), as a current kernel
(6.1, i686, uniprocessor) would show it in sysfs.

Run:  /usr/bin/python3 gen-2002-example.py > 2002-example.umockdev
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tbgen import *  # noqa: E402,F401,F403

KVER = (6, 1)
KREL = "6.1.0-18-686"
PCI = "/devices/pci0000:00"
ACPI_SB = "/devices/LNXSYSTM:00/LNXSYBUS:00"
ACPI_PCI0 = ACPI_SB + "/PNP0A03:00"
ACPI_ISA = ACPI_PCI0 + "/device:00"
BSG_MAJOR = 248
RTC_MAJOR = 253


def fn(slot, **kw):
    bdf = "0000:" + slot
    path = kw.pop("path", None) or PCI + "/" + bdf
    return dict(slot=bdf, path=path, **kw)


NOSUB = (0x0000, 0x0000)

FUNCS = [
    # 82443BX host bridge with the AGP aperture in BAR0
    fn("00:00.0", root_uevent=True, root_firmware_node=ACPI_PCI0,
       vendor=0x8086, device=0x7190, revision=0x03, class_=0x060000, subsys=NOSUB,
       command=0x0106, status=0x2210, enable=1, driver="agpgart-intel", latency=0x40,
       bars=[(0xe0000000, 0x4000000, RES_MEM32_PREF)], caps=[(0xa0, "agp", ())]),
    # 82443BX AGP bridge -> bus 01 (the G400)
    fn("00:01.0", vendor=0x8086, device=0x7191, revision=0x03, class_=0x060400, subsys=NOSUB,
       header_type=0x01, buses=(0, 1, 1), mem_window=(0xe4000000, 0xe4ffffff),
       pref_window=(0xe6000000, 0xe7ffffff), bridge_ctl=0x0008, sec_status=0x02a0,
       latency=0x40, sec_latency=0x40, command=0x0107, status=0x0220, enable=1),
    # PIIX4 function 0: PCI-to-ISA bridge (multi-function device); the legacy
    # ISA devices are /devices/pnp0/* and /devices/platform/* (see README)
    fn("00:07.0", firmware_node=ACPI_ISA,
       vendor=0x8086, device=0x7110, revision=0x02, class_=0x060100, subsys=NOSUB,
       header_type=0x80, command=0x0007, status=0x0280, enable=0),
    # PIIX4 IDE in legacy (compatibility) mode: fixed ports, bus-master BAR4
    fn("00:07.1", vendor=0x8086, device=0x7111, revision=0x01, class_=0x010180, subsys=NOSUB,
       command=0x0005, status=0x0280, enable=1, driver="ata_piix", latency=0x40,
       bars=[(0x1f0, 8, RES_IO_FIXED, 0), (0x3f6, 1, RES_IO_FIXED, 1),
             (0x170, 8, RES_IO_FIXED, 2), (0x376, 1, RES_IO_FIXED, 3),
             (0xf000, 0x10, RES_IO, 4)]),
    # PIIX4 USB (UHCI), INTD
    fn("00:07.2", vendor=0x8086, device=0x7112, revision=0x01, class_=0x0c0300, subsys=NOSUB,
       command=0x0005, status=0x0280, enable=1, driver="uhci_hcd", latency=0x40,
       bars=[(0xe000, 0x20, RES_IO, 4)], irq=11, pin=4),
    # PIIX4 ACPI / power management / SMBus
    fn("00:07.3", vendor=0x8086, device=0x7113, revision=0x02, class_=0x068000, subsys=NOSUB,
       command=0x0003, status=0x0280, enable=1, driver="piix4_smbus", irq=9, pin=1),
    # Adaptec AIC-7892 Ultra160 SCSI
    fn("00:0a.0", vendor=0x9005, device=0x008f, revision=0x02, class_=0x010000,
       subsys=(0x15d9, 0x9005), command=0x0117, status=0x02b0, enable=1, driver="aic7xxx",
       latency=0x40, dma_bits=32,
       bars=[(0xe400, 0x100, RES_IO), (0xe9000000, 0x1000, RES_MEM64)], irq=11, pin=1,
       caps=[(0xdc, "pm", (0x0622, 0x0000))]),
    # 3Com 3c905B
    fn("00:0b.0", vendor=0x10b7, device=0x9055, revision=0x30, class_=0x020000,
       subsys=(0x10b7, 0x9055), command=0x0117, status=0x0210, enable=1, driver="3c59x",
       latency=0x40, bars=[(0xe800, 0x80, RES_IO), (0xe9001000, 0x80, RES_MEM32)],
       irq=10, pin=1, caps=[(0xdc, "pm", (0xfe01, 0x0000))]),
    # Ensoniq ES1371 AudioPCI
    fn("00:0c.0", vendor=0x1274, device=0x1371, revision=0x08, class_=0x040100,
       subsys=(0x1274, 0x1371), command=0x0105, status=0x0410, enable=1, driver="snd_ens1371",
       latency=0x40, bars=[(0xec00, 0x40, RES_IO)], irq=5, pin=1,
       caps=[(0xdc, "pm", (0x0c21, 0x0000))]),
    # Matrox Millennium G400 on the AGP bus
    fn("01:00.0", path=PCI + "/0000:00:01.0/0000:01:00.0",
       vendor=0x102b, device=0x0525, revision=0x04, class_=0x030000, subsys=(0x102b, 0x0378),
       command=0x0007, status=0x02b0, enable=1, driver="matroxfb", latency=0x40, boot_vga=1,
       bars=[(0xe6000000, 0x2000000, RES_MEM32_PREF), (0xe4000000, 0x4000, RES_MEM32),
             (0xe4800000, 0x800000, RES_MEM32)], irq=11, pin=1,
       caps=[(0xdc, "pm", (0x0622, 0x0000)), (0xf0, "agp", ())]),
]


def pci_path(slot):
    for d in FUNCS:
        if d["slot"] == "0000:" + slot:
            return d["path"]
    raise KeyError(slot)


def acpi(tb):
    root = "/devices/LNXSYSTM:00"
    acpi_device(tb, root, hid="LNXSYSTM", acpi_path="\\")
    acpi_device(tb, root + "/LNXCPU:00", hid="LNXCPU", acpi_path="\\_PR_.CPU0",
                physical_node="/devices/system/cpu/cpu0")
    pwr = acpi_device(tb, root + "/LNXPWRBN:00", hid="LNXPWRBN", driver="button")
    input_device(tb, pwr.path, 0, "Power Button", "LNXPWRBN/button/input0", (0x19, 0, 1, 0),
                 {"ev": "3", "key": "10000000000000 0"}, event=0)
    acpi_device(tb, ACPI_SB, hid="LNXSYBUS", acpi_path="\\_SB_")
    acpi_device(tb, ACPI_PCI0, hid="PNP0A03", acpi_path="\\_SB_.PCI0", uid="0", status=15,
                physical_node=PCI)
    acpi_device(tb, ACPI_ISA, adr=0x00070000, acpi_path="\\_SB_.PCI0.ISA_",
                physical_node=pci_path("00:07.0"))


# (pnp index, PNP id, ACPI name, resources, driver)
PNP = [
    (0, "PNP0c01", "MBRD", ["mem 0x00000000-0x0009ffff", "mem 0x000f0000-0x000fffff",
                            "mem 0x00100000-0x07ffffff"], "system"),
    (1, "PNP0200", "DMAC", ["io 0x0000-0x000f", "io 0x0080-0x008f", "io 0x00c0-0x00df",
                            "dma 4"], None),
    (2, "PNP0000", "PIC_", ["io 0x0020-0x0021", "io 0x00a0-0x00a1", "irq 2"], None),
    (3, "PNP0100", "TMR_", ["io 0x0040-0x0043", "irq 0"], None),
    (4, "PNP0b00", "RTC_", ["io 0x0070-0x0071", "irq 8"], "rtc_cmos"),
    (5, "PNP0501", "COM1", ["io 0x03f8-0x03ff", "irq 4"], "serial"),
    (6, "PNP0700", "FDC0", ["io 0x03f2-0x03f5", "io 0x03f7", "irq 6", "dma 2"], None),
    (7, "PNP0303", "PS2K", ["io 0x0060", "io 0x0064", "irq 1"], "i8042 kbd"),
    (8, "PNP0f13", "PS2M", ["irq 12"], "i8042 aux"),
    (9, "PNP0400", "LPT_", ["io 0x0378-0x037f", "irq 7"], "parport_pc"),
]


def pnp(tb):
    for n, pid, aname, res, drv in PNP:
        anode = "%s/%s:00" % (ACPI_ISA, pid.upper())
        acpi_device(tb, anode, hid=pid.upper(), acpi_path="\\_SB_.PCI0.ISA_." + aname,
                    status=15, physical_node="/devices/pnp0/00:%02x" % n)
        d = pnp_device(tb, n, pid, res, driver=drv, firmware_node=anode)
        if pid == "PNP0501":
            tty(tb, d.path, "ttyS0", 4, 64, serial=dict(port="0x3F8", irq="4", line="0"))
        if pid == "PNP0b00":
            r = tb.dev(d.path + "/rtc/rtc0", "rtc", major=RTC_MAJOR, minor=0, devname="rtc0")
            r.a("date", "2002-06-26\n")
            r.link("device", d.path)
            r.a("hctosys", "1\n")
            r.a("max_user_freq", "64\n")
            r.a("name", "rtc_cmos 00:04\n")
            r.a("since_epoch", "1025049600\n")
            r.a("time", "10:00:00\n")


def platform(tb):
    i8042 = platform_device(tb, "i8042", driver="i8042")
    kbd = tb.dev(i8042.path + "/serio0", "serio")
    bind(kbd, "serio", "atkbd")
    for k, v in (("SERIO_TYPE", "06"), ("SERIO_PROTO", "00"), ("SERIO_ID", "00"),
                 ("SERIO_EXTRA", "00"), ("MODALIAS", "serio:ty06pr00id00ex00"),
                 ("SERIO_FIRMWARE_ID", "PNP: PNP0303")):
        kbd.prop(k, v)
    for k, v in (("bind_mode", "auto"), ("description", "i8042 KBD port"), ("extra", "0"),
                 ("firmware_id", "PNP: PNP0303"), ("force_release", "369-370"),
                 ("id/extra", "00"), ("id/id", "00"), ("id/proto", "00"), ("id/type", "06"),
                 ("modalias", "serio:ty06pr00id00ex00"), ("scroll", "0"), ("set", "2"),
                 ("softraw", "1"), ("softrepeat", "0")):
        kbd.a(k, v + "\n")
    input_device(tb, kbd.path, 1, "AT Translated Set 2 keyboard", "isa0060/serio0/input0",
                 (0x11, 0x1, 0x1, 0xab41),
                 {"ev": "120013", "key": "402000000 3803078f800d001 feffffdfffefffff fffffffffffffffe",
                  "msc": "10", "led": "7"},
                 event=1, leds=("numlock", "capslock", "scrolllock"))
    mouse = tb.dev(i8042.path + "/serio1", "serio")
    bind(mouse, "serio", "psmouse")
    for k, v in (("SERIO_TYPE", "01"), ("SERIO_PROTO", "00"), ("SERIO_ID", "00"),
                 ("SERIO_EXTRA", "00"), ("MODALIAS", "serio:ty01pr00id00ex00"),
                 ("SERIO_FIRMWARE_ID", "PNP: PNP0f13")):
        mouse.prop(k, v)
    for k, v in (("bind_mode", "auto"), ("description", "i8042 AUX port"),
                 ("firmware_id", "PNP: PNP0f13"), ("id/extra", "00"), ("id/id", "00"),
                 ("id/proto", "00"), ("id/type", "01"), ("modalias", "serio:ty01pr00id00ex00"),
                 ("protocol", "ImPS/2"), ("rate", "100"), ("resetafter", "5"),
                 ("resolution", "200"), ("resync_time", "0")):
        mouse.a(k, v + "\n")
    input_device(tb, mouse.path, 2, "ImPS/2 Generic Wheel Mouse", "isa0060/serio1/input0",
                 (0x11, 0x2, 0x3, 0x0), {"ev": "7", "key": "70000 0 0 0 0", "rel": "103"},
                 event=2, mouse=0)
    spk = platform_device(tb, "pcspkr", driver="pcspkr")
    input_device(tb, spk.path, 3, "PC Speaker", "isa0061/input0", (0x10, 0x1f, 0x1, 0x100),
                 {"ev": "40001", "snd": "6"}, event=3)
    s8250 = platform_device(tb, "serial8250", driver="serial8250")
    for i, (port, irq) in enumerate([("0x2F8", "3"), ("0x3E8", "4"), ("0x2E8", "3")], 1):
        tty(tb, s8250.path, "ttyS%d" % i, 4, 64 + i,
            serial=dict(port=port, irq=irq, line=str(i), type="0", xmit_fifo_size="1"))
    fl = platform_device(tb, "floppy.0", driver="floppy", modalias="platform:floppy")
    block_disk(tb, fl.path, "fd0", 2, 0, 2880, diskseq=5, removable=1, range_=1,
               capability="11", events="", rotational=1)


def scsi_bus(tb):
    hba = pci_path("00:0a.0")
    h0 = scsi_host(tb, hba, 0, "aic7xxx", can_queue=253, cmd_per_lun=2, sg_tablesize=128,
                   unique_id=0, spi=True)
    # target 0: IBM Ultrastar 18ES Ultra160 disk
    t0 = scsi_target(tb, h0, 0, 0, 0, spi=dict(dt="1", hold_mcs="0", iu="0", max_iu="1",
                                               max_offset="127", max_qas="1", max_width="1",
                                               offset="127", period="12.5", qas="0",
                                               rd_strm="0", rti="0", width="1", wr_flow="0"))
    disk = scsi_device(tb, t0, (0, 0, 0, 0), 0, "IBM", "DDYS-T18350N", "S96H", "sd", 0, BSG_MAJOR,
                       version=3, queue_depth=32)
    scsi_disk_class(tb, disk, cache="write back")
    sda = block_disk(tb, disk.path, "sda", SD_MAJOR, 0, 35843670, diskseq=1)
    block_partition(tb, sda, 1, 63, 208782, 1)
    block_partition(tb, sda, 2, 208845, 35634825, 1)
    # target 1: HP SureStore DAT24 (DDS-3) tape
    t1 = scsi_target(tb, h0, 0, 0, 1, spi=dict(dt="0", max_offset="15", max_width="0",
                                               offset="15", period="100", width="0"))
    tape = scsi_device(tb, t1, (0, 0, 1, 0), 1, "HP", "C1537A", "L708", "st", 1, BSG_MAJOR,
                       rmb=True, version=2)
    tape.link("tape", tape.path + "/scsi_tape/st0")
    for name, minor in (("st0", 0), ("st0l", 32), ("st0m", 64), ("st0a", 96),
                        ("nst0", 128), ("nst0l", 160), ("nst0m", 192), ("nst0a", 224)):
        st = tb.dev(tape.path + "/scsi_tape/" + name, "scsi_tape", major=ST_MAJOR, minor=minor,
                    devname=name)
        st.a("default_blksize", "-1\n")
        st.a("default_compression", "-1\n")
        st.a("default_density", "-1\n")
        st.a("defined", "1\n")
        st.link("device", tape.path)
        st.a("options", "0x0\n")
    # target 4: Yamaha CRW8424S CD writer
    t4 = scsi_target(tb, h0, 0, 0, 4, spi=dict(dt="0", max_offset="15", max_width="0",
                                               offset="15", period="100", width="0"))
    cd = scsi_device(tb, t4, (0, 0, 4, 0), 5, "YAMAHA", "CRW8424S", "1.0j", "sr", 2, BSG_MAJOR,
                     rmb=True, version=2)
    block_disk(tb, cd.path, "sr0", SR_MAJOR, 0, 0, diskseq=3, removable=1, range_=1,
               capability="119", events="media_change eject_request")


def ide(tb):
    piix = pci_path("00:07.1")
    for port, host in ((1, 1), (2, 2)):
        ata_port(tb, piix, port, host, sata=False, proc_name="ata_piix")


def usb(tb):
    hc = pci_path("00:07.2")
    rh = hc + "/usb1"
    usb_device(tb, rh, 1, 1, root_hub_descriptors("uhci", KVER, 2), "12",
               strings=dict(manufacturer="Linux %s uhci_hcd" % KREL, product="UHCI Host Controller",
                            serial="0000:00:07.2"),
               maxchild=2, ports=["unknown", "unknown"], root_hub=True, urbnum=31)
    # SanDisk ImageMate SDDR-09 SmartMedia reader (vendor-specific "eUSB"
    # interface, driven by the usb-storage sub-driver ums-sddr09)
    desc = usb_dev_desc(0x0110, 0, 0, 0, 8, 0x0781, 0x0200, 0x0100, 1, 2, 0)
    desc += usb_config(1, 0x80, 50, [usb_intf(0, 0, 0xff, 0xff, 0xff, [
        usb_ep(0x81, 2, 64, 0), usb_ep(0x02, 2, 64, 0), usb_ep(0x83, 3, 1, 0x20)])])
    dev, intfs = usb_device(tb, rh + "/1-1", 1, 2, desc, "12",
                            strings=dict(manufacturer="SanDisk Corporation",
                                         product="ImageMate SDDR-09"),
                            removable="removable", port=usb_port_path(rh, 1, 1, root_hub=True),
                            intf_drivers={0: "ums-sddr09"}, urbnum=412)
    h3 = scsi_host(tb, intfs[0].path, 3, "usb-storage", can_queue=1, sg_tablesize=2048,
                   unique_id=0)
    t = scsi_target(tb, h3, 3, 0, 0)
    sdev = scsi_device(tb, t, (3, 0, 0, 0), 0, "SanDisk", "ImageMate SDDR-0", "0100", "sd", 3,
                       BSG_MAJOR, rmb=True, version=0, scsi_level=3, timeout=30)
    scsi_disk_class(tb, sdev, cache="write through")
    sdb = block_disk(tb, sdev.path, "sdb", SD_MAJOR, 16, 126976, diskseq=4, removable=1,
                     capability="1", events="media_change")
    block_partition(tb, sdb, 1, 32, 126944, 4)


def smbus(tb):
    acpi_fn = pci_path("00:07.3")
    i2c = tb.dev(acpi_fn + "/i2c-0", "i2c", devtype="i2c_adapter")
    i2c.a("delete_device", "")
    i2c.a("name", "SMBus PIIX4 adapter at 0500\n")
    i2c.a("new_device", "")
    d = tb.dev(i2c.path + "/i2c-dev/i2c-0", "i2c-dev", major=89, minor=0, devname="i2c-0")
    d.link("device", i2c.path)
    d.a("name", "SMBus PIIX4 adapter at 0500\n")


def class_devices(tb):
    net_if(tb, pci_path("00:0b.0"), "eth0", 2, "00:50:da:3c:71:0e", speed=100, name_assign=1)
    sound_card(tb, pci_path("00:0c.0"), 0, "AudioPCI", [
        ("controlC0", 0, None),
        ("midiC0D0", 8, None),
        ("pcmC0D0c", 24, {"pcm_class": "generic\n"}),
        ("pcmC0D0p", 16, {"pcm_class": "generic\n"}),
        ("pcmC0D1p", 17, {"pcm_class": "generic\n"}),
    ])
    framebuffer(tb, pci_path("01:00.0"), 0, "MATROX", "640x480", bpp=8, refresh=60,
                virt="640,26214")


def system(tb):
    cpu_root = dict(kernel_max="7\n", offline="\n", online="0\n", possible="0\n", present="0\n")
    cpu = system_device(tb, "cpu", "cpu0", driver="processor",
                        modalias="cpu:type:x86,ven0000fam0006mod0008:feature:,0000,0001,0002,"
                                 "0003,0004,0005,0006,0007,0008,0009,000B,000C,000D,000E,000F,"
                                 "0010,0011,0017,0018,0019",
                        root_attrs=cpu_root,
                        extra={"crash_notes": "3f7c1000\n", "crash_notes_size": "236\n",
                               "topology/core_cpus_list": "0\n", "topology/core_id": "0\n",
                               "topology/physical_package_id": "0\n",
                               "topology/thread_siblings": "1\n"})
    cpu.link("firmware_node", "/devices/LNXSYSTM:00/LNXCPU:00")
    system_device(tb, "clockevents", "clockevent0",
                  extra={"current_device": "lapic\n", "unbind_device": ""})
    system_device(tb, "clockevents", "broadcast",
                  extra={"current_device": "pit\n", "unbind_device": ""})
    system_device(tb, "clocksource", "clocksource0",
                  extra={"available_clocksource": "tsc acpi_pm pit \n",
                         "current_clocksource": "tsc\n", "unbind_clocksource": ""})


def virtual(tb):
    net_if(tb, None, "lo", 1, "00:00:00:00:00:00", path="/devices/virtual/net/lo", mtu=65536,
           type_=772, flags="0x9", operstate="unknown", name_assign=3)
    virtual_device(tb, "tty", "tty", 5, 0, "tty")
    virtual_device(tb, "tty", "console", 5, 1, "console", extra={"active": "tty0\n"})
    virtual_device(tb, "tty", "tty0", 4, 0, "tty0", extra={"active": "tty1\n"})
    virtual_device(tb, "tty", "tty1", 4, 1, "tty1")
    virtual_device(tb, "mem", "null", 1, 3, "null")
    virtual_device(tb, "sound", "seq", 116, 1, "snd/seq")
    virtual_device(tb, "sound", "timer", 116, 33, "snd/timer")
    virtual_device(tb, "input", "mice", 13, 63, "input/mice")


def main():
    tb = Testbed(cpus_mask="1", cpus_list="0")   # one Pentium III
    for d in FUNCS:
        pci_function(tb, d)
    pci_bus(tb, PCI + "/pci_bus/0000:00", PCI)
    pci_bus(tb, pci_path("00:01.0") + "/pci_bus/0000:01", pci_path("00:01.0"))
    scsi_bus(tb)
    ide(tb)
    usb(tb)
    smbus(tb)
    class_devices(tb)
    acpi(tb)
    pnp(tb)
    platform(tb)
    system(tb)
    virtual(tb)
    tb.write()


if __name__ == "__main__":
    main()
