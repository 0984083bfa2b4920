# SPDX-License-Identifier: LGPL-2.1-or-later
"""Starting driverfsd on a umockdev testbed, and reading testbeds.

The daemon runs under umockdev's preload library with UMOCKDEV_DIR set, so
libudev and libpci read the testbed instead of /sys. The Testbed object must
stay alive as long as the daemon: dropping it deletes the testbed directory.
Readiness is the daemon's sd_notify READY=1 on a socket of ours, not a sleep.
"""
import os
import re
import signal
import socket
import subprocess
import tempfile
import time

import gi

gi.require_version("UMockdev", "1.0")
from gi.repository import UMockdev  # noqa: E402

DAEMON = os.environ.get("DRIVERFSD", "driverfsd")
CTL = os.environ.get("DRIVERFSCTL", "driverfsctl")


def parse_testbed(path):
    """{devpath: {"attrs": {name: value}, "props": {KEY: VALUE}, "links": {name: target}}}
    from a .umockdev file; values unescaped, attribute names with '/' skipped."""
    devices = {}
    cur = None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("P: "):
                cur = devices.setdefault(line[3:], {"attrs": {}, "props": {}, "links": {}})
            elif cur is None or len(line) < 3:
                continue
            elif line.startswith("A: "):
                name, _, value = line[3:].partition("=")
                if "/" not in name:
                    cur["attrs"][name] = value.encode().decode("unicode_escape")
            elif line.startswith("E: "):
                key, _, value = line[3:].partition("=")
                cur["props"][key] = value
            elif line.startswith("L: "):
                name, _, target = line[3:].partition("=")
                if "/" not in name:
                    cur["links"][name] = target
    return devices


OWN_PREFIX = "driverfs:"


def own(directory, name):
    """The path of driverfsd's own entry @name ("power", "devpath", "pm" ...)
    of the device directory @directory: the longest of name, driverfs:name,
    driverfs:driverfs:name ... listed there (the kernel's names come first,
    docs/design.md §6.2)."""
    names = set(os.listdir(directory))
    served = name
    while OWN_PREFIX + served in names:
        served = OWN_PREFIX + served
    return os.path.join(directory, served)


def has_devpath(files):
    """Whether the files @files of a directory hold driverfsd's devpath
    (devpath, or driverfs:devpath where the kernel has a devpath): a device's
    directory with a sysfs path."""
    return "devpath" in files or OWN_PREFIX + "devpath" in files


def umockdev_env(testbed, extra=None):
    """The environment under which a program reads @testbed instead of /sys."""
    env = dict(os.environ, **(extra or {}))
    env.update(UMOCKDEV_DIR=testbed.get_root_dir(),
               LD_PRELOAD=":".join(filter(None, [env.get("LD_PRELOAD"),
                                                 "libumockdev-preload.so.0"])))
    return env


def drivers_config(tmp, drivers, config="[PM]\nHookTimeout=10\n"):
    """A driverfsd.conf in @tmp holding @config, with drivers.d/ beside it
    holding @drivers ({file name: text}); the configuration's path."""
    os.makedirs(os.path.join(tmp, "drivers.d"))
    for name, text in drivers.items():
        with open(os.path.join(tmp, "drivers.d", name), "w") as f:
            f.write(text)
    path = os.path.join(tmp, "driverfsd.conf")
    with open(path, "w") as f:
        f.write(config)
    return path


# What ASan, LSan, UBSan and TSan print when they find something: a daemon
# built with them fails its test even when it went on serving.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "WARNING: ThreadSanitizer")


def sanitizer_report(log):
    """The sanitizer reports in a daemon's log, or ''."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if any(mark in line for mark in SANITIZER_MARKS):
            return "\n".join(lines[max(0, i - 2):i + 40])
    return ""


def pci_pmcsr(sys_devices, place, cap=0x50):
    """The PMCSR (PM capability at @cap) and the 64-byte config header of
    the PCI function @place under the testbed's @sys_devices directory."""
    with open(os.path.join(sys_devices, place, "config"), "rb") as f:
        cfg = f.read()
    return int.from_bytes(cfg[cap + 4:cap + 6], "little"), cfg[:64]


