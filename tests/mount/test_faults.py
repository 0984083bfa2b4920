# SPDX-License-Identifier: LGPL-2.1-or-later
"""Faults, through the mount on the server testbed: exec hooks that hang,
crash or print megabytes; a device removed while a suspend walk waits on a
hook; sysfs writes the kernel refuses; libpci or libusb failing at start; the daemon
killed (no dead mount, a restart serves again) also in the middle of a
suspend, after which the restart resumes what the transition record lists.

Runs under umockdev-wrapper: uevents are injected from this process."""
import errno
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import pytest

from harness import (Daemon, auto_unmount_helpers, in_background, pci_pmcsr, unmount_watcher, own,
                     wait_started)
from hotplug_util import unplug_sequence

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "server-2dom.umockdev")
SWITCH = "pci0000:00/0000:00:02.0"
NIC_PARENT = SWITCH + "/0000:01:00.0/0000:02:10.0"
NIC = NIC_PARENT + "/0000:04:00.0"
NIC1 = NIC_PARENT + "/0000:04:00.1"

# $1: the log directory, $2: the action. What it does for a device is
# chosen by files in the log directory named <what>.<action>.<device>.
HOOK = """#!/bin/sh
dev=$(basename "$DEVPATH")
echo "$2 $DRIVERFS_PATH" >> "$1/order"
if [ -e "$1/hang.$2.$dev" ]; then
    echo $$ > "$1/pid.$dev"
    trap '' TERM
    exec sleep 600
fi
if [ -e "$1/crash.$2.$dev" ]; then
    kill -SEGV $$
fi
if [ -e "$1/chatty.$2.$dev" ]; then
    head -c 20000000 /dev/zero | tr '\\0' x
    exit "$(cat "$1/chatty.$2.$dev")"
fi
if [ -p "$1/gate.$2.$dev" ]; then
    echo $$ > "$1/pid.$dev"
    echo started > "$1/started"
    read _ < "$1/gate.$2.$dev"
fi
exit 0
"""


class Env:
    """A daemon with an exec driver (Timeout=1) on the PCI devices of
    @vendor ('' for all of them), hooking suspend and resume."""

    def __init__(self, vendor="0x15b3", record=None, testbed=None, mnt=None, tmp=None,
                 timeout=1):
        self.own_tmp = tmp is None
        self.tmp = tmp or tempfile.mkdtemp(prefix="driverfs-faults-")
        self.log = os.path.join(self.tmp, "log")
        self.record = record or os.path.join(self.tmp, "run", "transition")
        self.config = os.path.join(self.tmp, "driverfsd.conf")
        if not os.path.exists(self.config):
            self._write_config(vendor, timeout)
        self.d = Daemon(TESTBED, ["--config", self.config, "--transition-record", self.record],
                        testbed=testbed, mnt=mnt)
        self.sys = os.path.join(self.d.testbed.get_root_dir(), "sys", "devices")

    def _write_config(self, vendor, timeout):
        os.makedirs(os.path.join(self.tmp, "drivers.d"))
        os.mkdir(self.log)
        hook = os.path.join(self.tmp, "hook.sh")
        with open(hook, "w") as f:
            f.write(HOOK)
        os.chmod(hook, 0o755)
        match = f"[Match]\nvendor={vendor}\n" if vendor else ""
        with open(os.path.join(self.tmp, "drivers.d", "10-faults.conf"), "w") as f:
            f.write(f"[Driver]\nName=faults\nBus=pci\n{match}[Hooks]\n"
                    f"Suspend={hook} {self.log} suspend\nResume={hook} {self.log} resume\n"
                    f"Timeout={timeout}\n")
        with open(self.config, "w") as f:
            f.write("[PM]\nHookTimeout=1\n")

    def mark(self, what, action, place):
        open(os.path.join(self.log, f"{what}.{action}.{os.path.basename(place)}"), "w").close()

    def read(self, *parts):
        with open(self.d.path(*parts)) as f:
            return f.read()

    def power(self, place, word):
        # one write(2): a buffered file would write again when closed
        # (the whole system's is at the mount's top)
        fd = os.open(own(self.d.path("root", place), "power") if place else self.d.path("power"),
                     os.O_WRONLY)
        try:
            os.write(fd, word.encode())
        finally:
            os.close(fd)

    def order(self):
        p = os.path.join(self.log, "order")
        if not os.path.exists(p):
            return []
        with open(p) as f:
            return [tuple(line.split()) for line in f.read().splitlines()]

    def log_entries(self):
        return [line.split() for line in self.read("power_log").splitlines()]

    def all_power(self):
        out = {".": self.read("power").strip()}
        root = self.d.path("root")
        for top, dirs, files in os.walk(root):
            if top != root and any(f.endswith("power") for f in files):
                with open(own(top, "power")) as f:
                    out[os.path.relpath(top, root)] = f.read().strip()
        return out

    def stop(self):
        self.d.stop()
        if self.own_tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture
