# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the hotplug tests share: testbed records (.umockdev blocks), uevents
sent and waited for, and the tree compared with the testbed's sysfs.

Notes on umockdev (0.17) that shape these tests: add_from_string() sends the
"add" uevent of each device itself; remove_device() sends none, and adding a
removed device again aborts umockdev, so a replug re-sends the uevents of
devices the testbed kept. Its sender numbers events (SEQNUM) from a counter of
the test process, and aborts the test process when the daemon's socket queue
(net.unix.max_dgram_qlen datagrams) is full. Floods therefore go through
Sender below, which chooses the seqnums and, when the queue is full, waits
or drops the event as an overrun netlink socket would."""
import os
import select
import socket
import struct

from harness import has_devpath, own

# the containers /devices/system and /devices/virtual are devices in the tree
CONTAINERS = ("/devices/system", "/devices/virtual")

# the USB tree testbed: a keyboard and a stick (disk, partition) behind the
# second hub
HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "usb-tree.umockdev")
HUB2 = "/devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1.2"
KBD = HUB2 + "/1-1.2.1"
STICK = HUB2 + "/1-1.2.3"
ROOT_HUB2 = "pci0000:00/0000:00:14.0/usb1/1-1/1-1.2"  # HUB2 under root/


def blocks(path):
    with open(path) as f:
        return [b for b in f.read().split("\n\n") if b.strip()]


def devpath(block):
    return block.split("\n", 1)[0][3:]


def under(block, top):
    p = devpath(block)
    return p == top or p.startswith(top + "/")


def without(tmp_path, top):
    """A copy of the USB tree testbed without the devices at and below @top."""
    initial = tmp_path / "testbed.umockdev"
    initial.write_text("\n\n".join(b for b in blocks(TESTBED) if not under(b, top)) + "\n")
    return str(initial)


def read(d, *parts):
    with open(d.path(*parts)) as f:
        return f.read()


def wait_event(d, action, path, timeout=30):
    """The seqnum of the daemon's report of the event."""
    line = d.wait_status(lambda line: line.startswith(f"STATUS=hotplug {action} {path} "),
                         timeout=timeout)
    return int(line.rsplit(" ", 1)[1])


def event(d, action, path):
    d.testbed.uevent("/sys" + path, action)
    return wait_event(d, action, path)


def drop_driver(testbed, path):
    """Plays the kernel releasing the driver of the device at @path: the
    driver link, the driver's link to the device and DRIVER= go from its
    sysfs (the unbind event is the caller's to send). Returns what binds
    it again as it was (the links and DRIVER= back), or None when no
    driver was bound."""
    sysdir = testbed.get_root_dir() + "/sys" + path
    try:
        target = os.readlink(sysdir + "/driver")
    except OSError:
        return None
    back = os.path.join(sysdir, target, os.path.basename(path))
    try:
        back_target = os.readlink(back)
    except OSError:
        back_target = None
    with open(sysdir + "/uevent") as f:
        uevent = f.read()
    os.unlink(sysdir + "/driver")
    if back_target:
        os.unlink(back)
    testbed.set_attribute("/sys" + path, "uevent", "".join(
        line for line in uevent.splitlines(True) if not line.startswith("DRIVER=")))

    def rebind():
        os.symlink(target, sysdir + "/driver")
        if back_target:
            os.symlink(back_target, back)
        testbed.set_attribute("/sys" + path, "uevent", uevent)
    return rebind


def unplug_order(paths, has_driver):
    """The uevents of a hot-unplug of the devices at @paths (children
    first), as the kernel sends them, (action, path) each: a device a
    driver is bound to (@has_driver(path), asked just before its events)
    is unbound first (its driver's remove() took its class devices away
    before: they come earlier in @paths), "unbind", then "remove" (a PCI
    function is released in pci_stop_bus_device() before device_del(),
    which releases a USB interface's or device's itself, in both cases
    just before the remove uevent; the vm tier's guest showed it:
    tests/vm/guest/test_hotplug.sh)."""
    for p in paths:
        if has_driver(p):
            yield "unbind", p
        yield "remove", p


def plug_order(paths, has_driver):
    """The uevents of a hotplug of the devices at @paths (parents first),
    as the kernel sends them: each device's "add" (device_add()), then,
    when a driver took it (@has_driver(path)), "bind" (the probe runs
    after the add uevent, bus_probe_device())."""
    for p in paths:
        yield "add", p
        if has_driver(p):
            yield "bind", p


def unplug_sequence(testbed, paths, rebinds=None):
    """unplug_order() played on @testbed: each bound device's driver
    dropped from its sysfs (drop_driver()) just before its "unbind" is
    yielded; @rebinds (a dict) gets {path: what binds it again}, for a
    replug from the kept sysfs. For a test that sends the events itself."""
    def has_driver(p):
        rebind = drop_driver(testbed, p)
        if rebind and rebinds is not None:
            rebinds[p] = rebind
        return rebind is not None
    return unplug_order(paths, has_driver)


