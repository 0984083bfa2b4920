# SPDX-License-Identifier: LGPL-2.1-or-later
"""driverfsd in the background, as the README starts it (no -f): the command
returns once the tree is mounted and served, and the daemon it leaves works
as a foreground one does: reads, power transitions (after a restart's
recovery started the PM engine's threads, which a late fork lost), hotplug,
SIGTERM. And the unmount watcher: it is reaped when it ends early, and a
quick restart keeps its new mount from the old watcher.

Runs under umockdev-wrapper: uevents are injected from this process."""
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading

import pytest

from harness import DAEMON, Daemon, UMockdev, auto_unmount_helpers, umockdev_env, unmount_watcher

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "server-2dom.umockdev")
SWITCH = "pci0000:00/0000:00:02.0"
NIC = SWITCH + "/0000:01:00.0/0000:02:10.0/0000:04:00.0"
# the PCI functions at and below SWITCH, parents first
BELOW_SWITCH = [SWITCH, SWITCH + "/0000:01:00.0", SWITCH + "/0000:01:00.0/0000:02:08.0",
                SWITCH + "/0000:01:00.0/0000:02:10.0",
                SWITCH + "/0000:01:00.0/0000:02:08.0/0000:03:00.0", NIC, NIC[:-1] + "1"]

HOOK = """#!/bin/sh
echo "$2 $DRIVERFS_PATH" >> "$1/order"
"""

if not os.path.exists("/dev/fuse"):
    pytest.skip("no /dev/fuse", allow_module_level=True)


class Background:
    """driverfsd started without -f on the server testbed, with an exec
    driver hooking every PCI function, and a transition record left by an
    earlier run that lists those at and below SWITCH: recovery resumes them
    before the tree is served, and hooks that take a program's time each go
    to the PM engine's threads from the third on."""

    def __init__(self, extra_args=(), record=True, mnt=None, config=None):
        self.testbed = UMockdev.Testbed.new()
        assert self.testbed.add_from_file(TESTBED)
        self.tmp = tempfile.mkdtemp(prefix="driverfs-bg-")
        os.chmod(self.tmp, 0o755)
        self.mnt = mnt or os.path.join(self.tmp, "devices")
        if not mnt:
            os.mkdir(self.mnt)
        self.log = os.path.join(self.tmp, "log")
        os.mkdir(self.log)
        os.mkdir(os.path.join(self.tmp, "drivers.d"))
        hook = os.path.join(self.tmp, "hook.sh")
        with open(hook, "w") as f:
            f.write(HOOK)
        os.chmod(hook, 0o755)
        with open(os.path.join(self.tmp, "drivers.d", "10-nic.conf"), "w") as f:
            f.write(f"[Driver]\nName=all\nBus=pci\n[Hooks]\n"
                    f"Suspend={hook} {self.log} suspend\nResume={hook} {self.log} resume\n")
        self.config = config or os.path.join(self.tmp, "driverfsd.conf")
        if not config:
            with open(self.config, "w") as f:
                f.write("[PM]\nHookTimeout=5\n")
        self.record = os.path.join(self.tmp, "transition")
        if record:
            with open(self.record, "w") as f:
                f.write("".join(f"+/devices/{p}\n" for p in BELOW_SWITCH))
        sock_path = os.path.join(self.tmp, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(sock_path)
        self.env = umockdev_env(self.testbed, {"NOTIFY_SOCKET": sock_path})
        self.pid = None
        # as the README does: the command, without -f, and nothing else
        self.run = subprocess.run(
            [DAEMON, "--config", self.config, "--transition-record", self.record,
             *extra_args, self.mnt],
            env=self.env, capture_output=True, text=True, timeout=120)
        if self.run.returncode == 0:
            self.pid = self.main_pid()

    def main_pid(self):
        """The serving process, as it tells systemd (MAINPID=) with READY=1."""
        self.sock.settimeout(10)
        while True:
            msg = self.sock.recv(4096).decode()
            for line in msg.split("\n"):
                if line.startswith("MAINPID="):
                    return int(line[len("MAINPID="):])

    def status(self, prefix, timeout=30):
        self.sock.settimeout(timeout)
        while True:
            msg = self.sock.recv(4096).decode()
            for line in msg.split("\n"):
                if line.startswith(prefix):
                    return line

    def is_mounted(self):
        with open("/proc/self/mountinfo") as f:
            return any(line.split()[4] == self.mnt for line in f)

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def order(self):
        try:
            with open(os.path.join(self.log, "order")) as f:
                return [tuple(line.split()) for line in f]
        except FileNotFoundError:
            return []

    def wait_gone(self, timeout=30):
        """Waits for the daemon (not our child) to end."""
        fd = os.pidfd_open(self.pid)
        try:
            return bool(select.select([fd], [], [], timeout)[0])
        finally:
            os.close(fd)

    def stop(self):
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGTERM)
                if not self.wait_gone():
                    os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.is_mounted():
            subprocess.run(["umount", "-l", self.mnt], stderr=subprocess.DEVNULL)
        self.sock.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.testbed = None


def power(d, place, word, timeout=60):
    """Writes @word to @place's power file on a thread; the errno of the
    write (0: done), or None when it did not end within @timeout."""
    result = {}

    def write():
        try:
            with open(d.path("root", place, "power"), "w") as f:
                f.write(word + "\n")
            result["errno"] = 0
        except OSError as e:
            result["errno"] = e.errno

    t = threading.Thread(target=write, daemon=True)
    t.start()
    t.join(timeout)
    return result.get("errno")


