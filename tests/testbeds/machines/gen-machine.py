#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Testbeds of real machines from public data (README.md beside this file says
which machine comes from where, under which licence, and what was changed).

    gen-machine.py sysfs ROOT [--exclude REGEX] > NAME.umockdev
    gen-machine.py udevdb DUMP > NAME.umockdev

sysfs: ROOT holds a copy of a machine's sys/ tree (a tarball some project
ships).  umockdev-record --all records it under umockdev's preload with
UMOCKDEV_DIR=ROOT, so it reads the copy as /sys: every attribute, property
and link is the recorded machine's.  Then the umockdev workarounds of
../README.md are added: devices without subsystem get their uevent file
through a "../" attribute of a record below them, each driver its directory
(the files the copy's driver directory has, empty, and the back-link), and
devices on buses umockdev does not know their /sys/bus/<bus>/devices/ link.
Write-only files the copy has as empty files are dropped; USB devices of a
kernel without DEVNAME in uevent get the node udev named.

udevdb: DUMP is `udevadm info --export-db` of a machine.  It has the device
paths, subsystems, drivers and uevent properties, but no attributes: the
kernel's uevent properties are kept (the ones udev adds, ID_*, TAGS ..., are
dropped) and the attributes the tests compare are derived from them (see
derive_* below; README.md lists them).  The only values not derived are a
PCI function's irq and resource, which libpci cannot do without: 0 and
zero lines, said so in README.md.
"""
import os
import posixpath
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tbgen import DRIVER_FILES, esc, kernfs_link, relname  # noqa: E402

# subsystems umockdev 0.17.16 makes buses itself (/sys/bus/X/devices/<name>,
# subsystem -> ../bus/X), tried out: tbgen.UMOCKDEV_BUSES and more
UMOCKDEV_BUSES = {"acpi", "dax", "event_source", "gpio", "hdaudio", "hid", "i2c", "ide",
                  "mdio_bus", "media", "mei", "nd", "nvmem", "pci", "platform", "pnp", "scsi",
                  "serio", "spi", "tee", "thunderbolt", "usb", "virtio", "wmi_bus"}

# subsystems that are buses in the kernel (/sys/bus/<name>), for dumps,
# which do not say; the sysfs copies have their own sys/bus/
KERNEL_BUSES = {
    "ac97", "acpi", "auxiliary", "clockevents", "clocksource", "container", "cpu", "cxl",
    "dax", "edac", "event_source", "gpio", "hdaudio", "hid", "i2c", "ishtp", "machinecheck",
    "mdio_bus", "media", "mei", "memory", "mmc", "nd", "node", "nvmem", "pci", "pci_express",
    "platform", "pnp", "scsi", "sdio", "serial", "serial-base", "serio", "snd_seq",
    "soundwire", "spi", "thunderbolt", "typec", "usb", "usb-serial", "virtio", "wmi",
    "workqueue", "xen",
}

# sysfs files the kernel makes write-only (mode 0200) on devices
WRITE_ONLY = {"delete", "remove", "rescan", "reset", "scan"}

# properties udev adds to a device (the kernel's uevent has none of them)
UDEV_ADDED = re.compile(r"^(ID_|DEVLINKS$|TAGS$|CURRENT_TAGS$|USEC_INITIALIZED$|SYSTEMD_|"
                        r"UDEV_|XKB|DMI_VENDOR$|LIBINPUT_|MOUSE_|KEYBOARD_|SOUND_|COLORD_|"
                        r"NM_|MEMORY_DEVICE_|DM_|UDISKS_|MPATH|FWUPD_|ACCEL_|TOUCHPAD_|"
                        r"LIBSANE_|ID$|PATH$|DEVPATH$|[a-z.])")


class Record:
    def __init__(self, path):
        self.path = path
        self.lines = []          # (type, name, value) in order

    def get(self, t, name):
        for tt, n, v in self.lines:
            if tt == t and n == name:
                return v
        return None

    @property
    def subsystem(self):
        return self.get("E", "SUBSYSTEM")

    def add(self, t, name, value):
        self.lines.append((t, name, value))

    def render(self):
        out = ["P: " + self.path]
        for t, n, v in self.lines:
            if t == "N":
                out.append("N: %s" % n + ("=" + v if v else ""))
            else:
                out.append("%s: %s=%s" % (t, n, v))
        return "\n".join(out) + "\n"


def parse_umockdev(text):
    recs = []
    for block in text.split("\n\n"):
        lines = [ln for ln in block.split("\n") if ln]
        if not lines or not lines[0].startswith("P: "):
            continue
        r = Record(lines[0][3:])
        for ln in lines[1:]:
            name, _, value = ln[3:].partition("=")
            r.add(ln[0], name, value)
        recs.append(r)
    return recs


def add_driver_dirs(recs, driver_files):
    """The driver directory of each bound device (umockdev does not make it):
    its files, once per driver, and the device's back-link."""
    done = set()
    for r in recs:
        target = r.get("L", "driver")
        if target is None:
            continue
        drv = posixpath.normpath(posixpath.join(r.path, target))   # /bus/<bus>/drivers/<d>
        if drv not in done:
            done.add(drv)
            for f in driver_files(drv):
                r.add("A", relname(r.path, drv + "/" + f), "")
        r.add("L", relname(r.path, drv + "/" + posixpath.basename(r.path)),
              kernfs_link(drv, r.path))