def env():
    e = Env()
    yield e
    e.stop()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def assert_rolled_back(env, place, errname):
    assert set(env.all_power().values()) == {"on"}, env.all_power()
    err = env.read("root", place, "power_error")
    assert err.startswith(f"suspend {errname} "), f"power_error of {place}: {err!r}"
    log = env.log_entries()
    failed = [e for e in log if e[2] == place and e[1] == "suspend"]
    assert failed and failed[0][3] == errname, f"power_log, {place}: {log}"
    suspended = sorted(e[2] for e in log if e[1] == "suspend" and e[3] == "ok")
    resumed = sorted(e[2] for e in log if e[1] == "resume")
    assert resumed == suspended, "the rollback resumed exactly what was suspended"


def test_hanging_hook_times_out_and_the_transition_rolls_back(env):
    env.mark("hang", "suspend", NIC1)
    start = time.monotonic()
    with pytest.raises(OSError) as e:
        env.power(None, "suspend")
    took = time.monotonic() - start
    assert e.value.errno == errno.EIO
    # Timeout=1, then SIGTERM (ignored by the hook), 1 s, SIGKILL
    assert 1.0 <= took < 10, f"the suspend took {took:.1f} s"
    assert_rolled_back(env, NIC1, "ETIMEDOUT")
    with open(os.path.join(env.log, "pid.0000:04:00.1")) as f:
        pid = int(f.read())
    assert not os.path.exists(f"/proc/{pid}"), "the hung hook outlived its timeout"
    assert "timed out after 1000 ms" in env.d.output()
    # the daemon goes on: the next transition works
    os.unlink(os.path.join(env.log, "hang.suspend.0000:04:00.1"))
    env.power(None, "suspend")
    env.power(None, "resume")
    assert set(env.all_power().values()) == {"on"}


def test_crashing_hook_fails_the_transition_cleanly(env):
    env.mark("crash", "suspend", NIC)
    with pytest.raises(OSError) as e:
        env.power(SWITCH, "suspend")
    assert e.value.errno == errno.EIO
    assert_rolled_back(env, NIC, "EINTR")
    assert "killed by signal 11" in env.d.output()


@pytest.mark.parametrize("status", [0, 1])
def test_hook_printing_megabytes_is_bounded(env, status):
    with open(os.path.join(env.log, "chatty.suspend.0000:04:00.0"), "w") as f:
        f.write(str(status))
    before = rss_kib(env.d.proc.pid)
    if status == 0:
        env.power(NIC, "suspend")
        assert env.read("root", NIC, "power") == "suspended\n"
    else:
        with pytest.raises(OSError) as e:
            env.power(NIC, "suspend")
        assert e.value.errno == errno.EIO
        assert env.read("root", NIC, "power_error").startswith("suspend EIO ")
        warning = [line for line in env.d.output().splitlines() if "exit status 1" in line]
        assert warning and all(len(line) < 400 for line in warning), warning
    after = rss_kib(env.d.proc.pid)
    # 20 MB went through the pipe; at most DM_RUN_OUTPUT_MAX (64 KiB) is kept
    assert after - before < 8 * 1024, f"RSS grew from {before} to {after} KiB"
    assert env.read("name")  # still serving


