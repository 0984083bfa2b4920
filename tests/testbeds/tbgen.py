#!/usr/bin/python3
"""tbgen: build umockdev testbeds that look like real sysfs.

A testbed is a list of device records (`Dev`).  The helpers here create the
records of one kind of device each, with the attributes, uevent properties,
device nodes and links the kernel shows, so that the gen-*.py scripts only
describe the machine.  Everything that can be derived (PCI config space, USB
descriptors -> text attributes, MAJOR/MINOR -> `dev`, link targets) is derived
here from one set of numbers, so the records stay consistent.

Conventions (see README.md for the umockdev reasons):
* paths are sysfs paths without the "/sys" prefix: "/devices/...", "/bus/...";
* every record gets `E: SUBSYSTEM=` (umockdev needs it) after the kernel's own
  uevent properties, in the kernel's order (MAJOR, MINOR, DEVNAME, DEVTYPE,
  DRIVER, then the bus/class/type properties);
* DEVNAME is written with "/dev/": umockdev strips it again, and only then
  creates the `/sys/dev/{block,char}/M:m` link and the node's major:minor;
* files outside the device directory (driver directories, the `uevent` of
  devices that have no subsystem, iommu groups) are written as attributes
  with "../"-relative names, which umockdev resolves against the device dir;
* attributes are sorted by name, like umockdev-record writes them.
"""

import posixpath
import struct
import sys

# ---------------------------------------------------------------------------
# generic records
# ---------------------------------------------------------------------------


def esc(s):
    return s.replace("\\", "\\\\").replace("\n", "\\n")


def kernfs_link(linkdir, target):
    """The relative target text sysfs gives a symlink in `linkdir` pointing at
    `target`: up to the nearest directory that contains target's parent,
    then down (kernfs_get_target_path())."""
    base = linkdir
    tparent = posixpath.dirname(target)
    ups = 0
    while not (tparent == base or tparent.startswith(base.rstrip("/") + "/")):
        base = posixpath.dirname(base)
        ups += 1
    return "../" * ups + target[len(base):].lstrip("/")


def relname(devpath, target):
    """Attribute name that reaches `target` from the device directory."""
    return posixpath.relpath(target, devpath)


class Dev:
    """One umockdev device record."""

    def __init__(self, path, subsystem, devtype=None, driver=None, major=None, minor=None,
                 devname=None, node=None, node_hex=None):
        assert path.startswith("/devices/"), path
        self.path = path
        self.subsystem = subsystem
        self.devtype = devtype
        self.driver = driver
        self.major, self.minor = major, minor
        self.devname = devname          # without /dev/
        self.node = node                # N: name; defaults to devname when it has one
        self.node_hex = node_hex        # N: contents (hex), e.g. USB descriptors
        self.props = []                 # uevent properties after DRIVER, in order
        self.attrs = []                 # (sortkey, type, name, value)
        self.nseq = 0
        if major is not None:
            self.a("dev", "%d:%d\n" % (major, minor))

    @property
    def name(self):
        return posixpath.basename(self.path)

    def prop(self, k, v):
        self.props.append((k, v))
        return self

    def _add(self, key, t, name, value):
        self.nseq += 1
        self.attrs.append((key, self.nseq, t, name, value))

    def a(self, name, value):
        """Text attribute.  Values are written verbatim: pass the newline."""
        self._add(name, "A", name, value)
        return self

    def h(self, name, data):
        self._add(name, "H", name, bytes(data).hex().upper())
        return self

    def link(self, name, target):
        """Symlink `name` (relative to the device dir) to the sysfs path
        `target`, with the relative text sysfs would use."""
        where = posixpath.dirname(posixpath.normpath(posixpath.join(self.path, name)))
        self._add(name, "L", name, kernfs_link(where, target))
        return self

    def outside(self, target, value, t="A", group=None):
        """A file outside the device directory, at sysfs path `target`."""
        key = ("\x00" if group is None else group) + "%04d" % (self.nseq + 1)
        name = relname(self.path, target)
        if t == "L":
            value = kernfs_link(posixpath.dirname(target), value)
        self._add(key, t, name, value)
        return self

    def render(self):
        out = ["P: " + self.path]
        node = self.node or self.devname
        if node:
            out.append("N: " + node + ("=" + self.node_hex if self.node_hex else ""))
        if self.major is not None:
            out.append("E: MAJOR=%d" % self.major)
            out.append("E: MINOR=%d" % self.minor)
        if self.devname:
            out.append("E: DEVNAME=/dev/" + self.devname)
        if self.devtype:
            out.append("E: DEVTYPE=" + self.devtype)
        if self.driver:
            out.append("E: DRIVER=" + self.driver)
        for k, v in self.props:
            out.append("E: %s=%s" % (k, v))
        out.append("E: SUBSYSTEM=" + self.subsystem)
        for _, _, t, k, v in sorted(self.attrs, key=lambda x: (x[0], x[1])):
            out.append("%s: %s=%s" % (t, k, esc(v) if t == "A" else v))
        return "\n".join(out) + "\n"


# Subsystems umockdev 0.17 treats as buses (/sys/bus/X/devices/, subsystem ->
# ../bus/X); everything else becomes a class (/sys/class/X/).
UMOCKDEV_BUSES = {"acpi", "hid", "i2c", "ide", "mdio_bus", "pci", "platform", "pnp",
                  "scsi", "serio", "spi", "usb", "virtio"}

# files the kernel shows in /sys/bus/<bus>/drivers/<name>/
DRIVER_FILES = {
    "pci": ("bind", "new_id", "remove_id", "uevent", "unbind"),
    "usb": ("bind", "new_id", "remove_id", "uevent", "unbind"),
    "hid": ("bind", "new_id", "uevent", "unbind"),
}


class Testbed:
    def __init__(self, cpus_mask="ff", cpus_list="0-7"):
        self.devs = []
        self.paths = {}
        self.cpus_mask = cpus_mask
        self.cpus_list = cpus_list

    def add(self, dev):
        assert dev.path not in self.paths, dev.path
        self.devs.append(dev)
        self.paths[dev.path] = dev
        return dev

    def dev(self, path, subsystem, **kw):
        return self.add(Dev(path, subsystem, **kw))

    def render(self):
        return "\n".join(d.render() for d in self.devs)

    def write(self, f=sys.stdout):
        if "--expected" in sys.argv[1:]:
            f.write(self.expected())
        else:
            f.write(self.render())

    def nosub_devices(self):
        """Directories that are devices without subsystem (they got a
        uevent file through a "../" attribute): pci0000:00, ata1, ..."""
        out = {}
        for d in self.devs:
            for _, _, t, name, value in d.attrs:
                if t == "A" and name.startswith("../") and name.endswith("/uevent"):
                    p = posixpath.dirname(posixpath.normpath(posixpath.join(d.path, name)))
                    if p.startswith("/devices/"):
                        out[p] = value
        return out

    def expected(self):
        """Tab-separated: devpath, parent (nearest ancestor that is a device),
        subsystem, devtype, driver, device node; '-' for none.  Devices
        without subsystem that are ancestors of records are listed too."""
        nosub = self.nosub_devices()
        rows = []
        for d in self.devs:
            rows.append((d.path, d.subsystem, d.devtype, d.driver, d.devname))
        for p, uevent in nosub.items():
            devtype = None
            for line in uevent.splitlines():
                if line.startswith("DEVTYPE="):
                    devtype = line[8:]
            rows.append((p, None, devtype, None, None))
        known = {r[0] for r in rows}
        out = ["# devpath\tparent\tsubsystem\tdevtype\tdriver\tdevnode"]
        for path, sub, devtype, drv, node in sorted(rows):
            parent = posixpath.dirname(path)
            while parent != "/devices" and parent not in known:
                parent = posixpath.dirname(parent)
            out.append("\t".join([path, parent if parent != "/devices" else "-", sub or "-",
                                  devtype or "-", drv or "-", "/dev/" + node if node else "-"]))
        return "\n".join(out) + "\n"


def bind(dev, bus, driver, module=None):
    """Bind `dev` to /sys/bus/<bus>/drivers/<driver>: the DRIVER property, the
    `driver` link, and the driver directory (created through "../" names,
    umockdev does not make it) with its files and the back-link."""
    dev.driver = driver
    drv = "/bus/%s/drivers/%s" % (bus, driver)
    dev.link("driver", drv)
    files = DRIVER_FILES.get(bus, ("bind", "uevent", "unbind"))
    if (bus, driver) == ("usb", "usb"):      # the usb_device_driver has no id table
        files = ("bind", "uevent", "unbind")
    for f in files:
        dev.outside(drv + "/" + f, "", group="driver\x00")
    dev.outside(drv + "/" + dev.name, dev.path, t="L", group="driver\x00")
    return dev


