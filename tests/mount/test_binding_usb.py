# SPDX-License-Identifier: LGPL-2.1-or-later
"""Binding on USB (issue 17 item 4, docs/design.md §7.5), on the USB tree
testbed's keyboard: USB has no driver_override, so an interface is handed to
a libusb program by unbinding its kernel driver (not by deauthorizing it: a
deauthorized interface cannot be claimed through usbfs either), with the
same in-use checks and rollback as PCI; "default" probes an unbound
interface again; a deauthorized one is refused with the reason; a
persisted unbind is applied again each time the keyboard is plugged back.
The kernel is played by tests/helpers/kbind.c."""
import contextlib
import errno
import os
import shutil
import subprocess
import time

from harness import Daemon
from hotplug_util import KBD, TESTBED, blocks, devpath, under
from test_binding import Kernel, write_once
from test_inuse import proc_root

CTL = os.environ.get("DRIVERFSCTL", "driverfsctl")
IF0, IF1 = "1-1.2.1:1.0", "1-1.2.1:1.1"
KBD_PLACE = KBD[len("/devices/"):]
IF0_PLACE, IF1_PLACE = KBD_PLACE + "/" + IF0, KBD_PLACE + "/" + IF1
IDS = f"usbhid={IF0} {IF1}"


def add_usb_drivers(root):
    """The bus's drivers_probe, and usbfs (the driver a libusb claim binds
    to, which no sysfs bind takes: its probe declines)."""
    open(os.path.join(root, "sys/bus/usb/drivers_probe"), "w").close()
    drv = os.path.join(root, "sys/bus/usb/drivers/usbfs")
    os.makedirs(drv, exist_ok=True)
    for f in ("bind", "unbind"):
        open(os.path.join(drv, f), "w").close()


def sysfs(d, place, *parts):
    return os.path.join(d.testbed.get_root_dir(), "sys/devices", place, *parts)


def state(d, place):
    """The kernel's side: the interface's driver, the drivers linking to it
    and its uevent's DRIVER=."""
    try:
        drv = os.path.basename(os.readlink(sysfs(d, place, "driver")))
    except FileNotFoundError:
        drv = None
    root = d.testbed.get_root_dir()
    name = os.path.basename(place)
    linked = sorted(x for x in os.listdir(os.path.join(root, "sys/bus/usb/drivers"))
                    if os.path.lexists(os.path.join(root, "sys/bus/usb/drivers", x, name)))
    with open(sysfs(d, place, "uevent")) as f:
        uevent = [x for x in f.read().splitlines() if x.startswith("DRIVER=")]
    return drv, linked, uevent


BOUND = ("usbhid", ["usbhid"], ["DRIVER=usbhid"])
UNBOUND = (None, [], [])


def request(d, place, text):
    return write_once(d.path("root", place, "binding"), text)


def report(d, place):
    with open(d.path("root", place, "binding")) as f:
        return f.read()


def wait_event(d, action, place):
    d.wait_status(lambda line: line.startswith(f"STATUS=hotplug {action} /devices/{place} "))


def start(tmp, k, args=(), testbed=None):
    env = k.env(IDS)
    if testbed is None:
        d = Daemon(TESTBED, list(args), prepare=add_usb_drivers, extra_env=env)
    else:
        d = Daemon(None, list(args), testbed=testbed, extra_env=env)
    k.testbed = d.testbed
    return d


@contextlib.contextmanager
def served(tmp_path, args=()):
    """(daemon, Kernel): the testbed served, its kernel played by kbind."""
    k = Kernel(str(tmp_path))
    d = start(str(tmp_path), k, args)
    k.thread.start()
    try:
        yield d, k
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()