def wait_hotplug(env, action, place):
    env.d.wait_status(lambda line: line.startswith(f"STATUS=hotplug {action} /devices/{place} "))


@pytest.fixture
def slow_env():
    """Env with hooks that may block for 30 s (on a gate)."""
    e = Env(timeout=30)
    yield e
    e.stop()


def test_device_removed_in_the_middle_of_a_suspend_walk(slow_env):
    env = slow_env
    gate = os.path.join(env.log, "gate.suspend.0000:04:00.0")
    os.mkfifo(gate)
    started = os.path.join(env.log, "started")
    os.mkfifo(started)
    t, result = in_background(env.power, None, "suspend")
    wait_started(started)  # the NIC's hook runs; its ancestors wait on it
    # the NIC's parent goes, children first, each bound one unbound just
    # before its remove, with the walk holding them
    events = list(unplug_sequence(env.d.testbed,
                                  ["/devices/" + p for p in (NIC, NIC1, NIC_PARENT)]))
    assert [a for a, _ in events] == ["unbind", "remove"] * 3
    for action, path in events:
        env.d.testbed.uevent("/sys" + path, action)
    with open(gate, "w") as f:
        f.write("go\n")
    t.join(60)
    assert not t.is_alive(), "the suspend never returned"
    for action, path in events:
        wait_hotplug(env, action, path[len("/devices/"):])
    assert result.get("errno") == 0, result
    assert not os.path.exists(env.d.path("root", NIC_PARENT))
    power = env.all_power()
    assert power and set(power.values()) == {"suspended"}, power
    log = env.log_entries()
    assert all(e[3] == "ok" for e in log), log
    env.power(None, "resume")
    assert set(env.all_power().values()) == {"on"}


def test_sysfs_write_refused_fails_and_rolls_back(env):
    # The kernel refuses writes to a read-only sysfs file, root or not
    # (EACCES from kernfs): the testbed's power/control of the switch's
    # root port made such a file.
    control = os.path.join(env.sys, SWITCH, "power", "control")
    os.unlink(control)
    os.symlink("/sys/kernel/uevent_seqnum", control)
    with pytest.raises(OSError) as e:
        env.power(SWITCH, "suspend")
    assert e.value.errno == errno.EIO
    assert_rolled_back(env, SWITCH, "EACCES")
    # the NIC below it was suspended first, then resumed by the rollback
    assert ("suspend", NIC) in env.order() and ("resume", NIC) in env.order()


def test_libpci_failing_at_start_serves_the_rest_and_says_why():
    def no_pci_list(root):
        shutil.rmtree(os.path.join(root, "sys", "bus", "pci", "devices"))

    d = Daemon(TESTBED, prepare=no_pci_list)
    try:
        out = d.output()
        assert "libpci: Cannot open /sys/bus/pci/devices" in out, out
        assert "source pci: " in out and "serving what the others found" in out, out
        # udev's records are served: the PCI devices, without libpci's files
        with open(own(d.path("root", NIC), "devpath")) as f:
            assert f.read() == "/devices/" + NIC + "\n"
        with open(d.path("root", NIC, "uevent")) as f:
            assert "PCI_ID=15B3:" in f.read()
        # libpci's value is not there; sysfs's file is, passed through
        # (a live value: sized 4096, as sysfs sizes it)
        assert os.stat(d.path("root", NIC, "vendor")).st_size == 4096
        assert len(os.listdir(d.path("bus", "pci", "devices"))) > 10
    finally:
        d.stop()


