# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hotplug on the real netlink socket, outside umockdev: the daemon serves
this machine with --kernel-uevents (the kernel's own uevents: udevd need not
run) and follows a tap network device the test creates and destroys. Then
its socket overruns for real: with --uevent-buffer 32768 (64 KiB, some fifty
messages) and the daemon stopped (SIGSTOP), the test floods "change" uevents
written to the tap's uevent file, and while the socket drops everything,
destroys the tap and creates another. Once the daemon runs again, recvmsg()
fails with ENOBUFS: it must rescan ("hotplug rescan overrun ...") and find
the one tap gone and the other there. (The buffer is not the smallest: the
kernel reports ENOBUFS once per overrun, until the queue was emptied, so
the daemon must be idle, its queue empty, when it is stopped; other
processes' uevents must not overrun it before.)

Needs root, /dev/net/tun and a writable /sys (the tap's uevent file); skipped
(77) without them. Other processes may add and remove devices meanwhile
(FUSE mounts come with a bdi device): the tree is compared with the devices
present both before and after the walk."""
import fcntl
import os
import signal
import struct

import pytest

from harness import Daemon, own
from hotplug_util import devpaths_in_mount, devpaths_in_testbed, wait_event

TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000


def tap(name):
    """A tap device that lives as long as the returned descriptor."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    return fd


def usable():
    """Why this test cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (tap devices, writing uevent files)"
    name = f"dfsprobe{os.getpid() % 10000}"
    try:
        fd = tap(name)
    except OSError as e:
        return f"no tap device: {e}"
    try:
        with open(f"/sys/devices/virtual/net/{name}/uevent", "w") as f:
            f.write("change")
    except OSError as e:
        return f"cannot write a uevent file: {e}"
    finally:
        os.close(fd)
    return None


why_not = usable()
if why_not:
    pytest.exit(why_not, returncode=77)


def devpath(name):
    return f"/devices/virtual/net/{name}"


def place(d, name):
    """The tap's directory in the mount: /devices/virtual is root/virtual."""
    return d.path("root", "virtual", name)


def drain_reports(d):
    """Takes in every report the daemon sent so far, and forgets them."""
    d.sock.setblocking(False)
    try:
        while True:
            d.sock.recv(65536)
    except BlockingIOError:
        pass
    finally:
        d.sock.setblocking(True)
    d.__dict__["status_backlog"] = []


def test_events_come_from_the_kernel():
    d = Daemon(None, ["--kernel-uevents"])
    name = f"dfs{os.getpid() % 100000}a"
    fd = tap(name)
    try:
        wait_event(d, "add", devpath(name))
        assert os.path.isdir(place(d, name))
        with open(own(place(d, name), "devpath")) as f:
            assert f.read() == devpath(name) + "\n"
        os.close(fd)
        fd = None
        wait_event(d, "remove", devpath(name))
        assert not os.path.exists(place(d, name))
    finally:
        if fd is not None:
            os.close(fd)
        d.stop()


def test_an_overrun_of_the_netlink_socket_rescans():
    d = Daemon(None, ["--kernel-uevents", "--uevent-buffer", "32768"])
    gone, new = f"dfs{os.getpid() % 100000}b", f"dfs{os.getpid() % 100000}c"
    fds = {gone: tap(gone)}
    try:
        wait_event(d, "add", devpath(gone))
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            drain_reports(d)
            for _ in range(500):  # far more than the buffer holds
                with open(f"/sys{devpath(gone)}/uevent", "w") as f:
                    f.write("change")
            # lost: the socket is full
            os.close(fds.pop(gone))
            fds[new] = tap(new)
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)
        why = d.wait_status(lambda l: l.startswith("STATUS=hotplug rescan overrun "))
        assert " added=" in why and " removed=" in why, why
        # what the events would have said, the rescan found
        assert not os.path.exists(place(d, gone)), "the destroyed tap is gone"
        assert os.path.isdir(place(d, new)), "the tap created meanwhile is there"
        # libudev enumerates this machine here (no umockdev)
        before = devpaths_in_testbed(d)
        mounted = set(devpaths_in_mount(d))
        after = devpaths_in_testbed(d)
        missing = (before & after) - mounted
        extra = mounted - (before | after)
        assert not missing and not extra, \
            f"the tree is this machine's: missing {sorted(missing)[:5]}, extra {sorted(extra)[:5]}"
    finally:
        for fd in fds.values():
            os.close(fd)
        d.stop()