def add_bus_links(recs, is_bus):
    """/sys/bus/<bus>/devices/<name> of devices on buses umockdev makes a class."""
    for r in recs:
        sub = r.subsystem
        if sub and sub not in UMOCKDEV_BUSES and is_bus(sub):
            link = "/bus/%s/devices/%s" % (sub, posixpath.basename(r.path))
            r.add("L", relname(r.path, link), kernfs_link(posixpath.dirname(link), r.path))


def add_nosub_uevents(recs, nosub):
    """uevent files of devices without subsystem ({path: content}), each
    through the first record below it."""
    paths = sorted(r.path for r in recs)
    by_path = {r.path: r for r in recs}
    for p, content in sorted(nosub.items()):
        below = next((q for q in paths if q.startswith(p + "/")), None)
        if below is None:
            continue
        by_path[below].add("A", relname(below, p + "/uevent"), esc(content))


def add_usb_nodes(recs):
    """/dev/bus/usb/BBB/DDD of USB devices whose record has no node (a kernel
    before DEVNAME was in uevent, 2.6.31): the node udev named, holding the
    descriptors as usbfs reads them, and its DEVNAME, without which libusb
    (it asks libudev for the node) and so lsusb see no device."""
    for r in recs:
        if r.get("E", "DEVTYPE") == "usb_device" and not any(t == "N" for t, _, _ in r.lines):
            bus, dev, desc = r.get("E", "BUSNUM"), r.get("E", "DEVNUM"), r.get("H", "descriptors")
            if bus and dev and desc:
                node = "bus/usb/%03d/%03d" % (int(bus), int(dev))
                r.lines.insert(0, ("N", node, desc))
                if r.get("E", "DEVNAME") is None:
                    r.lines.insert(1, ("E", "DEVNAME", "/dev/" + node))


def drop_fuse_node(recs):
    """A testbed with /dev/fuse would shadow the real one: no mount could be made."""
    for r in recs:
        r.lines = [(t, n, v) for t, n, v in r.lines if not (t == "N" and n == "fuse")]


def render(recs):
    return "\n".join(r.render() for r in sorted(recs, key=lambda r: r.path))


# ---------------------------------------------------------------------------
# a copy of sysfs
# ---------------------------------------------------------------------------

def from_sysfs(root, exclude=None):
    env = dict(os.environ, UMOCKDEV_DIR=root, LD_PRELOAD="libumockdev-preload.so.0")
    out = subprocess.run(["umockdev-record", "--all"], env=env, check=True,
                         capture_output=True, text=True).stdout
    recs = [r for r in parse_umockdev(out) if not (exclude and re.search(exclude, r.path))]
    # files the kernel makes write-only (0200): a copy made by reading the
    # tree has them as empty files, which the kernel's are not
    for r in recs:
        r.lines = [(t, n, v) for t, n, v in r.lines
                   if not (t == "A" and n in WRITE_ONLY and v == "")]
    sysd = os.path.join(root, "sys")
    have = {r.path for r in recs}
    nosub = {}
    for top, dirs, names in os.walk(os.path.join(sysd, "devices")):
        p = top[len(sysd):]
        if "uevent" in names and p not in have and not (exclude and re.search(exclude, p)):
            with open(os.path.join(top, "uevent"), errors="surrogateescape") as f:
                nosub[p] = f.read()
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]

    def driver_files(drv):
        d = sysd + drv
        if not os.path.isdir(d):       # the copy left the driver out
            return DRIVER_FILES.get(drv.split("/")[2], ("bind", "uevent", "unbind"))
        return sorted(f for f in os.listdir(d) if os.path.isfile(os.path.join(d, f))
                      and not os.path.islink(os.path.join(d, f)))

    add_nosub_uevents(recs, nosub)
    add_driver_dirs(recs, driver_files)
    add_bus_links(recs, lambda sub: os.path.isdir(os.path.join(sysd, "bus", sub)))
    add_usb_nodes(recs)
    drop_fuse_node(recs)
    return render(recs)


