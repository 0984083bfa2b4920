# SPDX-License-Identifier: LGPL-2.1-or-later
"""Persisted bindings (issue 17, docs/design.md §7.5): a request made with
persist is recorded in driverfsd.conf's PersistFile=; a new daemon applies
it at start (the "boot" here: the testbed put back as the kernel binds at
boot), and the daemon applies it again when the device is unplugged and
plugged back (the kernel binds its own driver before the add event);
the bindings file and driverfsctl bindings say whether each is in force;
--default --persist forgets it and restores the kernel's driver. The
kernel's side is tests/helpers/kbind.c's.

A record names its device (issue 33 item 4): the PCI function's vendor,
device and subsystem ids, the USB device's idVendor, idProduct and serial
(encoded: a serial of spaces, newlines, escapes, '%' and ':' is one word of
the line); another device at the same place is left as the kernel bound it
and shown "other-device"; an old "BUS NAME DRIVER" line is applied to the
device there and takes its identity; and a hotplug add is applied by a
worker, so the monitor's next events are not held up by a slow binding (a
device removed before its turn is skipped)."""
import gc
import os
import subprocess

from harness import Daemon
from hotplug_util import KBD, blocks, devpath, under, unplug_events
from hotplug_util import TESTBED as USB_TESTBED
from test_binding import IDS, NIC, NIC_PLACE, TESTBED, Kernel, add_drivers, request, state
from test_binding_journal import wait_file
import test_binding_usb as usb
from test_binding_usb import wait_output

CTL = os.environ.get("DRIVERFSCTL", "driverfsctl")
SYS_NIC = "sys/devices/" + NIC_PLACE
# the NIC's identity: vendor, device, subsystem vendor and device
NIC_ID = "pci:8086:15bc:1028:0869"


def native(testbed):
    """The NIC as the kernel leaves it at boot or plug: e1000e, no override."""
    root = testbed.get_root_dir()
    nic = os.path.join(root, SYS_NIC)
    for link in (os.path.join(nic, "driver"),
                 *(os.path.join(root, "sys/bus/pci/drivers", d, NIC)
                   for d in os.listdir(os.path.join(root, "sys/bus/pci/drivers")))):
        if os.path.lexists(link):
            os.unlink(link)
    os.symlink("../../../bus/pci/drivers/e1000e", os.path.join(nic, "driver"))
    os.symlink("../../../../devices/" + NIC_PLACE,
               os.path.join(root, "sys/bus/pci/drivers/e1000e", NIC))
    with open(os.path.join(nic, "driver_override"), "w") as f:
        f.write("(null)\n")
    with open(os.path.join(nic, "uevent")) as f:
        lines = [x for x in f.read().splitlines() if not x.startswith("DRIVER=")]
    with open(os.path.join(nic, "uevent"), "w") as f:
        f.write("\n".join(lines + ["DRIVER=e1000e"]) + "\n")


def collect_testbeds():
    """Earlier tests' testbeds finalized now: one finalized by a garbage
    collection in the middle of a test took the uevents the test sent
    (test_hotplug_goes_on_... never saw its add, in one order of the tests
    in a session, 5 runs in 5; never with this)."""
    gc.collect()


def start(tmp, k, conf, testbed=None):
    env = k.env(IDS)
    if testbed is None:
        d = Daemon(TESTBED, ["-c", conf], prepare=add_drivers, extra_env=env)
    else:
        d = Daemon(None, ["-c", conf], testbed=testbed, extra_env=env)
    k.testbed = d.testbed
    return d


def persisting(tmp_path, state_file):
    """A kernel and a daemon whose PersistFile= is @state_file; the config."""
    collect_testbeds()
    conf = str(tmp_path / "driverfsd.conf")
    with open(conf, "w") as f:
        f.write(f"[Binding]\nPersistFile={state_file}\n")
    k = Kernel(str(tmp_path))
    return k, start(str(tmp_path), k, conf), conf