def test_an_interface_is_handed_over_by_unbinding_it_and_given_back(tmp_path):
    proc = proc_root(str(tmp_path), opened=[(777, "hid-recorder", "/dev/hidraw0")])
    with served(tmp_path, ["--proc-root", proc]) as (d, k):
        assert state(d, IF0_PLACE) == BOUND
        assert report(d, IF0_PLACE) == "bound to usbhid by the kernel\n"
        # held: the hidraw node below the interface is open
        assert request(d, IF0_PLACE, "none") == errno.EBUSY
        r = report(d, IF0_PLACE)
        assert "driver_override (not on this bus)" in r, r
        assert "in use: /dev/hidraw0 is open in process 777 (hid-recorder)" in r, r
        assert state(d, IF0_PLACE) == BOUND
        # a dry run says the plan and that it would be refused
        out = subprocess.run([CTL, "-m", d.mnt, "unbind", "--dry-run", IF0],
                             capture_output=True, text=True)
        assert out.returncode == 1, out.stdout + out.stderr
        assert "plan: unbind from usbhid" in out.stdout and "driver_override <-" not in out.stdout

        # the holder gone: unbound, for a libusb program to claim
        shutil.rmtree(os.path.join(proc, "777"))
        out = subprocess.run([CTL, "-m", d.mnt, "unbind", IF0], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        wait_event(d, "unbind", IF0_PLACE)
        assert state(d, IF0_PLACE) == UNBOUND
        assert not os.path.lexists(d.path("root", IF0_PLACE, "driver"))
        assert report(d, IF0_PLACE).startswith(
            "no driver: unbound by a request through driverfsd\n")
        # the other interface kept its driver
        assert state(d, IF1_PLACE) == BOUND

        # back to the kernel's choice: a probe of the bus
        out = subprocess.run([CTL, "-m", d.mnt, "bind", "--default", IF0],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "plan: probe (the kernel's default driver)" in out.stdout
        wait_event(d, "bind", IF0_PLACE)
        assert state(d, IF0_PLACE) == BOUND
        assert report(d, IF0_PLACE).startswith("bound to usbhid by the kernel\n")
        # bound already: the default is the driver it has, nothing written
        assert request(d, IF0_PLACE, "default") == 0
        assert "the driver bound is the kernel's choice" in report(d, IF0_PLACE)


def test_a_failure_leaves_the_interface_as_it_began(tmp_path):
    with served(tmp_path) as (d, k):
        # the unbind refused: nothing else was written
        k.refuse([("/drivers/usbhid/unbind", errno.EBUSY)])
        assert request(d, IF1_PLACE, "none") == errno.EBUSY
        assert "failed: unbind: Device or resource busy (EBUSY)" in report(d, IF1_PLACE)
        assert state(d, IF1_PLACE) == BOUND
        k.refuse([])

        # usbfs takes no device through sysfs (its probe declines, as the
        # kernel's does): the bind fails and usbhid is bound again
        assert request(d, IF1_PLACE, "usbfs") == errno.ENODEV
        wait_event(d, "unbind", IF1_PLACE)
        wait_event(d, "bind", IF1_PLACE)
        r = report(d, IF1_PLACE)
        assert "failed: probe: No such device (ENODEV)" in r, r
        assert "rollback: bind to usbhid again: ok" in r, r
        assert "rollback: driver_override" not in r, r
        assert state(d, IF1_PLACE) == BOUND

        # a driver the bus does not have: EINVAL, nothing written
        assert request(d, IF1_PLACE, "btusb") == errno.EINVAL
        assert state(d, IF1_PLACE) == BOUND


def test_a_deauthorized_interface_is_refused_with_the_reason(tmp_path):
    with served(tmp_path) as (d, k):
        assert request(d, IF1_PLACE, "none") == 0
        wait_event(d, "unbind", IF1_PLACE)
        # deauthorized (by the kernel's authorized file): no driver probes
        # it and no program claims it
        with open(sysfs(d, IF1_PLACE, "authorized"), "w") as f:
            f.write("0\n")
        assert report(d, IF1_PLACE).startswith("no driver: deauthorized")
        for text in ("default", "usbhid"):
            assert request(d, IF1_PLACE, text) == errno.ENODEV, text
            r = report(d, IF1_PLACE)
            assert "refused: the device is deauthorized" in r, r
            assert "plan:" not in r, r
            assert state(d, IF1_PLACE) == UNBOUND
        with open(sysfs(d, IF1_PLACE, "authorized"), "w") as f:
            f.write("1\n")
        assert request(d, IF1_PLACE, "default") == 0
        wait_event(d, "bind", IF1_PLACE)
        assert state(d, IF1_PLACE) == BOUND


def wait_output(d, text, count=1, timeout=120):
    """Until the daemon's log has @text @count times (a bound for a hung
    test, not a measure)."""
    deadline = time.monotonic() + timeout
    while d.output().count(text) < count:
        assert d.proc.poll() is None, "the daemon ended:\n" + d.output()
        assert time.monotonic() < deadline, f"{text!r} never logged:\n" + d.output()
        time.sleep(0.02)


def native(testbed):
    """The keyboard's interfaces as the kernel leaves them at plug: usbhid."""
    root = testbed.get_root_dir()
    for place in (IF0_PLACE, IF1_PLACE):
        name = os.path.basename(place)
        devdir = os.path.join(root, "sys/devices", place)
        if not os.path.lexists(os.path.join(devdir, "driver")):
            os.symlink(os.path.relpath(os.path.join(root, "sys/bus/usb/drivers/usbhid"), devdir),
                       os.path.join(devdir, "driver"))
            os.symlink(os.path.relpath(devdir, os.path.join(root, "sys/bus/usb/drivers/usbhid")),
                       os.path.join(root, "sys/bus/usb/drivers/usbhid", name))
        with open(os.path.join(devdir, "uevent")) as f:
            lines = [x for x in f.read().splitlines() if not x.startswith("DRIVER=")]
        with open(os.path.join(devdir, "uevent"), "w") as f:
            f.write("\n".join(lines + ["DRIVER=usbhid"]) + "\n")


def test_a_persisted_unbind_is_applied_again_at_each_plug(tmp_path):
    state_file = str(tmp_path / "state" / "bindings")
    conf = str(tmp_path / "driverfsd.conf")
    with open(conf, "w") as f:
        f.write(f"[Binding]\nPersistFile={state_file}\n")
    k = Kernel(str(tmp_path))
    d = start(str(tmp_path), k, ["-c", conf])
    k.thread.start()
    try:
        out = subprocess.run([CTL, "-m", d.mnt, "unbind", "--persist", IF0],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "persisted: yes" in out.stdout
        wait_event(d, "unbind", IF0_PLACE)
        with open(state_file) as f:
            assert f"usb {IF0} none usb:05f3:0007\n" in f.read()

        # a restart after a boot: the kernel bound usbhid again
        assert d.terminate() == 0
        testbed = d.testbed
        native(testbed)
        d = start(str(tmp_path), k, ["-c", conf], testbed=testbed)
        assert f"persisted binding of {IF0} to none applied" in d.output()
        wait_event(d, "unbind", IF0_PLACE)
        assert state(d, IF0_PLACE) == UNBOUND
        assert state(d, IF1_PLACE) == BOUND

        # unplugged and plugged back: the kernel binds usbhid before the
        # add event, and the unbind is applied again
        kbd = [devpath(b) for b in blocks(TESTBED) if under(b, KBD)]
        for p in sorted(kbd, key=lambda p: -p.count("/")):
            testbed.uevent("/sys" + p, "remove")
            d.wait_status(lambda line, p=p: line.startswith(f"STATUS=hotplug remove {p} "))
        assert f"usb {IF0} none absent" in subprocess.run(
            [CTL, "-m", d.mnt, "bindings"], capture_output=True, text=True).stdout
        native(testbed)
        for p in sorted(kbd, key=lambda p: p.count("/")):
            testbed.uevent("/sys" + p, "add")
            d.wait_status(lambda line, p=p: line.startswith(f"STATUS=hotplug add {p} "))
        wait_event(d, "unbind", IF0_PLACE)
        # (applied by the persist worker: its transaction ended before the
        # next request, which would be EINPROGRESS meanwhile)
        wait_output(d, f"persisted binding of {IF0} to none applied", 2)
        assert state(d, IF0_PLACE) == UNBOUND
        assert state(d, IF1_PLACE) == BOUND
        assert f"usb {IF0} none in-force" in subprocess.run(
            [CTL, "-m", d.mnt, "bindings"], capture_output=True, text=True).stdout

        # forgotten: probed, back to usbhid
        out = subprocess.run([CTL, "-m", d.mnt, "bind", "--default", "--persist", IF0],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "persisted: forgotten" in out.stdout
        wait_event(d, "bind", IF0_PLACE)
        assert state(d, IF0_PLACE) == BOUND
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()