def unplug_events(d, paths):
    """unplug_sequence()'s events sent, each waited for. Returns {path:
    what binds it again} for the devices that had a driver."""
    rebinds = {}
    for action, p in unplug_sequence(d.testbed, paths, rebinds):
        event(d, action, p)
    return rebinds


def pull_out(d, top, records=None):
    """Removes the testbed's devices at and below @top as the kernel does:
    children first, each bound device's unbind just before its remove
    (unplug_events()), the last event the device itself. @records: the
    blocks they were added from (the USB tree's by default)."""
    gone = sorted((devpath(b) for b in records or blocks(TESTBED) if under(b, top)),
                  key=lambda p: -p.count("/"))
    unplug_events(d, gone)
    remove_devices(d.testbed, gone)


def remove_devices(testbed, paths):
    """Removes the devices at @paths (children first) from @testbed, with
    the links to them."""
    for p in paths:
        testbed.remove_device("/sys" + p)
    # umockdev's remove_device() leaves the links to the device behind,
    # dangling (/sys/dev/char/M:m, a driver's link to it, its class link);
    # a later add of a device of the same number or name would fail on one
    # (umockdev aborts the process), so they go as the kernel's would
    sys_dir = testbed.get_sys_dir()
    for part in ("dev", "bus", "class"):
        for top, dirs, files in os.walk(os.path.join(sys_dir, part)):
            for name in dirs + files:
                link = os.path.join(top, name)
                if os.path.islink(link) and not os.path.exists(link):
                    os.unlink(link)


def wait_rescan(d, timeout=30, after=0):
    """The report "<why> added=N removed=N changed=N" of the next rescan
    that came after the daemon saw seqnum @after (its report's seqnum is the
    highest the daemon had seen)."""
    line = d.wait_status(lambda line: line.startswith("STATUS=hotplug rescan ") and
                         int(line.rsplit(" ", 1)[1]) > after, timeout=timeout)
    return line[len("STATUS=hotplug rescan "):].rsplit(" ", 1)[0]


def devpaths_in_mount(d):
    """{devpath: path under root/} of every device in the mount."""
    found = {}
    for top, dirs, files in os.walk(d.path("root")):
        if has_devpath(files):
            with open(own(top, "devpath")) as f:
                found[f.read().strip()] = os.path.relpath(top, d.path("root"))
    return found


def devpaths_in_testbed(d):
    """What the tree must hold for the testbed as it is now, asked of libudev
    itself (the test process runs under umockdev, so libudev reads the
    testbed; outside umockdev, this machine): every device udev enumerates and every device above one, and
    the containers /devices/system and /devices/virtual above theirs."""
    import ctypes
    lib = ctypes.CDLL("libudev.so.1")
    lib.udev_new.restype = ctypes.c_void_p
    lib.udev_enumerate_new.restype = ctypes.c_void_p
    lib.udev_enumerate_new.argtypes = [ctypes.c_void_p]
    lib.udev_enumerate_scan_devices.argtypes = [ctypes.c_void_p]
    lib.udev_enumerate_get_list_entry.restype = ctypes.c_void_p
    lib.udev_enumerate_get_list_entry.argtypes = [ctypes.c_void_p]
    lib.udev_list_entry_get_next.restype = ctypes.c_void_p
    lib.udev_list_entry_get_next.argtypes = [ctypes.c_void_p]
    lib.udev_list_entry_get_name.restype = ctypes.c_char_p
    lib.udev_list_entry_get_name.argtypes = [ctypes.c_void_p]
    lib.udev_device_new_from_syspath.restype = ctypes.c_void_p
    lib.udev_device_new_from_syspath.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.udev_device_get_parent.restype = ctypes.c_void_p
    lib.udev_device_get_parent.argtypes = [ctypes.c_void_p]
    lib.udev_device_get_devpath.restype = ctypes.c_char_p
    lib.udev_device_get_devpath.argtypes = [ctypes.c_void_p]
    lib.udev_device_unref.argtypes = [ctypes.c_void_p]
    lib.udev_enumerate_unref.argtypes = [ctypes.c_void_p]
    lib.udev_unref.argtypes = [ctypes.c_void_p]
    udev = lib.udev_new()
    en = lib.udev_enumerate_new(udev)
    assert lib.udev_enumerate_scan_devices(en) >= 0
    found = set()
    e = lib.udev_enumerate_get_list_entry(en)
    while e:
        dev = lib.udev_device_new_from_syspath(udev, lib.udev_list_entry_get_name(e))
        p = dev
        while p:  # the parent belongs to the device: not unref'ed
            found.add(lib.udev_device_get_devpath(p).decode())
            p = lib.udev_device_get_parent(p)
        if dev:
            lib.udev_device_unref(dev)
        e = lib.udev_list_entry_get_next(e)
    lib.udev_enumerate_unref(en)
    lib.udev_unref(udev)
    for c in CONTAINERS:
        if any(p.startswith(c + "/") for p in found):
            found.add(c)
    return found