def test_libusb_failing_at_start_serves_the_rest_and_says_why():
    # libusb_init fails where its udev monitor cannot listen (a sandbox
    # without netlink). Under umockdev a monitor listens on the testbed's
    # socket "event<fd>": directories in the way make its bind fail. The
    # daemon's own monitor, opened first (fd 3), is left its socket.
    def no_libusb_monitor(root):
        for fd in range(4, 256):
            os.mkdir(os.path.join(root, f"event{fd}"))

    d = Daemon(os.path.join(HERE, "..", "testbeds", "usb-tree.umockdev"),
               prepare=no_libusb_monitor)
    try:
        out = d.output()
        assert "usb: libusb_init: Other error (LIBUSB_ERROR_OTHER)" in out, out
        assert "LIBUSB_DEBUG=1" in out, out
        assert "source usb: " in out and "serving what the others found" in out, out
        assert "no hotplug" not in out, "the daemon's own monitor was broken too:\n" + out
        # udev's records are served: the USB devices, without libusb's files
        hub = d.path("bus", "usb", "devices", "1-1")
        with open(own(hub, "devpath")) as f:
            assert f.read() == "/devices/pci0000:00/0000:00:14.0/usb1/1-1\n"
        with open(os.path.join(hub, "uevent")) as f:
            assert "PRODUCT=5e3/608/" in f.read()
        # libusb's values are not there; sysfs's are, and its name by lsusb's
        # rules, from sysfs's descriptors: a static value is its length
        assert os.stat(os.path.join(hub, "idVendor")).st_size == 5
        with open(os.path.join(hub, "name")) as f:
            assert f.read() == "Genesys Logic, Inc. Hub\n"
        assert len(os.listdir(d.path("bus", "usb", "devices"))) > 10
    finally:
        d.stop()


def wait_unmounted(mnt, timeout=30):
    """Waits, on mountinfo's change notifications, until @mnt is no mount."""
    def mounted():
        with open("/proc/self/mountinfo") as f:
            return any(line.split()[4] == mnt for line in f)
    with open("/proc/self/mountinfo") as f:
        poller = select.poll()
        poller.register(f, select.POLLPRI | select.POLLERR)
        deadline = time.monotonic() + timeout
        while mounted():
            left = deadline - time.monotonic()
            assert left > 0, f"{mnt} is still mounted {timeout} s after the daemon died"
            poller.poll(left * 1000)
            f.seek(0)
            f.read()


def test_sigkill_leaves_no_dead_mount_and_a_restart_serves_again(env):
    names = sorted(os.listdir(env.d.path("root", SWITCH)))
    assert env.d.terminate(signal.SIGKILL) == -signal.SIGKILL
    wait_unmounted(env.d.mnt)
    assert os.listdir(env.d.mnt) == []  # a plain directory again, not ENOTCONN
    again = Env(tmp=env.tmp, testbed=env.d.testbed, mnt=env.d.mnt)
    try:
        assert sorted(os.listdir(again.d.path("root", SWITCH))) == names
        assert again.read("root", NIC, "power") == "on\n"
    finally:
        again.d.stop()


def test_sigkill_leaves_no_dead_mount_without_fusermount3(env):
    # fusermount3's auto_unmount can miss a dead mount (it opens the mount
    # point and may catch the connection before it is aborted); the
    # daemon's own watcher must detach it alone
    helpers = auto_unmount_helpers(env.d.mnt)
    assert helpers, "no fusermount3 waits to unmount the mount"
    watcher = unmount_watcher(env.d.proc.pid)
    assert watcher, "the daemon has no unmount watcher"
    watcher_fd = os.pidfd_open(watcher)
    for pid in helpers:
        os.kill(pid, signal.SIGKILL)
    try:
        assert env.d.terminate(signal.SIGKILL) == -signal.SIGKILL
        wait_unmounted(env.d.mnt)
        assert select.select([watcher_fd], [], [], 30)[0], "the watcher did not end"
        assert "the daemon died; its mount is detached" in env.d.output()
    finally:
        os.close(watcher_fd)
        subprocess.run(["umount", "-l", env.d.mnt], stderr=subprocess.DEVNULL)


def kill_in_the_root_ports_suspend(first, port="0000:00:02.0"):
    """Suspends the whole tree on @first, whose driver hooks the root port
    @port, and SIGKILLs the daemon while that hook blocks (all below it are
    done); returns the hook's pid, which the caller kills."""
    gate = os.path.join(first.log, f"gate.suspend.{port}")
    os.mkfifo(gate)
    started = os.path.join(first.log, "started")
    os.mkfifo(started)
    t, _ = in_background(first.power, None, "suspend")
    wait_started(started)
    assert first.d.terminate(signal.SIGKILL) == -signal.SIGKILL
    t.join(60)
    with open(os.path.join(first.log, f"pid.{port}")) as f:
        return int(f.read())