def no_subsystem_uevent(dev, ancestor, content=""):
    """Give the ancestor directory `ancestor` (a device without subsystem in
    real sysfs: pci0000:00, ata1, /devices/platform, ...) its uevent file."""
    dev.outside(ancestor + "/uevent", content)


def device_link(dev, parent):
    dev.link("device", parent)


# ---------------------------------------------------------------------------
# PCI
# ---------------------------------------------------------------------------

# IORESOURCE_* flag combinations as the kernel prints them in `resource`
RES_IO = 0x00040101             # IORESOURCE_IO | SIZEALIGN | PCI_BASE_ADDRESS_SPACE_IO
RES_IO_FIXED = 0x00000110       # legacy IDE ports: IORESOURCE_IO | IORESOURCE_PCI_FIXED
RES_MEM32 = 0x00040200          # IORESOURCE_MEM | IORESOURCE_SIZEALIGN
RES_MEM32_PREF = 0x00042208     # ... | IORESOURCE_PREFETCH | PCI_BASE_ADDRESS_MEM_PREFETCH
RES_MEM64 = 0x00140204          # ... | IORESOURCE_MEM_64 | PCI_BASE_ADDRESS_MEM_TYPE_64
RES_MEM64_PREF = 0x0014220c     # 64-bit prefetchable
RES_BRIDGE_IO = 0x00000100      # bridge I/O window: IORESOURCE_IO
RES_BRIDGE_MEM = 0x00000200     # bridge memory window: IORESOURCE_MEM
RES_BRIDGE_PREF32 = 0x00002200  # prefetchable window, 32-bit
RES_BRIDGE_PREF64 = 0x00102201  # prefetchable window, 64-bit (PCI_PREF_RANGE_TYPE_64)

# resource lines: 13 for a normal function (6 BARs, ROM, 6 SR-IOV BARs),
# 17 for a bridge (+ 4 bridge windows: I/O, mem, prefetchable mem, unused)
N_RES = 13
N_RES_BRIDGE = 17
IDX_BRIDGE_IO, IDX_BRIDGE_MEM, IDX_BRIDGE_PREF = 13, 14, 15


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


def msix_cap(c, off, nxt, nvec, bir=0, table_off=0x2000):
    c.w8(off, 0x11); c.w8(off + 1, nxt); c.w16(off + 2, (nvec - 1) & 0x7ff)
    c.w32(off + 4, table_off | bir); c.w32(off + 8, (table_off + 0x1000) | bir)


def agp_cap(c, off, nxt, rate=0x7):
    # AGP 2.0 capability: version 2.0, status with SBA and 1x/2x/4x rates
    c.w8(off, 0x02); c.w8(off + 1, nxt); c.w8(off + 2, 0x20)
    c.w32(off + 4, 0x1f000200 | rate)


# PCIe port types (PCI_EXP_TYPE_*)
PCIE_ENDPOINT, PCIE_ROOT_PORT, PCIE_UPSTREAM, PCIE_DOWNSTREAM = 0, 4, 5, 6


def pcie_cap(c, off, nxt, port_type, speed, width, slot=False, max_speed=None, max_width=None):
    max_speed = max_speed or speed
    max_width = max_width or width
    flags = 0x0002 | (port_type << 4) | (0x0100 if slot else 0)
    down = port_type in (PCIE_ROOT_PORT, PCIE_DOWNSTREAM)
    c.w8(off, 0x10); c.w8(off + 1, nxt); c.w16(off + 2, flags)
    c.w32(off + 0x04, 0x00008fc0 if port_type == 0 else 0x00008000)  # DevCap
    c.w16(off + 0x08, 0x2810 if port_type == 0 else 0x0000)          # DevCtl
    c.w32(off + 0x0c, (1 << 24 if port_type == 4 else 0) | (0x00100000 if down else 0)
          | 0x00400c00 | (max_width << 4) | max_speed)                # LnkCap
    c.w16(off + 0x10, 0x0040 if port_type == 4 else 0x0000)          # LnkCtl
    c.w16(off + 0x12, (0x1000 if port_type == 4 else 0) | (0x2000 if down else 0)
          | (width << 4) | speed)                                     # LnkSta
    c.w32(off + 0x24, 0x00000000)                                     # DevCap2
    c.w32(off + 0x2c, (1 << (max_speed + 1)) - 2)                     # LnkCap2: speeds vector
    if max_speed >= 4:
        c.w32(off + 0x2c, 0x1e)


SPEED = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe"}