@pytest.fixture
def bg():
    d = Background()
    yield d
    d.stop()


def test_returns_once_serving_and_transitions_work_after_recovery(bg):
    assert bg.run.returncode == 0, bg.run.stderr
    # mounted and complete when the command returns: no waiting
    assert bg.is_mounted()
    assert NIC.split("/")[-1] in os.listdir(bg.path("root", *NIC.split("/")[:-1]))
    assert bg.pid != os.getpid() and os.path.exists(f"/proc/{bg.pid}")
    # the serving process left the terminal: in a session of its own
    assert os.getsid(bg.pid) == bg.pid
    resumed = [p for a, p in bg.order() if a == "resume"]
    assert sorted(resumed) == sorted(BELOW_SWITCH), \
        "recovery did not resume what the record listed"
    # the first transition after recovery: the PM engine's threads are there
    assert power(bg, SWITCH, "suspend") == 0, \
        "a suspend after recovery did not end (threads lost to a late fork?)"
    assert power(bg, SWITCH, "resume") == 0
    after = bg.order()[len(resumed):]
    assert [a for a, p in after if p == NIC] == ["suspend", "resume"]
    with open(bg.path("root", NIC, "power")) as f:
        assert f.read().strip() == "on"


def test_hotplug_and_sigterm(bg):
    assert bg.run.returncode == 0, bg.run.stderr
    bg.testbed.uevent(f"/sys/devices/{NIC}", "change")
    assert bg.status(f"STATUS=hotplug change /devices/{NIC} ")
    os.kill(bg.pid, signal.SIGTERM)
    assert bg.wait_gone(), "SIGTERM did not end the daemon"
    assert not bg.is_mounted(), "the mount outlived the daemon"
    bg.pid = None


def test_errors_reach_the_command_and_its_exit_status(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    d = Background(record=False, mnt=str(not_a_dir))
    try:
        assert d.run.returncode != 0
        assert "mount point" in d.run.stderr and str(not_a_dir) in d.run.stderr, d.run.stderr
    finally:
        d.stop()
    bad = tmp_path / "bad.conf"
    bad.write_text("[PM]\nHookTimeout=soon\n")
    d = Background(record=False, config=str(bad))
    try:
        assert d.run.returncode != 0
        assert f"{bad}:2" in d.run.stderr, d.run.stderr
        assert not d.is_mounted()
    finally:
        d.stop()


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return line.split()[1]
    except (FileNotFoundError, ProcessLookupError):  # gone, even while read
        return None


def test_a_watcher_that_ends_early_is_reaped():
    d = Daemon(TESTBED)
    try:
        watcher = unmount_watcher(d.proc.pid)
        assert watcher, "no unmount watcher"
        fd = os.pidfd_open(watcher)
        os.kill(watcher, signal.SIGKILL)
        select.select([fd], [], [], 30)
        os.close(fd)
        # reaped: gone from /proc, not a zombie (Z) of the daemon's
        for _ in range(300):
            if proc_state(watcher) is None:
                break
            select.select([], [], [], 0.1)
        assert proc_state(watcher) is None, f"the watcher is left as {proc_state(watcher)}"
        # the reaper logs it right after the wait that made it vanish
        for _ in range(300):
            if "unmount watcher" in d.output():
                break
            select.select([], [], [], 0.1)
        assert "unmount watcher" in d.output(), d.output()
        assert os.listdir(d.mnt)  # serving still
    finally:
        d.stop()


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
def test_a_quick_restart_keeps_its_mount_from_the_old_watcher():
    """The old daemon's watcher checks its mount and then unmounts; a new
    daemon detaches the dead mount and mounts anew in between (the gap is
    widened with strace delaying the watcher's umount2). The new mount
    must stay."""
    first = Daemon(TESTBED)
    second = None
    tracer = None
    try:
        watcher = unmount_watcher(first.proc.pid)
        assert watcher
        for pid in auto_unmount_helpers(first.mnt):  # only the watcher unmounts
            os.kill(pid, signal.SIGKILL)
        tracer = subprocess.Popen(["strace", "-qq", "-o", "/dev/null", "-p", str(watcher),
                                   "-e", "trace=umount2", "-e",
                                   "inject=umount2:delay_enter=4000000"],
                                  stderr=subprocess.PIPE)
        # strace is attached once the watcher shows a tracer
        for _ in range(300):
            with open(f"/proc/{watcher}/status") as f:
                if any(line.startswith("TracerPid:") and line.split()[1] != "0" for line in f):
                    break
            select.select([], [], [], 0.1)
        watcher_fd = os.pidfd_open(watcher)
        first.terminate(signal.SIGKILL)
        # the new daemon, at once, on the same mount point and testbed
        second = Daemon(None, mnt=first.mnt, testbed=first.testbed)
        assert select.select([watcher_fd], [], [], 60)[0], "the old watcher did not end"
        os.close(watcher_fd)
        assert second.is_mounted(), "the old watcher took the new daemon's mount"
        assert os.listdir(second.mnt)
    finally:
        if tracer:
            tracer.kill()
            tracer.wait()
        if second:
            second.stop()
        first.stop()