# ---------------------------------------------------------------------------
# a udev database dump
# ---------------------------------------------------------------------------

def parse_dump(text):
    devs = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.strip("\n").split("\n")
        if not lines or not lines[0].startswith("P: "):
            continue
        d = {"path": lines[0][3:].strip(), "props": {}, "node": None}
        for ln in lines[1:]:
            if ln.startswith("E: "):
                k, _, v = ln[3:].partition("=")
                d["props"][k] = v
            elif ln.startswith("N: "):
                d["node"] = ln[3:].strip()
        devs.append(d)
    return devs


def udev_decode(s):
    """udev's \\xHH encoding (ID_*_ENC) back to the string."""
    return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), s)


def text_attr(value):
    return esc(value + "\n")


def pci_config(d, devs_by_path):
    """A 64-byte config header from the ids: what lspci reads (vendor,
    device, class, header type and bus numbers of a bridge, subsystem ids).
    Revision, command/status, BARs and interrupt are unknown: zero."""
    p = d["props"]
    vid, did = (int(x, 16) for x in p["PCI_ID"].split(":"))
    cls = int(p.get("PCI_CLASS", "0"), 16)
    cfg = bytearray(64)
    cfg[0:2] = vid.to_bytes(2, "little")
    cfg[2:4] = did.to_bytes(2, "little")
    cfg[9:12] = cls.to_bytes(3, "little")
    slot = p["PCI_SLOT_NAME"]
    dom, bus, devfn = slot.split(":")
    dev, fn = devfn.split(".")
    multi = any(o["props"].get("PCI_SLOT_NAME", "").startswith("%s:%s:%s." % (dom, bus, dev))
                and o is not d for o in devs_by_path.values())
    htype = 1 if cls >> 8 == 0x0604 else 0
    cfg[14] = htype | (0x80 if multi else 0)
    if htype == 1:
        below = [int(o["props"]["PCI_SLOT_NAME"].split(":")[1], 16)
                 for q, o in devs_by_path.items()
                 if q.startswith(d["path"] + "/") and "PCI_SLOT_NAME" in o["props"]]
        cfg[24] = int(bus, 16)
        cfg[25] = min(below) if below else 0
        cfg[26] = max(below) if below else 0
    elif "PCI_SUBSYS_ID" in p:
        svid, sdid = (int(x, 16) for x in p["PCI_SUBSYS_ID"].split(":"))
        cfg[0x2c:0x2e] = svid.to_bytes(2, "little")
        cfg[0x2e:0x30] = sdid.to_bytes(2, "little")
    return bytes(cfg)


def derive_pci(d, devs_by_path, add):
    p = d["props"]
    vid, did = p["PCI_ID"].lower().split(":")
    add("A", "vendor", text_attr("0x" + vid))
    add("A", "device", text_attr("0x" + did))
    if "PCI_SUBSYS_ID" in p:
        svid, sdid = p["PCI_SUBSYS_ID"].lower().split(":")
        add("A", "subsystem_vendor", text_attr("0x" + svid))
        add("A", "subsystem_device", text_attr("0x" + sdid))
    if "PCI_CLASS" in p:
        add("A", "class", text_attr("0x%06x" % int(p["PCI_CLASS"], 16)))
    add("H", "config", pci_config(d, devs_by_path).hex().upper())
    # every function has irq and resource, and libpci (so lspci and driverfsd)
    # gives up without them; the dump has no values: 0 and empty resources
    # (13 lines, 17 for a bridge, as a kernel with CONFIG_PCI_IOV prints)
    add("A", "irq", text_attr("0"))
    nres = 17 if int(p.get("PCI_CLASS", "0"), 16) >> 8 == 0x0604 else 13
    add("A", "resource", esc(("0x%016x 0x%016x 0x%016x\n" % (0, 0, 0)) * nres))