def make_fn(d):
    """Fill d['config'] (bytes) and d['resource'] (list of (start, end, flags))."""
    c = Cfg()
    c.w16(0x00, d["vendor"]); c.w16(0x02, d["device"])
    c.w16(0x04, d["command"]); c.w16(0x06, d["status"])
    c.w8(0x08, d["revision"])
    c.w8(0x09, d["class"] & 0xff); c.w8(0x0a, (d["class"] >> 8) & 0xff); c.w8(0x0b, d["class"] >> 16)
    c.w8(0x0c, d.get("cacheline", 0x10))  # cache line size (64 bytes)
    c.w8(0x0d, d.get("latency", 0))
    htype = d.get("header_type", 0)
    c.w8(0x0e, htype)
    bridge = (htype & 0x7f) == 1
    res = [(0, 0, 0)] * (N_RES_BRIDGE if bridge else N_RES)

    bar_off = 0x10
    for bar in d.get("bars", []):
        start, size, flags = bar[:3]
        if len(bar) > 3:            # explicit BAR index (registers before it stay 0)
            bar_off = 0x10 + 4 * bar[3]
        # sysfs resource line n describes BAR register n; a 64-bit BAR takes
        # registers n and n+1, and line n+1 stays zero
        res[(bar_off - 0x10) // 4] = (start, start + size - 1, flags)
        if flags == RES_IO_FIXED:   # legacy ports: resource only, register 0
            bar_off += 4
        elif flags & 0x100000:      # 64-bit memory BAR
            c.w32(bar_off, (start & 0xfffffff0) | (flags & 0xf)); c.w32(bar_off + 4, start >> 32)
            bar_off += 8
        elif flags & 0x100:         # I/O BAR
            c.w32(bar_off, (start & 0xfffffffc) | 0x1)
            bar_off += 4
        else:
            c.w32(bar_off, (start & 0xfffffff0) | (flags & 0xf))
            bar_off += 4
    # an SR-IOV function's VF BARs: resource lines 7-12 (their registers are
    # in the SR-IOV capability, in extended config space, beyond these 256
    # bytes); index 0-5, a 64-bit one leaving the next line zero
    for start, size, flags, index in d.get("vf_bars", []):
        res[7 + index] = (start, start + size - 1, flags)

    if bridge:
        pri, sec, sub = d["buses"]
        c.w8(0x18, pri); c.w8(0x19, sec); c.w8(0x1a, sub); c.w8(0x1b, d.get("sec_latency", 0))
        if d.get("io_window"):
            istart, iend = d["io_window"]
            c.w8(0x1c, (istart >> 8) & 0xf0); c.w8(0x1d, (iend >> 8) & 0xf0)
            res[IDX_BRIDGE_IO] = (istart, iend, RES_BRIDGE_IO)
        else:
            c.w8(0x1c, 0xf0); c.w8(0x1d, 0x00)      # I/O window disabled (base > limit)
        c.w16(0x1e, d.get("sec_status", 0x2000))     # secondary status
        if d.get("mem_window"):
            mstart, mend = d["mem_window"]
            c.w16(0x20, (mstart >> 16) & 0xfff0); c.w16(0x22, (mend >> 16) & 0xfff0)
            res[IDX_BRIDGE_MEM] = (mstart, mend, RES_BRIDGE_MEM)
        else:
            c.w16(0x20, 0xfff0); c.w16(0x22, 0x0000)
        if d.get("pref_window"):
            pstart, pend = d["pref_window"]
            is64 = pend > 0xffffffff or d.get("pref64", False)
            t = 1 if is64 else 0
            c.w16(0x24, ((pstart >> 16) & 0xfff0) | t); c.w16(0x26, ((pend >> 16) & 0xfff0) | t)
            if is64:
                c.w32(0x28, pstart >> 32); c.w32(0x2c, pend >> 32)
            res[IDX_BRIDGE_PREF] = (pstart, pend, RES_BRIDGE_PREF64 if is64 else RES_BRIDGE_PREF32)
        else:
            c.w16(0x24, 0xfff1); c.w16(0x26, 0x0001)    # prefetchable window disabled
        c.w16(0x3e, d.get("bridge_ctl", 0x0000))         # bridge control
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
            elif kind == "msix":
                msix_cap(c, off, nxt, *args)
            elif kind == "pcie":
                args = tuple(args)
                if len(args) < 5 and d.get("pcie_max"):     # LnkCap = max_link_*
                    args = args[:3] + ((args[3] if len(args) > 3 else False),) + tuple(d["pcie_max"])
                pcie_cap(c, off, nxt, *args)
            elif kind == "agp":
                agp_cap(c, off, nxt, *args)
            elif kind == "ssvid":
                c.w8(off, 0x0d); c.w8(off + 1, nxt)
                c.w16(off + 4, d["subsys"][0]); c.w16(off + 6, d["subsys"][1])
            elif kind == "vendor":
                c.w8(off, 0x09); c.w8(off + 1, nxt); c.w8(off + 2, 0x10); c.w8(off + 3, 0x01)

    if d.get("pin"):
        c.w8(0x3c, d["irq"]); c.w8(0x3d, d["pin"])
    else:
        c.w8(0x3c, d.get("line", 0x00)); c.w8(0x3d, 0x00)
    d["config"] = bytes(c.b)
    d["resource"] = res
    d["bridge"] = bridge


def pci_function(tb, d):
    """Add a PCI function.  d: slot, path, vendor, device, revision, class
    (or class_), subsys, command, status, enable, and optional header_type,
    buses, io/mem/pref_window, bars [(start, size, RES_*[, index])],
    vf_bars [(start, size, RES_*, index)] (SR-IOV; resource lines only), irq, pin,
    caps [(offset, kind, args)], pcie_link (speed, width), pcie_max,
    driver, dma_bits, numa_node, root_uevent, iommu_group, iommu,
    firmware_node, boot_vga, extra {name: value}."""
    if "class_" in d:
        d["class"] = d.pop("class_")
    make_fn(d)
    slot = d["slot"]
    sv, sd = d["subsys"]
    cls = d["class"]
    modalias = "pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X" % (
        d["vendor"], d["device"], sv, sd, cls >> 16, (cls >> 8) & 0xff, cls & 0xff)
    dev = tb.dev(d["path"], "pci")
    # uevent: the kernel's order; SUBSYSTEM is umockdev's requirement (the
    # kernel's uevent file does not contain it)
    dev.prop("PCI_CLASS", "%X" % cls)
    dev.prop("PCI_ID", "%04X:%04X" % (d["vendor"], d["device"]))
    dev.prop("PCI_SUBSYS_ID", "%04X:%04X" % (sv, sd))
    dev.prop("PCI_SLOT_NAME", slot)
    dev.prop("MODALIAS", modalias)
    root = "/".join(d["path"].split("/")[:3])       # /devices/pciDDDD:BB
    if d.get("root_uevent"):
        # the host bridge container has no subsystem, so it cannot be a
        # record of its own; one child writes its uevent file
        no_subsystem_uevent(dev, root)
        if d.get("root_firmware_node"):
            dev.outside(root + "/firmware_node", d["root_firmware_node"], t="L")
    dev.a("ari_enabled", "0\n")
    if d.get("boot_vga") is not None:
        dev.a("boot_vga", "%d\n" % d["boot_vga"])
    dev.a("broken_parity_status", "0\n")
    dev.a("class", "0x%06x\n" % cls)
    dev.h("config", d["config"])
    dev.a("consistent_dma_mask_bits", "%d\n" % d.get("dma_bits", 32))
    if d.get("pcie_link"):
        speed, width = d["pcie_link"]
        dev.a("current_link_speed", SPEED[speed] + "\n")
        dev.a("current_link_width", "%d\n" % width)
    dev.a("d3cold_allowed", "1\n")
    dev.a("device", "0x%04x\n" % d["device"])
    dev.a("dma_mask_bits", "%d\n" % d.get("dma_bits", 32))
    if d.get("driver"):
        # libpci's PCI_FILL_DRIVER realpath()s the driver link, so it must
        # not dangle: bind() creates /sys/bus/pci/drivers/<name>/
        bind(dev, "pci", d["driver"])
    dev.a("driver_override", "(null)\n")
    dev.a("enable", "%d\n" % d["enable"])
    if d.get("firmware_node"):
        dev.link("firmware_node", d["firmware_node"])
    if d.get("iommu"):
        dev.link("iommu", d["iommu"])
        dev.outside(d["iommu"] + "/devices/" + slot, d["path"], t="L")
    if d.get("iommu_group") is not None:
        g = "/kernel/iommu_groups/%d" % d["iommu_group"]
        dev.link("iommu_group", g)
        dev.outside(g + "/type", "DMA\n")
        dev.outside(g + "/reserved_regions", "0x00000000fee00000 0x00000000feefffff msi\n")
        dev.outside(g + "/devices/" + slot, d["path"], t="L")
    dev.a("irq", "%d\n" % d.get("irq", 0))
    dev.a("local_cpulist", d.get("cpus_list", tb.cpus_list) + "\n")
    dev.a("local_cpus", d.get("cpus_mask", tb.cpus_mask) + "\n")
    if d.get("pcie_link"):
        speed, width = d.get("pcie_max") or d["pcie_link"]
        dev.a("max_link_speed", SPEED[speed] + "\n")
        dev.a("max_link_width", "%d\n" % width)
    dev.a("modalias", modalias + "\n")
    dev.a("msi_bus", "1\n")
    dev.a("numa_node", "%d\n" % d.get("numa_node", -1))
    dev.a("power/control", "%s\n" % ("auto" if d.get("driver") else "on"))
    dev.a("power/runtime_status", "active\n")
    dev.a("power_state", "D0\n")
    dev.a("resource", "".join("0x%016x 0x%016x 0x%016x\n" % r for r in d["resource"]))
    dev.a("revision", "0x%02x\n" % d["revision"])
    if d["bridge"]:
        dev.a("secondary_bus_number", "%d\n" % d["buses"][1])
        dev.a("subordinate_bus_number", "%d\n" % d["buses"][2])
    dev.a("subsystem_device", "0x%04x\n" % sd)
    dev.a("subsystem_vendor", "0x%04x\n" % sv)
    dev.a("vendor", "0x%04x\n" % d["vendor"])
    for k, v in d.get("extra", {}).items():
        dev.a(k, v)
    return dev


def pci_bus(tb, path, device, cpus_mask=None, cpus_list=None):
    """The pci_bus class device `path` (e.g. .../pci_bus/0000:01) of bridge or
    host bridge container `device`."""
    dev = tb.dev(path, "pci_bus")
    dev.a("cpuaffinity", (cpus_mask or tb.cpus_mask) + "\n")
    dev.a("cpulistaffinity", (cpus_list or tb.cpus_list) + "\n")
    dev.link("device", device)
    return dev


# ---------------------------------------------------------------------------
# USB
# ---------------------------------------------------------------------------

USB_MAJOR = 189


def usb_dev_desc(bcd_usb, cls, sub, proto, mps0, vid, pid, bcd, iman, iprod, iser, nconf=1):
    return struct.pack("<BBHBBBBHHHBBBB", 18, 1, bcd_usb, cls, sub, proto, mps0, vid, pid, bcd,
                       iman, iprod, iser, nconf)


def usb_ep(addr, xfer, maxp, interval, extra=b""):
    """xfer: 0 control, 1 isoc, 2 bulk, 3 interrupt (bmAttributes)."""
    return struct.pack("<BBBBHB", 7, 5, addr, xfer, maxp, interval) + extra


def usb_ss_companion(maxburst=0, attrs=0, bytes_per_interval=0):
    return struct.pack("<BBBBH", 6, 0x30, maxburst, attrs, bytes_per_interval)


def usb_intf(num, alt, cls, sub, proto, eps, extra=b"", iintf=0):
    """Interface descriptor + class-specific `extra` + endpoint descriptors
    (each already packed with usb_ep())."""
    return struct.pack("<BBBBBBBBB", 9, 4, num, alt, len(eps), cls, sub, proto, iintf) + extra + b"".join(eps)


def usb_config(value, attrs, maxpower_units, intfs, nintf=None, iconf=0):
    body = b"".join(intfs)
    if nintf is None:
        nintf = len({i[2] for i in intfs})
    return struct.pack("<BBHBBBBB", 9, 2, 9 + len(body), nintf, value, iconf, attrs,
                       maxpower_units) + body


def hid_desc(report_len, bcd_hid=0x0110, country=0):
    return struct.pack("<BBHBBBH", 9, 0x21, bcd_hid, country, 1, 0x22, report_len)


def hub_intf(ports, ss=False, interval=0x0c, proto=0):
    maxp = (ports + 1 + 7) // 8
    ep = usb_ep(0x81, 3, maxp, interval, usb_ss_companion(0, 0, maxp) if ss else b"")
    return usb_intf(0, 0, 9, 0, proto, [ep])


def parse_descriptors(raw):
    """Parse a sysfs `descriptors` blob: device descriptor + every
    configuration.  Returns (dev dict, [config dict]) where a config has
    'interfaces': [intf dict with 'endpoints' and 'extra' (class-specific
    descriptors)]."""
    (bl, bt, bcd_usb, cls, sub, proto, mps0, vid, pid, bcd, iman, iprod, iser,
     nconf) = struct.unpack_from("<BBHBBBBHHHBBBB", raw, 0)
    assert bl == 18 and bt == 1
    dev = dict(bcdUSB=bcd_usb, cls=cls, sub=sub, proto=proto, mps0=mps0, vid=vid, pid=pid,
               bcd=bcd, iman=iman, iprod=iprod, iser=iser, nconf=nconf)
    off = 18
    configs = []
    for _ in range(nconf):
        bl, bt, total, nintf, value, iconf, attrs, maxp = struct.unpack_from("<BBHBBBBB", raw, off)
        assert bt == 2, "config descriptor expected at %d" % off
        cfg = dict(total=total, nintf=nintf, value=value, iconf=iconf, attrs=attrs, maxpower=maxp,
                   interfaces=[])
        p = off + bl
        cur = None
        while p < off + total:
            l, t = raw[p], raw[p + 1]
            assert l >= 2, "bad descriptor length at %d" % p
            if t == 4:
                num, alt, neps, icls, isub, iproto, iintf = struct.unpack_from("<BBBBBBB", raw, p + 2)
                cur = dict(num=num, alt=alt, neps=neps, cls=icls, sub=isub, proto=iproto,
                           iintf=iintf, endpoints=[], extra=b"")
                cfg["interfaces"].append(cur)
            elif t == 5:
                addr, xfer, maxpk, interval = struct.unpack_from("<BBHB", raw, p + 2)
                cur["endpoints"].append(dict(addr=addr, attrs=xfer, maxp=maxpk, interval=interval))
            elif cur is not None:
                cur["extra"] += raw[p:p + l]
            p += l
        assert p == off + total
        configs.append(cfg)
        off += total
    assert off == len(raw), "trailing bytes in descriptors"
    return dev, configs


SPEED_MBPS = {"1.5": 1, "12": 2, "480": 3, "5000": 5, "10000": 6}


def _ep_interval(ep, speed):
    xfer = ep["attrs"] & 3
    inn = ep["addr"] & 0x80
    high = speed == "480"
    interval = 0
    if xfer == 0:
        if high:
            interval = ep["interval"]
    elif xfer == 1:
        interval = 1 << (ep["interval"] - 1)
    elif xfer == 2:
        if high and not inn:
            interval = ep["interval"]
    else:
        interval = (1 << (ep["interval"] - 1)) if high else ep["interval"]
    interval *= 125 if high else 1000
    if interval % 1000:
        return "%dus\n" % interval
    return "%dms\n" % (interval // 1000)


def _ep_dir(dev, name, ep, speed):
    """ep_XX directory: a device without subsystem (type usb_endpoint)."""
    d = name + "/"
    xfer = ep["attrs"] & 3
    dev.a(d + "bEndpointAddress", "%02x\n" % ep["addr"])
    dev.a(d + "bInterval", "%02x\n" % ep["interval"])
    dev.a(d + "bLength", "07\n")
    dev.a(d + "bmAttributes", "%02x\n" % ep["attrs"])
    dev.a(d + "direction", ("both" if xfer == 0 else "in" if ep["addr"] & 0x80 else "out") + "\n")
    dev.a(d + "interval", _ep_interval(ep, speed))
    dev.a(d + "type", ["Control", "Isoc", "Bulk", "Interrupt"][xfer] + "\n")
    dev.a(d + "uevent", "DEVTYPE=usb_endpoint\n")
    dev.a(d + "wMaxPacketSize", "%04x\n" % ep["maxp"])


def usb_device(tb, path, busnum, devnum, descriptors, speed, strings=None, maxchild=0,
               removable="unknown", port=None, intf_drivers=None, intf_strings=None,
               urbnum=10, ports=None, ltm="no", autosuspend=True, root_hub=False):
    """Add a USB device `path` (.../usbN or .../N-a.b) with its interfaces
    (active configuration = the first, alternate setting 0).

    descriptors: the sysfs `descriptors` blob (device + all configs); the text
    attributes are derived from it.  strings: manufacturer/product/serial/
    configuration text.  port: sysfs path of the hub port it is plugged into
    (the `port` link).  intf_drivers: {ifnum: driver}.  ports: for hubs, a
    list of connect_type strings (one per port) for the usb_port
    directories under the hub interface; default "hotplug" x maxchild.
    Returns (device Dev, {ifnum: interface Dev})."""
    strings = strings or {}
    intf_drivers = intf_drivers or {}
    intf_strings = intf_strings or {}
    dd, configs = parse_descriptors(descriptors)
    cfg = configs[0]
    name = posixpath.basename(path)
    ss = speed in ("5000", "10000")
    devnode = "bus/usb/%03d/%03d" % (busnum, devnum)
    minor = (busnum - 1) * 128 + devnum - 1
    dev = tb.dev(path, "usb", devtype="usb_device", major=USB_MAJOR, minor=minor,
                 devname=devnode, node_hex=descriptors.hex().upper())
    product = "%x/%x/%x" % (dd["vid"], dd["pid"], dd["bcd"])
    dtype = "%d/%d/%d" % (dd["cls"], dd["sub"], dd["proto"])
    dev.prop("PRODUCT", product)
    dev.prop("TYPE", dtype)
    dev.prop("BUSNUM", "%03d" % busnum)
    dev.prop("DEVNUM", "%03d" % devnum)
    bind(dev, "usb", "usb")
    dev.a("authorized", "1\n")
    if root_hub:
        dev.a("authorized_default", "1\n")
    dev.a("avoid_reset_quirk", "0\n")
    dev.a("bConfigurationValue", "%d\n" % cfg["value"])
    dev.a("bDeviceClass", "%02x\n" % dd["cls"])
    dev.a("bDeviceProtocol", "%02x\n" % dd["proto"])
    dev.a("bDeviceSubClass", "%02x\n" % dd["sub"])
    dev.a("bMaxPacketSize0", "%d\n" % dd["mps0"])
    dev.a("bMaxPower", "%dmA\n" % (cfg["maxpower"] * (8 if ss else 2)))
    dev.a("bNumConfigurations", "%d\n" % dd["nconf"])
    dev.a("bNumInterfaces", "%2d\n" % cfg["nintf"])
    dev.a("bcdDevice", "%04x\n" % dd["bcd"])
    dev.a("bmAttributes", "%2x\n" % cfg["attrs"])
    dev.a("busnum", "%d\n" % busnum)
    dev.a("configuration", strings["configuration"] + "\n" if "configuration" in strings else "")
    dev.h("descriptors", descriptors)
    dev.a("devnum", "%d\n" % devnum)
    dev.a("devpath", ("0" if root_hub else name.split("-", 1)[1]) + "\n")
    dev.a("idProduct", "%04x\n" % dd["pid"])
    dev.a("idVendor", "%04x\n" % dd["vid"])
    if root_hub:
        dev.a("interface_authorized_default", "1\n")
    dev.a("ltm_capable", ltm + "\n")
    for k in ("manufacturer",):
        if k in strings:
            dev.a(k, strings[k] + "\n")
    dev.a("maxchild", "%d\n" % maxchild)
    if port:
        dev.link("port", port)
    dev.a("power/active_duration", "%d\n" % (urbnum * 997))
    dev.a("power/autosuspend_delay_ms", "2000\n")
    dev.a("power/control", ("auto" if autosuspend else "on") + "\n")
    dev.a("power/level", ("auto" if autosuspend else "on") + "\n")
    dev.a("power/persist", "1\n")
    dev.a("power/runtime_status", "active\n")
    if "product" in strings:
        dev.a("product", strings["product"] + "\n")
    dev.a("quirks", "0x0\n")
    dev.a("removable", removable + "\n")
    dev.a("rx_lanes", "1\n")
    if "serial" in strings:
        dev.a("serial", strings["serial"] + "\n")
    dev.a("speed", speed + "\n")
    dev.a("tx_lanes", "1\n")
    dev.a("urbnum", "%d\n" % urbnum)
    dev.a("version", "%2x.%02x\n" % (dd["bcdUSB"] >> 8, dd["bcdUSB"] & 0xff))
    _ep_dir(dev, "ep_00", dict(addr=0, attrs=0, maxp=(1 << dd["mps0"]) if ss else dd["mps0"],
                               interval=0), speed)

    intfs = {}
    for it in cfg["interfaces"]:
        if it["alt"] != 0:
            continue
        ipath = "%s/%s:%d.%d" % (path, "%d-0" % busnum if root_hub else name, cfg["value"], it["num"])
        idev = tb.dev(ipath, "usb", devtype="usb_interface")
        modalias = "usb:v%04Xp%04Xd%04Xdc%02Xdsc%02Xdp%02Xic%02Xisc%02Xip%02Xin%02X" % (
            dd["vid"], dd["pid"], dd["bcd"], dd["cls"], dd["sub"], dd["proto"],
            it["cls"], it["sub"], it["proto"], it["num"])
        drv = intf_drivers.get(it["num"], "hub" if it["cls"] == 9 else None)
        if drv:
            bind(idev, "usb", drv)
        idev.prop("PRODUCT", product)
        idev.prop("TYPE", dtype)
        idev.prop("INTERFACE", "%d/%d/%d" % (it["cls"], it["sub"], it["proto"]))
        idev.prop("MODALIAS", modalias)
        idev.a("authorized", "1\n")
        idev.a("bAlternateSetting", "%2d\n" % it["alt"])
        idev.a("bInterfaceClass", "%02x\n" % it["cls"])
        idev.a("bInterfaceNumber", "%02x\n" % it["num"])
        idev.a("bInterfaceProtocol", "%02x\n" % it["proto"])
        idev.a("bInterfaceSubClass", "%02x\n" % it["sub"])
        idev.a("bNumEndpoints", "%02x\n" % it["neps"])
        if it["num"] in intf_strings:
            idev.a("interface", intf_strings[it["num"]] + "\n")
        idev.a("modalias", modalias + "\n")
        idev.a("supports_autosuspend", "1\n")
        for ep in it["endpoints"]:
            _ep_dir(idev, "ep_%02x" % ep["addr"], ep, speed)
        if it["cls"] == 9:
            # hub ports: devices of type usb_port, no subsystem
            kinds = ports or ["hotplug"] * maxchild
            assert len(kinds) == maxchild
            for i, kind in enumerate(kinds, 1):
                pd = "%s-port%d/" % ("usb%d" % busnum if root_hub else name, i)
                idev.a(pd + "connect_type", kind + "\n")
                idev.a(pd + "disable", "0\n")
                idev.a(pd + "early_stop", "no\n")
                idev.a(pd + "location", "0x%08x\n" % (i - 1))
                idev.a(pd + "over_current_count", "0\n")
                idev.a(pd + "power/control", "auto\n")
                idev.a(pd + "quirks", "00000000\n")
                idev.a(pd + "uevent", "DEVTYPE=usb_port\n")
                if ss:
                    idev.a(pd + "usb3_lpm_permit", "u1_u2\n")
        intfs[it["num"]] = idev
    return dev, intfs


def usb_port_path(hub_path, busnum, port, root_hub=False):
    """sysfs path of port `port` of hub device `hub_path` (its :1.0 interface)."""
    name = posixpath.basename(hub_path)
    if root_hub:
        return "%s/%d-0:1.0/usb%d-port%d" % (hub_path, busnum, busnum, port)
    return "%s/%s:1.0/%s-port%d" % (hub_path, name, name, port)


def root_hub_descriptors(kind, kver, ports):
    """Descriptors of a Linux root hub.  kind: 'uhci' (1.1), 'ehci'/'xhci2'
    (2.0), 'xhci3' (3.x, SuperSpeed / SuperSpeedPlus bcdUSB 0x0310).
    kver: (major, minor) of the kernel -> bcdDevice."""
    bcd = (kver[0] << 8) | kver[1]
    if kind == "uhci":
        d = usb_dev_desc(0x0110, 9, 0, 0, 64, 0x1d6b, 0x0001, bcd, 3, 2, 1)
        return d + usb_config(1, 0xe0, 0, [hub_intf(ports, interval=0xff)])
    if kind in ("ehci", "xhci2"):
        d = usb_dev_desc(0x0200, 9, 0, 1 if kind == "xhci2" else 0, 64, 0x1d6b, 0x0002, bcd, 3, 2, 1)
        return d + usb_config(1, 0xe0, 0, [hub_intf(ports)])
    if kind == "xhci3":
        d = usb_dev_desc(0x0310, 9, 0, 3, 9, 0x1d6b, 0x0003, bcd, 3, 2, 1)
        return d + usb_config(1, 0xe0, 0, [hub_intf(ports, ss=True)])
    raise ValueError(kind)


# ---------------------------------------------------------------------------
# HID, input
# ---------------------------------------------------------------------------

INPUT_MAJOR = 13


def hid_device(tb, parent, bus, vid, pid, seq, report_descriptor, name, phys, driver="hid-generic",
               group=1, uniq=""):
    path = "%s/%04X:%04X:%04X.%04X" % (parent, bus, vid, pid, seq)
    dev = tb.dev(path, "hid")
    bind(dev, "hid", driver)
    modalias = "hid:b%04Xg%04Xv%08Xp%08X" % (bus, group, vid, pid)
    dev.prop("HID_ID", "%04X:%08X:%08X" % (bus, vid, pid))
    dev.prop("HID_NAME", name)
    dev.prop("HID_PHYS", phys)
    dev.prop("HID_UNIQ", uniq)
    dev.prop("MODALIAS", modalias)
    dev.a("country", "00\n")
    dev.a("modalias", modalias + "\n")
    dev.a("power/control", "auto\n")
    dev.a("power/runtime_status", "unsupported\n")
    dev.h("report_descriptor", report_descriptor)
    return dev


def hidraw(tb, hid, n, major):
    dev = tb.dev(hid.path + "/hidraw/hidraw%d" % n, "hidraw", major=major, minor=n,
                 devname="hidraw%d" % n)
    dev.link("device", hid.path)
    return dev


def bitmap_bits(bm):
    """Bits set in a sysfs input bitmap ("hex hex ...", most significant
    64-bit long first)."""
    bits = []
    longs = bm.split()
    for i, w in enumerate(reversed(longs)):
        v = int(w, 16)
        for b in range(64):
            if v >> b & 1:
                bits.append(i * 64 + b)
    return bits


def input_modalias_caps(caps):
    """The capability part of an input modalias, as input_print_modalias()
    writes it: e0,1,...,k..,r..,a..,m..,l..,s..,f..,w (keys from KEY_MUTE on)."""
    out = ""
    for letter, c in zip("ekramlsfw", ["ev", "key", "rel", "abs", "msc", "led", "snd", "ff", "sw"]):
        lo = 0x71 if c == "key" else 0      # KEY_MIN_INTERESTING (KEY_MUTE)
        out += letter + "".join("%X," % b for b in bitmap_bits(caps.get(c, "0")) if b >= lo)
    return out


def input_device(tb, parent, n, name, phys, ident, caps, uniq="", props_bits="0",
                 event=None, mouse=None, leds=(), link_device=True):
    """input/inputN under `parent` with its evdev (and mouseN) nodes.
    ident: (bustype, vendor, product, version); caps: {'ev': 'hex', 'key': ...}
    in sysfs form (space separated longs)."""
    bus, vid, pid, ver = ident
    path = "%s/input/input%d" % (parent, n)
    dev = tb.dev(path, "input")
    order = ["ev", "key", "rel", "abs", "msc", "led", "snd", "ff", "sw"]
    modalias = "input:b%04Xv%04Xp%04Xe%04X-%s" % (bus, vid, pid, ver, input_modalias_caps(caps))
    dev.prop("PRODUCT", "%x/%x/%x/%x" % (bus, vid, pid, ver))
    dev.prop("NAME", '"%s"' % name)
    dev.prop("PHYS", '"%s"' % phys)
    if uniq:
        dev.prop("UNIQ", '"%s"' % uniq)
    dev.prop("PROP", props_bits)
    for c in order:
        if c in caps and caps[c] != "0":
            dev.prop(c.upper(), caps[c])
    dev.prop("MODALIAS", modalias)
    for c in ["abs", "ev", "ff", "key", "led", "msc", "rel", "snd", "sw"]:
        dev.a("capabilities/" + c, caps.get(c, "0") + "\n")
    if link_device:
        dev.link("device", parent)
    dev.a("id/bustype", "%04x\n" % bus)
    dev.a("id/product", "%04x\n" % pid)
    dev.a("id/vendor", "%04x\n" % vid)
    dev.a("id/version", "%04x\n" % ver)
    dev.a("inhibited", "0\n")
    dev.a("modalias", modalias + "\n")
    dev.a("name", name + "\n")
    dev.a("phys", phys + "\n")
    dev.a("properties", props_bits + "\n")
    dev.a("uniq", uniq + "\n")
    kids = []
    if event is not None:
        e = tb.dev(path + "/event%d" % event, "input", major=INPUT_MAJOR, minor=64 + event,
                   devname="input/event%d" % event)
        e.link("device", path)
        kids.append(e)
    if mouse is not None:
        m = tb.dev(path + "/mouse%d" % mouse, "input", major=INPUT_MAJOR, minor=32 + mouse,
                   devname="input/mouse%d" % mouse)
        m.link("device", path)
        kids.append(m)
    for led in leds:
        l = tb.dev(path + "/input%d::%s" % (n, led), "leds")
        l.a("brightness", "0\n")
        l.link("device", path)
        l.a("max_brightness", "1\n")
        l.a("trigger", "none kbd-scrolllock kbd-numlock kbd-capslock kbd-kanalock [kbd-%s] "
            "kbd-shiftlock kbd-altgrlock kbd-ctrllock kbd-altlock\n" % led)
        kids.append(l)
    return dev, kids


# ---------------------------------------------------------------------------
# SCSI, ATA, block
# ---------------------------------------------------------------------------

SD_MAJOR, SR_MAJOR, ST_MAJOR, SG_MAJOR = 8, 11, 9, 21


def scsi_host(tb, parent, n, proc_name, can_queue=1, sg_tablesize=128, cmd_per_lun=1,
              unique_id=None, extra=None, spi=False):
    path = "%s/host%d" % (parent, n)
    h = tb.dev(path, "scsi", devtype="scsi_host")
    h.a("power/control", "auto\n")
    h.a("power/runtime_status", "active\n")
    c = tb.dev(path + "/scsi_host/host%d" % n, "scsi_host")
    c.a("active_mode", "Initiator\n")
    c.a("can_queue", "%d\n" % can_queue)
    c.a("cmd_per_lun", "%d\n" % cmd_per_lun)
    c.link("device", path)
    c.a("eh_deadline", "off\n")
    c.a("host_busy", "0\n")
    c.a("host_reset", "")
    c.a("nr_hw_queues", "1\n")
    c.a("proc_name", proc_name + "\n")
    c.a("prot_capabilities", "0\n")
    c.a("prot_guard_type", "0\n")
    c.a("scan", "")
    c.a("sg_prot_tablesize", "0\n")
    c.a("sg_tablesize", "%d\n" % sg_tablesize)
    c.a("state", "running\n")
    c.a("supported_mode", "Initiator\n")
    c.a("unique_id", "%d\n" % (n + 1 if unique_id is None else unique_id))
    c.a("use_blk_mq", "1\n")
    for k, v in (extra or {}).items():
        c.a(k, v)
    if spi:
        s = tb.dev(path + "/spi_host/host%d" % n, "spi_host")
        s.link("device", path)
        s.a("signalling", "LVD\n")
    return h


def scsi_target(tb, host, h, c, t, spi=None):
    path = "%s/target%d:%d:%d" % (host.path, h, c, t)
    tg = tb.dev(path, "scsi", devtype="scsi_target")
    tg.a("power/control", "auto\n")
    tg.a("power/runtime_status", "active\n")
    if spi:
        s = tb.dev(path + "/spi_transport/target%d:%d:%d" % (h, c, t), "spi_transport")
        s.link("device", path)
        for k, v in spi.items():
            s.a(k, v + "\n")
    return tg


def inquiry(ptype, vendor, model, rev, rmb=False, version=5, flags7=0x02):
    b = bytes([ptype, 0x80 if rmb else 0, version, 0x02, 31, 0, 0, flags7])
    b += vendor.ljust(8)[:8].encode() + model.ljust(16)[:16].encode() + rev.ljust(4)[:4].encode()
    assert len(b) == 36
    return b


def scsi_device(tb, target, hctl, ptype, vendor, model, rev, driver, sg, bsg_major,
                rmb=False, scsi_level=None, version=5, queue_depth=1, timeout=30, extra=None):
    """h:c:t:l device with its scsi_device, bsg and scsi_generic class devices."""
    h, c, t, l = hctl
    name = "%d:%d:%d:%d" % hctl
    path = target.path + "/" + name
    d = tb.dev(path, "scsi", devtype="scsi_device")
    if driver:
        bind(d, "scsi", driver)
    modalias = "scsi:t-0x%02x" % ptype
    d.prop("MODALIAS", modalias)
    d.a("blacklist", "\n")
    d.a("device_blocked", "0\n")
    d.a("device_busy", "0\n")
    d.a("eh_timeout", "10\n")
    for e in ("capacity_change_reported", "inquiry_change_reported", "lun_change_reported",
              "media_change", "mode_parameter_change_reported", "soft_threshold_reached"):
        d.a("evt_" + e, "0\n")
    d.link("generic", path + "/scsi_generic/sg%d" % sg)
    d.h("inquiry", inquiry(ptype, vendor, model, rev, rmb, version))
    d.a("iocounterbits", "32\n")
    d.a("iodone_cnt", "0x%x\n" % 0x1f4)
    d.a("ioerr_cnt", "0x0\n")
    d.a("iorequest_cnt", "0x%x\n" % 0x1f4)
    d.a("modalias", modalias + "\n")
    d.a("model", model.ljust(16) + "\n")
    d.a("power/control", "auto\n")
    d.a("power/runtime_status", "active\n")
    d.a("queue_depth", "%d\n" % queue_depth)
    d.a("queue_type", "simple\n" if queue_depth > 1 else "none\n")
    d.a("rev", rev.ljust(4) + "\n")
    d.a("scsi_level", "%d\n" % (scsi_level if scsi_level is not None else version + 1))
    d.a("state", "running\n")
    d.a("timeout", "%d\n" % timeout)
    d.a("type", "%d\n" % ptype)
    d.a("vendor", vendor.ljust(8) + "\n")
    for k, v in (extra or {}).items():
        d.a(k, v)
    sd = tb.dev(path + "/scsi_device/" + name, "scsi_device")
    sd.link("device", path)
    b = tb.dev(path + "/bsg/" + name, "bsg", major=bsg_major, minor=sg, devname="bsg/" + name)
    b.link("device", path)
    g = tb.dev(path + "/scsi_generic/sg%d" % sg, "scsi_generic", major=SG_MAJOR, minor=sg,
               devname="sg%d" % sg)
    g.link("device", path)
    return d


def scsi_disk_class(tb, sdev, fua=0, cache="write back"):
    name = posixpath.basename(sdev.path)
    d = tb.dev(sdev.path + "/scsi_disk/" + name, "scsi_disk")
    d.a("FUA", "%d\n" % fua)
    d.a("allow_restart", "1\n")
    d.a("app_tag_own", "0\n")
    d.a("cache_type", cache + "\n")
    d.link("device", sdev.path)
    d.a("manage_start_stop", "0\n")
    d.a("max_medium_access_timeouts", "2\n")
    d.a("max_write_same_blocks", "0\n")
    d.a("protection_mode", "none\n")
    d.a("protection_type", "0\n")
    d.a("provisioning_mode", "full\n")
    d.a("thin_provisioning", "0\n")
    d.a("zeroing_mode", "write\n")
    d.a("zoned_cap", "none\n")
    return d


ZERO_STAT = " ".join(["%8d" % 0] * 17) + "\n"


def block_disk(tb, parent, name, major, minor, sectors, diskseq, removable=0, ro=0,
               rotational=1, lbs=512, range_=16, capability="0", events="", device=True,
               hidden=False, dev_path=None, extra_props=(), queue_extra=None, parent_link=None):
    """A whole disk: <parent>/block/<name>, or dev_path if given (nvme, virtual)."""
    path = dev_path or "%s/block/%s" % (parent, name)
    d = tb.dev(path, "block", devtype="disk", major=major, minor=minor,
               devname=None if hidden else name)
    d.prop("DISKSEQ", "%d" % diskseq)
    for k, v in extra_props:
        d.prop(k, v)
    d.a("alignment_offset", "0\n")
    d.a("capability", capability + "\n")
    if device:
        d.link("device", parent_link or parent)
    d.a("discard_alignment", "0\n")
    d.a("diskseq", "%d\n" % diskseq)
    d.a("events", events + "\n")
    d.a("events_async", "\n")
    d.a("events_poll_msecs", "-1\n")
    d.a("ext_range", "%d\n" % (256 if range_ > 1 else 1))
    d.a("hidden", "%d\n" % hidden)
    d.a("inflight", "       0        0\n")
    d.a("queue/hw_sector_size", "%d\n" % lbs)
    d.a("queue/logical_block_size", "%d\n" % lbs)
    d.a("queue/max_sectors_kb", "1280\n")
    d.a("queue/physical_block_size", "%d\n" % lbs)
    d.a("queue/rotational", "%d\n" % rotational)
    d.a("queue/scheduler", "[mq-deadline] none\n" if rotational else "[none] mq-deadline\n")
    for k, v in (queue_extra or {}).items():
        d.a("queue/" + k, v)
    d.a("range", "%d\n" % range_)
    d.a("removable", "%d\n" % removable)
    d.a("ro", "%d\n" % ro)
    d.a("size", "%d\n" % sectors)
    d.a("stat", ZERO_STAT)
    return d


def block_partition(tb, disk, n, start, sectors, diskseq, name=None, partname=None, minor=None):
    """Partition n of `disk`; minor defaults to the disk's + n (sd); devices
    with extended dev_t (nvme, 259:x) pass the allocated minor."""
    name = name or "%s%d" % (disk.name, n)
    p = tb.dev(disk.path + "/" + name, "block", devtype="partition", major=disk.major,
               minor=disk.minor + n if minor is None else minor, devname=name)
    p.prop("DISKSEQ", "%d" % diskseq)
    p.prop("PARTN", "%d" % n)
    if partname:
        p.prop("PARTNAME", partname)
    p.a("alignment_offset", "0\n")
    p.a("discard_alignment", "0\n")
    p.a("inflight", "       0        0\n")
    p.a("partition", "%d\n" % n)
    p.a("ro", "0\n")
    p.a("size", "%d\n" % sectors)
    p.a("start", "%d\n" % start)
    p.a("stat", ZERO_STAT)
    return p


def ata_port(tb, parent, n, host, sata=True, dev_class=None, proc_name="ata_piix"):
    """ataN port of a libata controller with its link and device(s) and SCSI
    host hostM.  ataN, linkN and devN.M have no subsystem in real sysfs
    (types ata_port, ata_link, ata_device): their uevent files are written
    by their class devices' records.  Returns the scsi host Dev."""
    ap = "%s/ata%d" % (parent, n)
    c = tb.dev(ap + "/ata_port/ata%d" % n, "ata_port")
    no_subsystem_uevent(c, ap, "DEVTYPE=ata_port\n")
    c.link("device", ap)
    c.a("idle_irq", "0\n")
    c.a("nr_pmp_links", "0\n")
    c.a("port_no", "%d\n" % n)
    link = ap + "/link%d" % n
    lc = tb.dev(link + "/ata_link/link%d" % n, "ata_link")
    no_subsystem_uevent(lc, link, "DEVTYPE=ata_link\n")
    lc.link("device", link)
    spd = "6.0 Gbps" if (sata and dev_class) else "<unknown>"
    lc.a("hw_sata_spd_limit", ("6.0 Gbps" if sata else "<unknown>") + "\n")
    lc.a("sata_spd", spd + "\n")
    lc.a("sata_spd_limit", ("6.0 Gbps" if sata else "<unknown>") + "\n")
    for i in range(1 if sata else 2):
        dv = link + "/dev%d.%d" % (n, i)
        dc = tb.dev(dv + "/ata_device/dev%d.%d" % (n, i), "ata_device")
        no_subsystem_uevent(dc, dv, "DEVTYPE=ata_device\n")
        present = dev_class if i == 0 else None
        dc.a("class", (present or "none") + "\n")
        dc.link("device", dv)
        dc.a("dma_mode", ("UDMA/133" if present else "<unknown>") + "\n")
        dc.a("ering", "\n")
        dc.a("pio_mode", ("XFER_PIO_4" if present else "<unknown>") + "\n")
        dc.a("spdn_cnt", "0\n")
        dc.a("trim", ("queued" if present and sata else "unsupported") + "\n")
        dc.a("xfer_mode", ("XFER_UDMA_6" if present else "<unknown>") + "\n")
    return scsi_host(tb, ap, host, proc_name, can_queue=32 if sata else 1,
                     sg_tablesize=168 if sata else 128, unique_id=n,
                     extra={"link_power_management_policy": "max_performance\n"} if sata else None)


# ---------------------------------------------------------------------------
# class devices: net, tty, sound, graphics, drm
# ---------------------------------------------------------------------------

def net_if(tb, parent, name, ifindex, mac, speed=1000, duplex="full", mtu=1500, ntx=1, nrx=1,
           path=None, devtype=None, type_=1, flags="0x1003", operstate="up", phys_port=None,
           name_assign=4, dev_port=0, carrier=True):
    path = path or "%s/net/%s" % (parent, name)
    d = tb.dev(path, "net", devtype=devtype)
    d.prop("INTERFACE", name)
    d.prop("IFINDEX", "%d" % ifindex)
    d.a("addr_assign_type", "0\n")
    d.a("addr_len", "6\n")
    d.a("address", mac + "\n")
    d.a("broadcast", ("ff:ff:ff:ff:ff:ff" if type_ == 1 else "00:00:00:00:00:00") + "\n")
    d.a("carrier", "%d\n" % carrier)
    if parent:
        d.link("device", parent)
    d.a("dev_id", "0x0\n")
    d.a("dev_port", "%d\n" % dev_port)
    d.a("dormant", "0\n")
    if parent:
        d.a("duplex", (duplex if carrier else "unknown") + "\n")
    d.a("flags", flags + "\n")
    d.a("ifalias", "\n")
    d.a("ifindex", "%d\n" % ifindex)
    d.a("iflink", "%d\n" % ifindex)
    d.a("link_mode", "0\n")
    d.a("mtu", "%d\n" % mtu)
    d.a("name_assign_type", "%d\n" % name_assign)
    d.a("netdev_group", "0\n")
    d.a("operstate", operstate + "\n")
    if phys_port:
        d.a("phys_port_name", phys_port + "\n")
    d.a("proto_down", "0\n")
    for i in range(nrx):
        d.a("queues/rx-%d/rps_cpus" % i, "00\n")
    for i in range(ntx):
        d.a("queues/tx-%d/xps_cpus" % i, "00\n")
    if parent:
        d.a("speed", "%d\n" % (speed if carrier else -1))
    for s in ("rx_bytes", "rx_errors", "rx_packets", "tx_bytes", "tx_errors", "tx_packets"):
        d.a("statistics/" + s, "0\n")
    d.a("tx_queue_len", "1000\n")
    d.a("type", "%d\n" % type_)
    return d


NVME_MAJOR, NVME_GENERIC_MAJOR, BLOCK_EXT_MAJOR = 239, 238, 259


def nvme_controller(tb, pci, n, subsys_n, model, serial, fw, nqn, namespaces, cntlid=1,
                    numa_node=-1):
    """NVMe controller nvmeN under PCI function `pci` (path), its subsystem
    /devices/virtual/nvme-subsystem/nvme-subsysM, and the namespaces as
    native-multipath head disks under the subsystem (Debian's default,
    CONFIG_NVME_MULTIPATH=y).  namespaces: [(nsid, minor, sectors, diskseq,
    [(part_minor_offset, start, size), ...])].  The hidden per-path disks
    (nvmeNcCnM) are not modelled."""
    ctrl = tb.dev("%s/nvme/nvme%d" % (pci, n), "nvme", major=NVME_MAJOR, minor=n,
                  devname="nvme%d" % n)
    sub = "/devices/virtual/nvme-subsystem/nvme-subsys%d" % subsys_n
    ctrl.a("address", posixpath.basename(pci) + "\n")
    ctrl.a("cntlid", "%d\n" % cntlid)
    ctrl.a("cntrltype", "io\n")
    ctrl.link("device", pci)
    ctrl.a("firmware_rev", fw + "\n")
    ctrl.a("kato", "0\n")
    ctrl.a("model", model + "\n")
    ctrl.a("numa_node", "%d\n" % numa_node)
    ctrl.a("queue_count", "33\n")
    ctrl.a("serial", serial + "\n")
    ctrl.a("sqsize", "1023\n")
    ctrl.a("state", "live\n")
    ctrl.a("subsysnqn", nqn + "\n")
    ctrl.a("transport", "pcie\n")
    s = tb.dev(sub, "nvme-subsystem")
    s.a("firmware_rev", fw + "\n")
    s.a("iopolicy", "numa\n")
    s.a("model", model + "\n")
    s.link("nvme%d" % n, ctrl.path)
    s.a("serial", serial + "\n")
    s.a("subsysnqn", nqn + "\n")
    s.a("subsystype", "nvm\n")
    disks = []
    for nsid, minor, sectors, diskseq, parts in namespaces:
        name = "nvme%dn%d" % (subsys_n, nsid)
        g = tb.dev(ctrl.path + "/ng%dn%d" % (n, nsid), "nvme-generic", major=NVME_GENERIC_MAJOR,
                   minor=n, devname="ng%dn%d" % (n, nsid))
        g.link("device", ctrl.path)
        disk = block_disk(tb, sub, name, BLOCK_EXT_MAJOR, minor, sectors, diskseq, rotational=0,
                          dev_path=sub + "/" + name, queue_extra={"nr_requests": "1023\n"})
        disk.a("nsid", "%d\n" % nsid)
        disk.a("wwid", "eui.%016x\n" % (0x0025384500000000 + nsid + 0x100 * subsys_n))
        for i, (off, start, size) in enumerate(parts, 1):
            block_partition(tb, disk, i, start, size, diskseq, name="%sp%d" % (name, i),
                            minor=minor + off)
        disks.append(disk)
    return ctrl, s, disks


def tty(tb, parent, name, major, minor, path=None, serial=None, device=True):
    """ttyX under parent/tty/ (or at `path`).  serial: dict of 8250 port
    attributes (port, irq, line, type, uartclk, ...)."""
    path = path or "%s/tty/%s" % (parent, name)
    d = tb.dev(path, "tty", major=major, minor=minor, devname=name)
    if device and parent:
        d.link("device", parent)
    d.a("power/control", "auto\n")
    d.a("power/runtime_status", "unsupported\n")
    if serial:
        defaults = dict(close_delay="50", closing_wait="3000", console="N", custom_divisor="0",
                        flags="0x10000000", io_type="0", iomem_base="0x0", iomem_reg_shift="0",
                        rx_trig_bytes="8", type="4", uartclk="1843200", xmit_fifo_size="16")
        defaults.update(serial)
        for k, v in defaults.items():
            d.a(k, v + "\n")
    return d


SOUND_MAJOR = 116


def sound_card(tb, parent, card, card_id, devices):
    """sound/cardN with its char devices.  devices: [(name, minor, extra attrs)]."""
    path = "%s/sound/card%d" % (parent, card)
    c = tb.dev(path, "sound")
    c.link("device", parent)
    c.a("id", card_id + "\n")
    c.a("number", "%d\n" % card)
    c.a("power/control", "auto\n")
    c.a("power/runtime_status", "unsupported\n")
    kids = []
    for name, minor, extra in devices:
        k = tb.dev(path + "/" + name, "sound", major=SOUND_MAJOR, minor=minor, devname="snd/" + name)
        k.link("device", path)
        for a, v in (extra or {}).items():
            k.a(a, v)
        kids.append(k)
    return c, kids


def framebuffer(tb, parent, n, fbname, mode, bpp=32, stride=None, virt=None, refresh=0):
    path = "%s/graphics/fb%d" % (parent, n)
    f = tb.dev(path, "graphics", major=29, minor=n, devname="fb%d" % n)
    w, h = [int(x) for x in mode.split("x")]
    f.a("bits_per_pixel", "%d\n" % bpp)
    f.a("blank", "")
    f.a("console", "")
    f.a("cursor", "")
    f.link("device", parent)
    f.a("mode", "\n")
    f.a("modes", "U:%dx%dp-%d\n" % (w, h, refresh))
    f.a("name", fbname + "\n")
    f.a("pan", "0,0\n")
    f.a("rotate", "0\n")
    f.a("state", "0\n")
    f.a("stride", "%d\n" % (stride or w * bpp // 8))
    f.a("virtual_size", (virt or "%d,%d" % (w, h)) + "\n")
    return f


def drm_card(tb, parent, n, connectors):
    """drm/cardN (DEVTYPE drm_minor) and its connectors [(name, status, modes)]."""
    path = "%s/drm/card%d" % (parent, n)
    c = tb.dev(path, "drm", devtype="drm_minor", major=226, minor=n, devname="dri/card%d" % n)
    c.link("device", parent)
    c.a("power/control", "auto\n")
    c.a("power/runtime_status", "unsupported\n")
    for i, (cname, status, modes) in enumerate(connectors, 1):
        k = tb.dev(path + "/card%d-%s" % (n, cname), "drm", devtype="drm_connector")
        k.a("connector_id", "%d\n" % (30 + i))
        k.link("device", path)
        k.a("dpms", ("On" if status == "connected" else "Off") + "\n")
        k.a("enabled", ("enabled" if status == "connected" else "disabled") + "\n")
        k.a("modes", "".join(m + "\n" for m in modes))
        k.a("status", status + "\n")
    return c


# ---------------------------------------------------------------------------
# platform, pnp, acpi, system
# ---------------------------------------------------------------------------

def platform_device(tb, name, driver=None, modalias=None, parent="/devices/platform", extra=None,
                    driver_override=True):
    path = "%s/%s" % (parent, name)
    d = tb.dev(path, "platform")
    if parent == "/devices/platform":
        # /devices/platform is the platform bus's root device (no subsystem)
        no_subsystem_uevent(d, parent)
    if driver:
        bind(d, "platform", driver)
    modalias = modalias or "platform:" + name.split(".")[0]
    d.prop("MODALIAS", modalias)
    if driver_override:
        d.a("driver_override", "(null)\n")
    d.a("modalias", modalias + "\n")
    d.a("power/control", "auto\n")
    d.a("power/runtime_status", "unsupported\n")
    for k, v in (extra or {}).items():
        d.a(k, v)
    return d


def pnp_device(tb, n, pnpid, resources, driver=None, firmware_node=None, options=""):
    path = "/devices/pnp0/00:%02x" % n
    d = tb.dev(path, "pnp")
    no_subsystem_uevent(d, "/devices/pnp0")    # the pnp0 protocol device
    if driver:
        bind(d, "pnp", driver)
    if firmware_node:
        d.link("firmware_node", firmware_node)
    d.a("id", pnpid + "\n")
    d.a("options", options)
    d.a("power/control", "auto\n")
    d.a("power/runtime_status", "unsupported\n")
    d.a("resources", "state = active\n" + "".join(r + "\n" for r in resources))
    return d


def acpi_device(tb, path, hid=None, acpi_path=None, uid=None, adr=None, status=None,
                physical_node=None, driver=None, extra=None):
    d = tb.dev(path, "acpi")
    if driver:
        bind(d, "acpi", driver)
    if hid:
        d.prop("MODALIAS", "acpi:%s:" % hid)
        d.a("hid", hid + "\n")
        d.a("modalias", "acpi:%s:\n" % hid)
    if adr is not None:
        d.a("adr", "0x%08x\n" % adr)
    if acpi_path:
        d.a("path", acpi_path + "\n")
    if physical_node:
        d.link("physical_node", physical_node)
    d.a("power/control", "auto\n")
    d.a("power/runtime_status", "unsupported\n")
    if status is not None:
        d.a("status", "%d\n" % status)
    if uid is not None:
        d.a("uid", uid + "\n")
    for k, v in (extra or {}).items():
        d.a(k, v)
    return d


def system_device(tb, bus, name, driver=None, modalias=None, root_attrs=None, extra=None):
    """/devices/system/<bus>/<name>.  /devices/system/<bus> is the bus's
    root device (no subsystem, empty uevent) and carries `root_attrs`."""
    root = "/devices/system/" + bus
    d = tb.dev(root + "/" + name, bus)
    no_subsystem_uevent(d, root)
    if bus not in UMOCKDEV_BUSES:
        # a bus in the kernel, a class to umockdev: add the bus listing too
        d.outside("/bus/%s/devices/%s" % (bus, name), d.path, t="L")
    for k, v in (root_attrs or {}).items():
        d.outside(root + "/" + k, v)
    if driver:
        bind(d, bus, driver)
    if modalias:
        d.prop("MODALIAS", modalias)
        d.a("modalias", modalias + "\n")
    d.a("power/control", "auto\n")
    d.a("power/runtime_status", "unsupported\n")
    for k, v in (extra or {}).items():
        d.a(k, v)
    return d


def virtual_device(tb, cls, name, major=None, minor=None, devname=None, extra=None, props=()):
    d = tb.dev("/devices/virtual/%s/%s" % (cls, name), cls, major=major, minor=minor,
               devname=devname)
    for k, v in props:
        d.prop(k, v)
    for k, v in (extra or {}).items():
        d.a(k, v)
    return d


def devlink(tb, supplier, consumer, sbus, cbus, status="active", sync_state_only=False,
            runtime_pm=False, auto_remove_on="consumer"):
    """A device link (Documentation/ABI/testing/sysfs-class-devlink): the
    devlink class device /devices/virtual/devlink/<sbus>:<s>--<cbus>:<c>
    with its supplier and consumer links and attributes, and the
    supplier:/consumer: links in both devices' directories.  A stateless
    link's status is "not tracked" and it is never removed on its own."""
    s, c = supplier.name, consumer.name
    name = "%s:%s--%s:%s" % (sbus, s, cbus, c)
    d = tb.dev("/devices/virtual/devlink/" + name, "devlink")
    d.link("supplier", supplier.path)
    d.link("consumer", consumer.path)
    d.a("auto_remove_on", auto_remove_on + "\n")
    d.a("runtime_pm", "%d\n" % runtime_pm)
    d.a("status", status + "\n")
    d.a("sync_state_only", "%d\n" % sync_state_only)
    supplier.link("consumer:%s:%s" % (cbus, c), d.path)
    consumer.link("supplier:%s:%s" % (sbus, s), d.path)
    return d