def in_background(fn, *args):
    """Runs fn(*args) on a thread; returns it and a dict whose "errno" is 0
    once fn returned, or the errno of the OSError it raised."""
    import threading
    result = {}

    def run():
        try:
            fn(*args)
            result["errno"] = 0
        except OSError as e:
            result["errno"] = e.errno

    t = threading.Thread(target=run)
    t.start()
    return t, result


def wait_started(path, timeout=60, what=None):
    """Waits until a hook writes "started" into the FIFO @path: a bound
    wait (a hook that never runs fails the test, @what saying what ran
    instead) where an open() of the FIFO would block for ever."""
    import select
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        assert poller.poll(timeout * 1000), \
            f"no hook started within {timeout} s" + (f" ({what()})" if what else "")
        assert os.read(fd, 64).strip() == b"started"
    finally:
        os.close(fd)


class Daemon:
    """driverfsd serving a testbed at a fresh mount point."""

    def __init__(self, testbed_file, extra_args=(), mnt=None, extra_env=None, prepare=None,
                 testbed=None, wrapper=(), ready=60):
        """testbed_file None serves the live machine; mnt, a mount point to
        reuse (another daemon's, once it is gone); extra_env, variables added
        to the daemon's environment; prepare, called with the testbed's root
        directory before the daemon starts (to break it); testbed, a
        UMockdev.Testbed to serve instead of a file (another daemon's, kept
        alive by the caller); wrapper, a command line the daemon's is run
        by (setpriv ...); ready, how long it may take to start (s). The
        transition record and the binding journal are the test's own
        (tmp/transition, tmp/binding-journal) unless extra_args name
        them."""
        self.testbed = None
        if testbed is not None:
            self.testbed = testbed
        elif testbed_file is not None:
            self.testbed = UMockdev.Testbed.new()
            if not self.testbed.add_from_file(testbed_file):
                raise RuntimeError(f"cannot load testbed {testbed_file}")
        self.tmp = tempfile.TemporaryDirectory(prefix="driverfs-test-")
        os.chmod(self.tmp.name, 0o755)  # other users' tests walk the mount too
        self.mnt = mnt or os.path.join(self.tmp.name, "devices")
        if not mnt:
            os.mkdir(self.mnt)
        sock_path = os.path.join(self.tmp.name, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(sock_path)
        self.sock.settimeout(60)
        env = dict(os.environ, NOTIFY_SOCKET=sock_path, **(extra_env or {}))
        if prepare is not None:
            prepare(self.testbed.get_root_dir())
        if not any(a.startswith("--transition-record") for a in extra_args):
            extra_args = ["--transition-record", os.path.join(self.tmp.name, "transition"),
                          *extra_args]
        # each daemon its own binding journal: a testbed's transactions
        # must never be acted on by a daemon of another testbed, or of the
        # machine
        if not any(a.startswith("--binding-journal") for a in extra_args):
            extra_args = ["--binding-journal", os.path.join(self.tmp.name, "binding-journal"),
                          *extra_args]
        if self.testbed is not None:
            env = umockdev_env(self.testbed, {"NOTIFY_SOCKET": sock_path, **(extra_env or {})})
        self.log = open(os.path.join(self.tmp.name, "log"), "w+")
        self.proc = subprocess.Popen([*wrapper, DAEMON, "-f", *extra_args, self.mnt], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready(ready)
        except Exception:
            self.stop()
            raise

    def _wait_ready(self, ready):
        try:
            self.wait_status(lambda line: line == "READY=1", timeout=ready)
        except AssertionError:
            raise RuntimeError(f"driverfsd did not report READY within {ready} s:\n" +
                               self.output())

    def wait_status(self, match, timeout=30):
        """The first line of the daemon's sd_notify datagrams for which
        match(line) is true, taken out of what came so far; raises with what
        came instead when none does in time. Lines no wait took are kept for
        later waits (events may come in any order). Event-driven: it blocks
        on the socket, never sleeps."""
        backlog = self.__dict__.setdefault("status_backlog", [])
        for i, line in enumerate(backlog):
            if match(line):
                return backlog.pop(i)
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            # wakes up every second to see whether the daemon died: then
            # nothing more can come
            self.sock.settimeout(min(left, 1.0))
            try:
                msg = self.sock.recv(4096).decode()
            except socket.timeout:
                if self.proc.poll() is not None:
                    break
                continue
            seen.append(msg)
            found = None
            for line in msg.split("\n"):
                if found is None and match(line):
                    found = line
                else:
                    backlog.append(line)
            if found is not None:
                return found
        raise AssertionError(f"no matching notification within {timeout} s; got {seen!r}\n"
                             + self.output())

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def is_mounted(self):
        with open("/proc/self/mountinfo") as f:
            return any(line.split()[4] == self.mnt for line in f)

    def counted_at_exit(self, pattern, what):
        """Ends the daemon (SIGTERM, exit 0) and returns the figures of
        @pattern (a regular expression whose groups are numbers) in the
        stats its log ends with; fails saying it does not count @what."""
        assert self.terminate() == 0
        m = re.search(pattern, self.output())
        assert m, f"the daemon counts {what}"
        return [int(g) for g in m.groups()]

    def terminate(self, sig=signal.SIGTERM, timeout=30):
        """Signals the daemon and returns its exit status. Its
        notifications are read meanwhile (kept for wait_status()): a
        daemon whose threads wait to send one to a full socket (sd_notify
        blocks, ten datagrams queued) could not end; seen in CI, with the
        coldplug's hotplug statuses still coming after the test's last
        wait (test_hotplug_escape)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        deadline = time.monotonic() + timeout
        backlog = self.__dict__.setdefault("status_backlog", [])
        self.sock.settimeout(0.1)
        while self.proc.poll() is None and time.monotonic() < deadline:
            try:
                backlog += self.sock.recv(65536).decode(errors="replace").split("\n")
            except (socket.timeout, OSError):
                pass
        return self.proc.wait(max(0.0, deadline - time.monotonic()))

    def stop(self):
        if self.proc.poll() is None:
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], stderr=subprocess.DEVNULL)
            # its notifications are read meanwhile: a daemon whose threads
            # wait to send one to a full socket (sd_notify blocks, as for
            # a busy systemd) could not end
            import time
            deadline = time.monotonic() + 30
            self.sock.settimeout(0.1)
            while self.proc.poll() is None and time.monotonic() < deadline:
                try:
                    self.sock.recv(4096)
                except (socket.timeout, OSError):
                    pass
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
        if self.is_mounted():
            subprocess.run(["umount", "-l", self.mnt], stderr=subprocess.DEVNULL)
        report = sanitizer_report(self.output())
        self.sock.close()
        self.log.close()
        self.tmp.cleanup()
        self.testbed = None
        if report:
            raise AssertionError("the daemon's sanitizer reported:\n" + report)


def auto_unmount_helpers(mnt):
    """The pids of the fusermount3 processes that wait to unmount @mnt."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(args[0]) == b"fusermount3" and mnt.encode() in args:
            pids.append(int(pid))
    return pids


def unmount_watcher(daemon_pid, wait=30):
    """The pid of the daemon's unmount watcher (its child driverfsd-watch),
    or None. The daemon may report READY before the forked watcher has
    named itself (a loaded machine, a sanitizer build): it is looked for
    until it has, for at most @wait seconds."""
    deadline = time.monotonic() + wait
    while True:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/status") as f:
                    status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
            except OSError:
                continue
            if status.get("Name") == "driverfsd-watch" and status.get("PPid") == str(daemon_pid):
                return int(pid)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


# the correctable errors' names of aer_dev_correctable, in the kernel's
# order (Linux 6.1's, as the vm tier's tests/vm/guest/test_aer.sh reads them)
AER_CORRECTABLE = ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr",
                   "CorrIntErr", "HeaderOF")


def aer_correctable(**counts):
    """The text of an aer_dev_correctable file with @counts (by name, the
    others 0) and their total."""
    return "".join(f"{n} {counts.get(n, 0)}\n" for n in AER_CORRECTABLE) + \
        f"TOTAL_ERR_COR {sum(counts.values())}\n"