def usb_descriptors(d, ifaces):
    """Device and configuration descriptors from PRODUCT, TYPE and the
    interfaces' INTERFACE; no endpoints (the dump does not have them)."""
    p = d["props"]
    vid, pid, bcd = (int(x, 16) for x in p["PRODUCT"].split("/"))
    cls, sub, proto = (int(x) for x in p.get("TYPE", "0/0/0").split("/"))
    root = posixpath.basename(d["path"]).startswith("usb")
    bcdusb = {0x0001: 0x0110, 0x0002: 0x0200, 0x0003: 0x0300}.get(pid, 0x0200) \
        if root and vid == 0x1d6b else 0x0200
    strings = usb_strings(d)
    desc = bytes([18, 1]) + bcdusb.to_bytes(2, "little") + bytes([cls, sub, proto,
                                                                    9 if bcdusb >= 0x0300 else 64])
    desc += vid.to_bytes(2, "little") + pid.to_bytes(2, "little") + bcd.to_bytes(2, "little")
    desc += bytes([1 if "manufacturer" in strings else 0, 2 if "product" in strings else 0,
                   3 if "serial" in strings else 0, 1])
    conf = bytes([9, 2]) + (9 + 9 * len(ifaces)).to_bytes(2, "little")
    conf += bytes([len(ifaces), 1, 0, 0xe0 if root else 0x80, 0])
    for num, (c, s, pr) in ifaces:
        conf += bytes([9, 4, num, 0, 0, c, s, pr, 0])
    return desc + conf


def usb_strings(d):
    """manufacturer, product, serial as sysfs has them, where the dump tells:
    udev's usb_id takes ID_VENDOR_ENC/ID_MODEL_ENC from the device's strings,
    except for mass storage, where they are the SCSI inquiry's (so unknown
    here, unless ID_USB_*_ENC has them); ID_SERIAL_SHORT is the USB serial."""
    p = d["props"]
    out = {}
    storage = ":08" in p.get("ID_USB_INTERFACES", "")
    vend = p.get("ID_USB_VENDOR_ENC") or (None if storage else p.get("ID_VENDOR_ENC"))
    model = p.get("ID_USB_MODEL_ENC") or (None if storage else p.get("ID_MODEL_ENC"))
    if vend is not None:
        out["manufacturer"] = udev_decode(vend)
    if model is not None:
        out["product"] = udev_decode(model)
    serial = p.get("ID_USB_SERIAL_SHORT") or p.get("ID_SERIAL_SHORT")
    if serial:
        out["serial"] = serial
    return out


def derive_usb_device(d, devs_by_path, add):
    p = d["props"]
    name = posixpath.basename(d["path"])
    ifaces = []
    for q, o in sorted(devs_by_path.items()):
        if posixpath.dirname(q) == d["path"] and o["props"].get("DEVTYPE") == "usb_interface":
            num = int(q.rsplit(".", 1)[1])
            ifaces.append((num, tuple(int(x) for x in
                                      o["props"].get("INTERFACE", "0/0/0").split("/"))))
    vid, pid, bcd = (int(x, 16) for x in p["PRODUCT"].split("/"))
    cls, sub, proto = (int(x) for x in p.get("TYPE", "0/0/0").split("/"))
    desc = usb_descriptors(d, ifaces)
    add("A", "idVendor", text_attr("%04x" % vid))
    add("A", "idProduct", text_attr("%04x" % pid))
    add("A", "bcdDevice", text_attr("%04x" % bcd))
    add("A", "bDeviceClass", text_attr("%02x" % cls))
    add("A", "bDeviceSubClass", text_attr("%02x" % sub))
    add("A", "bDeviceProtocol", text_attr("%02x" % proto))
    add("A", "bNumConfigurations", text_attr("1"))
    add("A", "bConfigurationValue", text_attr("1"))
    add("A", "bNumInterfaces", text_attr("%2d" % len(ifaces)))
    add("A", "busnum", text_attr("%d" % int(p["BUSNUM"])))
    add("A", "devnum", text_attr("%d" % int(p["DEVNUM"])))
    add("A", "devpath", text_attr("0" if name.startswith("usb") else name.split("-", 1)[1]))
    for k, v in usb_strings(d).items():
        add("A", k, text_attr(v))
    add("H", "descriptors", desc.hex().upper())
    return desc