def stop_all(hook_pid, *envs):
    if hook_pid:
        try:
            os.kill(hook_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for e in envs:
        if e:
            e.stop()


def test_sigkill_in_a_suspend_walk_resumes_at_restart():
    first = Env(vendor="", timeout=60)  # every PCI function hooked
    again = None
    pid = None
    try:
        pid = kill_in_the_root_ports_suspend(first)
        with open(first.record) as f:  # nothing writes it any more
            listed = set()
            for line in f.read().splitlines():
                if line[0] in "+-":
                    (listed.add if line[0] == "+" else listed.discard)(line[len("+/devices/"):])
        assert SWITCH in listed and NIC in listed, listed
        wait_unmounted(first.d.mnt)

        again = Env(tmp=first.tmp, testbed=first.d.testbed, mnt=first.d.mnt)
        resumed = [p for a, p in again.order() if a == "resume"]
        # a hook started just before the kill may log itself after it,
        # but it was listed before it started
        suspended = [p for a, p in again.order() if a == "suspend"]
        assert SWITCH in suspended and NIC in suspended
        # the exec driver has every PCI function; kernel proxies (listed
        # too) leave no trace in the hook's log
        hooked = {p for p in listed if re.search(r"/[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", p)}
        assert set(resumed) == hooked, "resumed at restart: what the record listed"
        assert set(suspended) <= set(resumed), "a device suspended was not resumed"
        assert len(resumed) == len(set(resumed)), "a device resumed twice"
        for p in resumed:  # parents first
            parent = os.path.dirname(p)
            while parent:
                if parent in resumed:
                    assert resumed.index(parent) < resumed.index(p), f"{p} before {parent}"
                parent = os.path.dirname(parent)
        assert not os.path.exists(first.record), "the record was not removed"
        out = again.d.output()
        assert f"/devices/{SWITCH}: left suspended by a transition that did not end" in out
        assert f"resumed {len(listed)} devices an earlier run left suspended" in out
        assert set(again.all_power().values()) == {"on"}
    finally:
        stop_all(pid, again, first)


def test_sigkill_in_a_suspend_walk_restores_kernel_proxies_power_control():
    # the root port's hook (an exec driver on Intel functions) blocks;
    # below it, kernel drivers' proxies (pcieport, nvme, mlx5_core) have
    # already let the kernel runtime-suspend their devices
    first = Env(vendor="0x8086", timeout=60)
    again = None
    pid = None
    try:
        nic_power = os.path.join(first.sys, NIC, "power")
        with open(os.path.join(nic_power, "control"), "w") as f:
            f.write("on\n")
        with open(os.path.join(nic_power, "autosuspend_delay_ms"), "w") as f:
            f.write("2000\n")

        def sysfs(place):
            out = {}
            for name in ("control", "autosuspend_delay_ms"):
                p = os.path.join(first.sys, place, "power", name)
                if os.path.exists(p):
                    with open(p) as f:
                        out[name] = f.read().strip()
            return out
        switch_before = sysfs(NIC_PARENT)
        assert switch_before == {"control": "auto"}, switch_before

        pid = kill_in_the_root_ports_suspend(first)
        # the proxy let the kernel suspend the NIC: what it changed is in
        # the record, written before it changed it
        assert sysfs(NIC) == {"control": "auto", "autosuspend_delay_ms": "0"}, sysfs(NIC)
        with open(first.record) as f:
            lines = f.read().splitlines()
        assert f"=control=on,delay=2000 /devices/{NIC}" in lines, lines
        assert f"=control=auto /devices/{NIC_PARENT}" in lines, lines
        wait_unmounted(first.d.mnt)

        again = Env(tmp=first.tmp, testbed=first.d.testbed, mnt=first.d.mnt)
        assert sysfs(NIC) == {"control": "on", "autosuspend_delay_ms": "2000"}, (
            "the restart did not put back the NIC's power/control: " + repr(sysfs(NIC)))
        assert sysfs(NIC_PARENT) == switch_before
        assert not os.path.exists(first.record), "the record was not removed"
        assert set(again.all_power().values()) == {"on"}
    finally:
        stop_all(pid, again, first)


AST_BRIDGE = "pci0000:00/0000:00:1c.0/0000:05:00.0"  # pci-pm's: PM capability at 0x50


def test_sigkill_in_a_suspend_walk_restores_pci_pm_functions():
    # the root port 0000:00:1c.0's hook (an exec driver on Intel functions)
    # blocks; below it, pci-pm has put the ASPEED bridge in D3hot
    first = Env(vendor="0x8086", timeout=60)
    again = None
    pid = None
    config = os.path.join(first.sys, AST_BRIDGE, "config")

    def pmcsr():
        return pci_pmcsr(first.sys, AST_BRIDGE)
    try:
        before, header = pmcsr()
        assert before & 3 == 0
        pid = kill_in_the_root_ports_suspend(first, "0000:00:1c.0")
        during, _ = pmcsr()
        assert during & 3 == 3, f"PMCSR {during:#06x}: expected D3hot"
        with open(first.record) as f:
            lines = f.read().splitlines()
        kept = [ln for ln in lines if ln.startswith("=") and ln.endswith("/devices/" + AST_BRIDGE)]
        assert kept == [f"=pm=50,cfg={header.hex()} /devices/{AST_BRIDGE}"], lines
        wait_unmounted(first.d.mnt)
        # what a function without No_Soft_Reset loses on its way back to
        # D0: its command register and BARs (not its ids and capabilities)
        with open(config, "r+b") as f:
            f.seek(0x04)
            f.write(bytes(2))
            f.seek(0x10)
            f.write(bytes(0x18))
        assert pmcsr()[1] != header

        again = Env(tmp=first.tmp, testbed=first.d.testbed, mnt=first.d.mnt)
        after, header_after = pmcsr()
        assert after & 3 == 0, f"PMCSR {after:#06x}: the restart left the function in D3hot"
        assert header_after == header, "the restart did not restore the config header"
        assert not os.path.exists(first.record), "the record was not removed"
        assert set(again.all_power().values()) == {"on"}
    finally:
        stop_all(pid, again, first)


def test_record_lists_only_what_stays_suspended(env):
    env.power(NIC, "suspend")
    with open(env.record) as f:
        assert f.read().split() == ["+/devices/" + NIC]
    env.power(NIC1, "suspend")
    env.power(NIC, "resume")
    with open(env.record) as f:
        lines = f.read().split()
    assert lines == ["+/devices/" + NIC, "+/devices/" + NIC1, "-/devices/" + NIC], lines
    env.power(None, "resume")
    assert not os.path.exists(env.record), "the record outlived the resume"
    # a device with no hook is not recorded: a transition of it alone
    # leaves no file
    env.power("pci0000:00", "suspend")
    with open(env.record) as f:
        assert "+/devices/pci0000:00\n" not in f.read()
    env.power(None, "resume")
    assert not os.path.exists(env.record)


def test_a_record_that_is_not_a_regular_file_is_refused(env):
    """A fifo where the transition record is to be created (no reader: the
    open blocked the suspend forever) is refused with the reason: the
    suspend fails before its hook runs, the fifo is left, and the daemon
    serves on."""
    os.makedirs(os.path.dirname(env.record), exist_ok=True)
    os.mkfifo(env.record)
    try:
        r = subprocess.run(["sh", "-c", 'printf suspend > "$1"', "sh",
                            own(env.d.path("root", NIC), "power")],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0, r.stderr
        assert f"{env.record}: not a regular file (a fifo)" in env.d.output()
        assert env.order() == []
        assert stat.S_ISFIFO(os.lstat(env.record).st_mode)
        assert set(env.all_power().values()) == {"on"}
    finally:
        # a daemon blocked in the open (before the fix) is let go
        os.close(os.open(env.record, os.O_RDONLY | os.O_NONBLOCK))