def bindings(d):
    r = subprocess.run([CTL, "-m", d.mnt, "bindings"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def wait_event(d, action):
    d.wait_status(lambda line: line.startswith(f"STATUS=hotplug {action} /devices/{NIC_PLACE} "))


def test_a_persisted_binding_survives_a_restart_and_a_replug(tmp_path):
    state_file = str(tmp_path / "state" / "bindings")
    k, d, conf = persisting(tmp_path, state_file)
    k.thread.start()
    try:
        assert bindings(d) == ""
        r = subprocess.run([CTL, "-m", d.mnt, "bind", "--persist", NIC, "vfio-pci"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "persisted: yes" in r.stdout
        wait_event(d, "unbind")
        wait_event(d, "bind")
        with open(state_file) as f:
            assert f"pci {NIC} vfio-pci {NIC_ID}\n" in f.read()
        assert bindings(d) == f"pci {NIC} vfio-pci in-force\n"

        # a restart after a boot: the kernel bound e1000e again
        assert d.terminate() == 0
        testbed = d.testbed
        native(testbed)
        d = start(str(tmp_path), k, conf, testbed=testbed)
        assert state(d)[:2] == ("vfio-pci", "vfio-pci\n"), d.output()
        assert "persisted binding of 0000:00:1f.6 to vfio-pci applied" in d.output()
        wait_event(d, "unbind")
        wait_event(d, "bind")
        assert bindings(d) == f"pci {NIC} vfio-pci in-force\n"

        # unplugged, and plugged back: bound to e1000e by the kernel at add
        unplug_events(d, ["/devices/" + NIC_PLACE])  # unbind, remove
        assert bindings(d) == f"pci {NIC} vfio-pci absent\n"
        native(testbed)
        testbed.uevent("/" + SYS_NIC, "add")
        wait_event(d, "add")
        # applied by the persist worker after the add's report (its
        # transaction ended: a request meanwhile would be EINPROGRESS)
        wait_event(d, "unbind")
        wait_event(d, "bind")
        wait_output(d, f"persisted binding of {NIC} to vfio-pci applied", count=2)
        assert state(d)[:2] == ("vfio-pci", "vfio-pci\n")
        assert bindings(d) == f"pci {NIC} vfio-pci in-force\n"

        # forgotten: back to the kernel's driver
        r = subprocess.run([CTL, "-m", d.mnt, "bind", "--default", "--persist", NIC],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "persisted: forgotten" in r.stdout
        wait_event(d, "unbind")
        wait_event(d, "bind")
        assert state(d) == ("e1000e", "(null)\n", ["e1000e"], ["DRIVER=e1000e"])
        assert bindings(d) == ""
        with open(state_file) as f:
            assert NIC not in f.read()
        # a dry run persists nothing
        assert request(d, "vfio-pci dry-run persist") == 0
        assert bindings(d) == ""
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()


def test_a_state_file_anyone_could_change_is_not_applied(tmp_path):
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    os.chmod(str(tmp_path), 0o755)
    state_file = state_dir / "bindings"
    state_file.write_text(f"pci {NIC} vfio-pci\nnot a line\n")
    os.chmod(str(state_file), 0o666)
    k, d, conf = persisting(tmp_path, state_file)
    try:
        assert "writable by other" in d.output()
        assert state(d)[0] == "e1000e"
    finally:
        d.stop()


def test_a_state_file_that_is_not_a_regular_file_is_refused(tmp_path):
    """A fifo where the state file is to be written (no reader: the open
    blocked the binding forever) is refused with the reason and left a
    fifo: the binding is done, not persisted, and the daemon serves on."""
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    state_file = state_dir / "bindings"
    k, d, conf = persisting(tmp_path, state_file)
    k.thread.start()
    try:
        os.mkfifo(state_file)
        r = subprocess.run([CTL, "-m", d.mnt, "bind", "--persist", NIC, "vfio-pci"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0
        assert "persisted: no (not a regular file (a fifo))" in r.stdout, r.stdout + r.stderr
        assert (f"{state_file}: cannot record the binding of {NIC}: not a regular file (a fifo)"
                in d.output())
        assert os.path.exists(state_file) and not os.path.isfile(state_file)
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()


NVME = "0000:01:00.0"
NVME_PLACE = "pci0000:00/0000:00:1c.0/" + NVME
NVME_ID = "pci:8086:f1a8:8086:390b"
ORIGINAL = ("e1000e", "(null)\n", ["e1000e"], ["DRIVER=e1000e"])


def write_state(tmp_path, text):
    """A state file of root's with @text, as an older or this daemon left it."""
    os.chmod(str(tmp_path), 0o755)
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    state_file = state_dir / "bindings"
    state_file.write_text(text)
    os.chmod(str(state_file), 0o644)
    return str(state_file)


def replug_nic(d, testbed, subsystem_device=None):
    """The NIC unplugged, and a NIC plugged at its slot, bound to e1000e by
    the kernel; with @subsystem_device, another model of it."""
    unplug_events(d, ["/devices/" + NIC_PLACE])  # unbind, remove
    native(testbed)
    if subsystem_device:
        with open(os.path.join(testbed.get_root_dir(), SYS_NIC, "subsystem_device"), "w") as f:
            f.write(subsystem_device + "\n")
    testbed.uevent("/" + SYS_NIC, "add")
    wait_event(d, "add")


def test_an_old_line_is_applied_and_takes_the_device_identity(tmp_path):
    """A state file of an older daemon (BUS NAME DRIVER) loads and is
    applied at start; the device it was applied to is recorded with it."""
    state_file = write_state(tmp_path, f"pci {NIC} vfio-pci\n")
    k, d, conf = persisting(tmp_path, state_file)
    k.thread.start()
    try:
        assert f"persisted binding of {NIC} to vfio-pci applied" in d.output(), d.output()
        assert state(d)[:2] == ("vfio-pci", "vfio-pci\n")
        assert f"persisted binding of {NIC} to vfio-pci: recorded as the device's {NIC_ID}" \
            in d.output()
        with open(state_file) as f:
            assert f.read().splitlines()[1:] == [f"pci {NIC} vfio-pci {NIC_ID}"]
        wait_event(d, "unbind")
        wait_event(d, "bind")
        assert bindings(d) == f"pci {NIC} vfio-pci in-force\n"
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()


def test_a_binding_is_applied_to_its_device_alone(tmp_path):
    """A record of another NIC model at the slot: not applied at start nor
    at a replug, logged once, "other-device"; the recorded model plugged
    there: applied."""
    other = "pci:8086:15bc:1028:0870"
    state_file = write_state(tmp_path, f"pci {NIC} vfio-pci {other}\n")
    k, d, conf = persisting(tmp_path, state_file)
    k.thread.start()
    try:
        line = (f"persisted binding of {NIC} to vfio-pci not applied: another device is "
                f"there ({NIC_ID}; the binding is {other}'s)")
        assert line in d.output(), d.output()
        assert state(d) == ORIGINAL
        assert bindings(d) == f"pci {NIC} vfio-pci other-device\n"
        testbed = d.testbed
        # the same other device plugged again: left, not logged again
        replug_nic(d, testbed)
        # the recorded one: applied (after the replug before it: the
        # worker takes them in order)
        replug_nic(d, testbed, subsystem_device="0x0870")
        wait_event(d, "unbind")
        wait_event(d, "bind")
        assert state(d)[:2] == ("vfio-pci", "vfio-pci\n")
        assert bindings(d) == f"pci {NIC} vfio-pci in-force\n"
        assert d.output().count("another device is there") == 1, d.output()
        with open(state_file) as f:
            assert f.read() == f"pci {NIC} vfio-pci {other}\n"  # not rewritten
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()


def native_nvme(testbed):
    """The NVMe controller as the kernel leaves it at plug: bound to nvme."""
    root = testbed.get_root_dir()
    dev = os.path.join(root, "sys/devices", NVME_PLACE)
    drv = os.path.join(root, "sys/bus/pci/drivers/nvme")
    if not os.path.lexists(os.path.join(dev, "driver")):
        os.symlink(os.path.relpath(drv, dev), os.path.join(dev, "driver"))
        os.symlink(os.path.relpath(dev, drv), os.path.join(drv, NVME))
    with open(os.path.join(dev, "uevent")) as f:
        lines = [x for x in f.read().splitlines() if not x.startswith("DRIVER=")]
    with open(os.path.join(dev, "uevent"), "w") as f:
        f.write("\n".join(lines + ["DRIVER=nvme"]) + "\n")


def nvme_event(d, testbed, action):
    testbed.uevent("/sys/devices/" + NVME_PLACE, action)
    d.wait_status(lambda line: line.startswith(f"STATUS=hotplug {action} /devices/{NVME_PLACE} "))


def test_hotplug_goes_on_while_a_persisted_binding_is_applied(tmp_path):
    """While the NIC's persisted binding waits for the kernel (its unbind
    held), another device's remove and add are applied and reported, before
    the binding's outcome (the monitor applied it itself before: the events
    waited until the binding's kernel write gave up, DM_BIND_TIMEOUT_MS,
    the binding left pending); that device, recorded too and removed again
    before the worker's turn, is left alone."""
    state_file = write_state(tmp_path, f"pci {NIC} vfio-pci {NIC_ID}\n"
                                       f"pci {NVME} none {NVME_ID}\n")
    k, d, conf = persisting(tmp_path, state_file)
    k.thread.start()
    held = k.fail + ".held"
    try:
        assert f"persisted binding of {NVME} to none applied" in d.output(), d.output()
        wait_event(d, "unbind")
        wait_event(d, "bind")
        testbed = d.testbed
        unplug_events(d, ["/devices/" + NIC_PLACE])  # unbind, remove
        native(testbed)
        outcomes = d.output().count(f"persisted binding of {NIC} to vfio-pci")
        k.refuse([("drivers/e1000e/unbind", -3)])
        testbed.uevent("/" + SYS_NIC, "add")
        wait_file(held, d)
        # the NIC's binding is held in the kernel: the NVMe's events go on
        unplug_events(d, ["/devices/" + NVME_PLACE])  # unbound ("none"): remove
        native_nvme(testbed)
        nvme_event(d, testbed, "add")
        assert os.path.isdir(d.path("root", NVME_PLACE))
        # bound to nvme: unbind, remove; the testbed keeps its sysfs,
        # bound again (a worker acting on the device would unbind it there)
        unplug_events(d, ["/devices/" + NVME_PLACE])["/devices/" + NVME_PLACE]()
        assert not os.path.exists(d.path("root", NVME_PLACE))
        wait_event(d, "add")
        # ... while the binding was still under way
        assert d.output().count(f"persisted binding of {NIC} to vfio-pci") == outcomes, \
            d.output()
        k.refuse([])
        open(k.fail + ".go", "w").close()
        wait_event(d, "unbind")
        wait_event(d, "bind")
        assert state(d)[:2] == ("vfio-pci", "vfio-pci\n")
        # its transaction over (the unplug's unbind below would otherwise
        # fall in its verify step and be rolled back)
        wait_output(d, f"persisted binding of {NIC} to vfio-pci applied", count=2)
        # one more turn of the worker, after the NVMe's: it was skipped
        replug_nic(d, testbed)
        wait_event(d, "unbind")
        wait_event(d, "bind")
        root = testbed.get_root_dir()
        assert os.path.lexists(os.path.join(root, "sys/devices", NVME_PLACE, "driver"))
        assert bindings(d) == (f"pci {NIC} vfio-pci in-force\n"
                               f"pci {NVME} none absent\n")
        assert d.proc.poll() is None
    finally:
        if os.path.exists(held):
            open(k.fail + ".go", "w").close()
        k.stopped = True
        k.thread.join()
        d.stop()


# a keyboard serial no line format survives as it is (the model keeps
# the first line of a device's string)
SERIAL = b"KB 01\x1b[31m%:\x01\t\xc3\xa9end\nsecond line"
SERIAL_ID = "usb:05f3:0007:KB%2001%1B%5B31m%25%3A%01%09%C3%A9end"
KBD_SYS = "sys/devices/" + usb.KBD_PLACE


def set_serial(root, serial):
    with open(os.path.join(root, KBD_SYS, "serial"), "wb") as f:
        f.write(serial + b"\n")


def replug_keyboard(d, testbed, serial):
    """The keyboard unplugged, and a keyboard of @serial plugged at its port."""
    kbd = [devpath(b) for b in blocks(USB_TESTBED) if under(b, KBD)]
    unplug_events(d, sorted(kbd, key=lambda p: -p.count("/")))
    usb.native(testbed)
    set_serial(testbed.get_root_dir(), serial)
    for p in sorted(kbd, key=lambda p: p.count("/")):
        testbed.uevent("/sys" + p, "add")
        d.wait_status(lambda line, p=p: line.startswith(f"STATUS=hotplug add {p} "))


def test_a_usb_binding_names_the_device_by_its_serial(tmp_path):
    """The keyboard's interface kept unbound, recorded with the keyboard's
    ids and its (hostile) serial, encoded; another keyboard of the same
    model at the port is left to usbhid, "other-device"; the recorded one
    plugged back is unbound again."""
    state_file = str(tmp_path / "state" / "bindings")
    conf = str(tmp_path / "driverfsd.conf")
    with open(conf, "w") as f:
        f.write(f"[Binding]\nPersistFile={state_file}\n")

    def prepare(root):
        usb.add_usb_drivers(root)
        set_serial(root, SERIAL)

    collect_testbeds()
    k = Kernel(str(tmp_path))
    d = Daemon(USB_TESTBED, ["-c", conf], prepare=prepare, extra_env=k.env(usb.IDS))
    k.testbed = d.testbed
    k.thread.start()
    try:
        out = subprocess.run([CTL, "-m", d.mnt, "unbind", "--persist", usb.IF0],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        usb.wait_event(d, "unbind", usb.IF0_PLACE)
        with open(state_file) as f:
            assert f.read().splitlines()[1:] == [f"usb {usb.IF0} none {SERIAL_ID}"]

        testbed = d.testbed
        replug_keyboard(d, testbed, b"KB 02")
        wait_output(d, f"persisted binding of {usb.IF0} to none not applied: another device "
                       f"is there (usb:05f3:0007:KB%2002; the binding is {SERIAL_ID}'s)")
        assert usb.state(d, usb.IF0_PLACE) == usb.BOUND
        assert f"usb {usb.IF0} none other-device\n" in bindings(d)

        replug_keyboard(d, testbed, SERIAL)
        usb.wait_event(d, "unbind", usb.IF0_PLACE)
        assert usb.state(d, usb.IF0_PLACE) == usb.UNBOUND
        assert usb.state(d, usb.IF1_PLACE) == usb.BOUND
        assert f"usb {usb.IF0} none in-force\n" in bindings(d)
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()