def derive_usb_interface(d, add):
    p = d["props"]
    num = int(d["path"].rsplit(".", 1)[1])
    c, s, pr = (int(x) for x in p.get("INTERFACE", "0/0/0").split("/"))
    add("A", "bInterfaceNumber", text_attr("%02x" % num))
    add("A", "bInterfaceClass", text_attr("%02x" % c))
    add("A", "bInterfaceSubClass", text_attr("%02x" % s))
    add("A", "bInterfaceProtocol", text_attr("%02x" % pr))


def from_dump(path):
    with open(path, errors="surrogateescape") as f:
        devs = parse_dump(f.read())
    by_path = {}
    for d in devs:     # a dump can hold a device twice: its properties merged
        if d["path"] in by_path:
            by_path[d["path"]]["props"].update(d["props"])
            by_path[d["path"]]["node"] = by_path[d["path"]]["node"] or d["node"]
        else:
            by_path[d["path"]] = d
    devs = list(by_path.values())
    recs = []
    for d in devs:
        p = d["props"]
        if "SUBSYSTEM" not in p:
            continue
        r = Record(d["path"])
        sub = p["SUBSYSTEM"]
        for k, v in p.items():
            if k == "SUBSYSTEM" or UDEV_ADDED.match(k):
                continue
            if k == "DEVNAME" and not v.startswith("/"):
                v = "/dev/" + v
            r.add("E", k, v)
        r.add("E", "SUBSYSTEM", sub)
        node_content = ""
        if "MAJOR" in p and "MINOR" in p:
            r.add("A", "dev", text_attr("%s:%s" % (p["MAJOR"], p["MINOR"])))
        if "MODALIAS" in p:
            r.add("A", "modalias", text_attr(p["MODALIAS"]))
        if sub == "pci" and "PCI_ID" in p:
            derive_pci(d, by_path, r.add)
        elif sub == "usb" and p.get("DEVTYPE") == "usb_device" and "PRODUCT" in p:
            node_content = derive_usb_device(d, by_path, r.add).hex().upper()
        elif sub == "usb" and p.get("DEVTYPE") == "usb_interface":
            derive_usb_interface(d, r.add)
        elif sub == "input" and "NAME" in p:
            r.add("A", "name", text_attr(p["NAME"].strip('"')))
        if d["node"] and d["node"] != "fuse":
            r.lines.insert(0, ("N", d["node"], node_content))
        if "DRIVER" in p:
            r.add("L", "driver", kernfs_link(d["path"], "/bus/%s/drivers/%s" % (sub, p["DRIVER"])))
        recs.append(r)

    # devices without subsystem: ancestors of records that are not glue
    # directories (block/, net/ ...: named after the class of a record in
    # them) nor /devices/system, /devices/virtual and /devices/virtual/<class>
    subs_below = {}
    for r in recs:
        subs_below.setdefault(posixpath.dirname(r.path), set()).add(r.subsystem)
    nosub = {}
    for r in recs:
        a = posixpath.dirname(r.path)
        while a != "/devices":
            if a in by_path or a in nosub:
                a = posixpath.dirname(a)
                continue
            base = posixpath.basename(a)
            if not (a in ("/devices/system", "/devices/virtual") or
                    posixpath.dirname(a) == "/devices/virtual" or
                    base in subs_below.get(a, ())):
                nosub[a] = ""
            a = posixpath.dirname(a)
    add_nosub_uevents(recs, nosub)

    def driver_files(drv):
        bus = drv.split("/")[2]
        if drv.endswith("/drivers/usb") and bus == "usb":
            return ("bind", "uevent", "unbind")
        return DRIVER_FILES.get(bus, ("bind", "uevent", "unbind"))
    add_driver_dirs(recs, driver_files)
    add_bus_links(recs, lambda sub: sub in KERNEL_BUSES)
    drop_fuse_node(recs)
    return render(recs)


def main(argv):
    if len(argv) >= 2 and argv[0] == "sysfs":
        exclude = argv[argv.index("--exclude") + 1] if "--exclude" in argv else None
        sys.stdout.write(from_sysfs(os.path.abspath(argv[1]), exclude))
    elif len(argv) == 2 and argv[0] == "udevdb":
        sys.stdout.write(from_dump(argv[1]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