class Hidden:
    """The daemon deaf for a while: its event sockets in the testbed are
    renamed, so umockdev's sender finds no listener and the events sent
    meanwhile are lost (their seqnums are used all the same)."""

    def __init__(self, d):
        self.root = d.testbed.get_root_dir()

    def __enter__(self):
        self.names = [n for n in os.listdir(self.root) if n.startswith("event")]
        for n in self.names:
            os.rename(os.path.join(self.root, n), os.path.join(self.root, "deaf-" + n))
        return self

    def __exit__(self, *exc):
        for n in self.names:
            os.rename(os.path.join(self.root, "deaf-" + n), os.path.join(self.root, n))


class Sender:
    """uevents as udevd broadcasts them (libudev's monitor message: the
    "libudev" header, then KEY=VALUE strings), sent to the daemon's event
    sockets in the testbed, with seqnums of our choosing.

    The daemon's socket takes net.unix.max_dgram_qlen datagrams. When it is
    full, blocking=False drops the event (counted in .dropped, the highest
    seqnum dropped in .last_dropped), as the kernel drops a netlink message
    on an overrun; blocking=True waits for room, and
    meanwhile takes in the daemon's sd_notify reports (kept for wait_status),
    since the daemon may itself be waiting for room on that socket. The
    daemon must hear no other sender (umockdev's own events go elsewhere
    under Hidden), or the seqnums would not make one sequence."""

    MAGIC = 0xfeedcafe

    def __init__(self, d, blocking=True, first_seqnum=1):
        self.d = d
        self.root = d.testbed.get_root_dir()
        self.seqnum = first_seqnum
        self.blocking = blocking
        self.dropped = 0
        self.last_dropped = 0
        self.socks = []
        for n in os.listdir(self.root):
            if n.startswith("event") and n[5:].isdigit():
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                try:
                    sock.connect(os.path.join(self.root, n))
                except ConnectionRefusedError:
                    sock.close()  # a monitor closed meanwhile
                    continue
                sock.setblocking(False)
                self.socks.append(sock)
        assert self.socks, "the daemon listens for uevents"

    def subsystem(self, path):
        link = os.path.join(self.root, "sys", path.lstrip("/"), "subsystem")
        return os.path.basename(os.readlink(link))

    def _take_reports(self):
        backlog = self.d.__dict__.setdefault("status_backlog", [])
        self.d.sock.setblocking(False)
        try:
            while True:
                backlog.extend(self.d.sock.recv(4096).decode().split("\n"))
        except BlockingIOError:
            pass
        finally:
            self.d.sock.setblocking(True)

    def _send_one(self, sock, msg, seqnum):
        while True:
            try:
                sock.send(msg)
                return
            except BlockingIOError:
                if not self.blocking:
                    self.dropped += 1
                    self.last_dropped = max(self.last_dropped, seqnum)
                    return
            readable, writable, _ = select.select([self.d.sock], [sock], [], 60)
            if not readable and not writable:
                raise AssertionError("the daemon takes no event for 60 s:\n" + self.d.output())
            if readable:
                self._take_reports()

    def driver(self, path):
        """The name of the driver the testbed shows bound to @path, or None."""
        try:
            return os.path.basename(os.readlink(
                os.path.join(self.root, "sys", path.lstrip("/"), "driver")))
        except OSError:
            return None

    def unplug(self, paths, subsystems, drivers):
        """Sends the events of a hot-unplug of @paths (children first) as
        the kernel does (unplug_order()): a device @drivers names is
        unbound just before its remove. The testbed's sysfs is left as it
        is. Returns the last event: (action, path, seqnum)."""
        last = None
        for action, p in unplug_order(paths, lambda p: drivers.get(p)):
            last = (action, p, self.send(action, p, subsystems[p]))
        return last

    def plug(self, paths, subsystems, drivers):
        """The events of a hotplug of @paths (parents first), as the
        kernel sends them (plug_order()): a device @drivers names is bound
        (DRIVER= in the event) after its add. Returns the last event."""
        last = None
        for action, p in plug_order(paths, lambda p: drivers.get(p)):
            more = [f"DRIVER={drivers[p]}"] if action == "bind" else ()
            last = (action, p, self.send(action, p, subsystems[p], more=more))
        return last

    def send(self, action, path, subsystem=None, seqnum=None, more=()):
        """Sends the event; returns its seqnum. @subsystem: read from the
        testbed unless given (a removed device has none there); @more:
        further KEY=VALUE properties (DEVPATH_OLD=)."""
        if seqnum is None:
            seqnum = self.seqnum
        self.seqnum = max(self.seqnum, seqnum + 1)
        props = [f"ACTION={action}", f"DEVPATH={path}",
                 f"SUBSYSTEM={subsystem or self.subsystem(path)}", f"SEQNUM={seqnum}", *more]
        body = b"".join(p.encode() + b"\0" for p in props)
        header = struct.pack("=8sIIIIIIII", b"libudev", socket.htonl(self.MAGIC), 40, 40,
                             len(body), 0, 0, 0, 0)
        for sock in self.socks:
            self._send_one(sock, header + body, seqnum)
        return seqnum

    def close(self):
        for sock in self.socks:
            sock.close()
