# SPDX-License-Identifier: LGPL-2.1-or-later
"""soak - a bounded stress run of driverfsd on the server testbed: readers
walking the mount, a hotplug storm (umockdev uevents removing and adding a
PCI subtree), and PM transitions on the whole system's power file and on subtrees, all at once
for a given time. Prints the operations done, the errors by kind, and the
daemon's RSS at start and end, its heap in use at rest (after a walk with
nothing else running) at start and end, and each minute its RSS, its heap's
bytes in use and free (the metrics file's driverfsd_heap_bytes) and the nodes
the kernel holds (driverfsd_fuse_nodes); exits 1 when the daemon died, a sanitizer
reported something, or an error of an unexpected kind came.

  umockdev-wrapper /usr/bin/python3 bench/soak.py [SECONDS] [READERS]

(umockdev-wrapper: the uevents are injected from this process.) DRIVERFSD
names the daemon (default: build/driverfsd beside this script's tree).
"""
import collections
import errno
import os
import random
import re
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mount"))
os.environ.setdefault("DRIVERFSD", os.path.join(HERE, "..", "build", "driverfsd"))
from harness import Daemon, own  # noqa: E402

TESTBED = os.path.join(HERE, "..", "tests", "testbeds", "server-2dom.umockdev")
# unplugged and plugged back, children first on removal
STORM = ["pci0000:00/0000:00:02.0/0000:01:00.0/0000:02:10.0",
         "pci0000:00/0000:00:02.0/0000:01:00.0/0000:02:10.0/0000:04:00.0",
         "pci0000:00/0000:00:02.0/0000:01:00.0/0000:02:10.0/0000:04:00.1"]
PM_PLACES = ["", "pci0000:00", "pci0000:00/0000:00:02.0", "pci0001:00",
             "pci0000:00/0000:00:02.0/0000:01:00.0/0000:02:10.0/0000:04:00.0"]
# what readers and PM writers may meet while devices come and go, and
# while another transition runs; anything else is a finding
EXPECTED = {"ENOENT", "ENODEV", "EBUSY", "ESTALE"}


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.ops = collections.Counter()
        self.errors = collections.Counter()
        self.first = {}  # (kind, name) -> the path of its first unexpected error

    def op(self, kind, n=1):
        with self.lock:
            self.ops[kind] += n

    def error(self, kind, e):
        name = errno.errorcode.get(e.errno, str(e.errno)) if isinstance(e, OSError) else repr(e)
        with self.lock:
            self.errors[(kind, name)] += 1
            if name not in EXPECTED and isinstance(e, OSError):
                self.first.setdefault((kind, name), e.filename)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def heap_kib(d):
    """(in use, free) KiB of the daemon's heap, and the nodes the kernel
    holds, from its metrics file."""
    out = {}
    with open(d.path("metrics")) as f:
        for line in f:
            m = re.match(r'driverfsd_heap_bytes\{state="(\w+)"\} (\S+)$', line)
            if m:
                out[m.group(1)] = int(float(m.group(2))) // 1024
            m = re.match(r'driverfsd_fuse_nodes (\S+)$', line)
            if m:
                out["nodes"] = int(float(m.group(1)))
    return out.get("in_use", -1), out.get("free", -1), out.get("nodes", -1)


def regular_files(top, counts):
    """Walks @top, yielding the paths its listings give as regular files.
    The type is the listing's (d_type), never a stat of the path: os.walk
    stats symlinks, so a "driver" link whose device was unplugged at that
    moment passed for a file, and was opened as the directory it pointed
    to once the device was back (EISDIR, bench/RESULTS.md, Soak)."""
    stack = [top]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                entries = list(it)
        except OSError as e:
            counts.error("walk", e)
            continue
        counts.op("readdir")
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                stack.append(e.path)
            elif e.is_file(follow_symlinks=False):
                yield e.path


def reader(d, stop, counts):
    while not stop.is_set():
        for path in regular_files(d.path("root"), counts):
            try:
                # what was listed as a file is opened as one: a directory
                # (EISDIR) or a link (ELOOP) there now is a finding
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                try:
                    while os.read(fd, 65536):
                        pass
                finally:
                    os.close(fd)
                counts.op("read")
            except OSError as e:
                counts.error("read", e)
            if stop.is_set():
                break


def storm(d, stop, counts):
    sysroot = "/sys/devices/"
    while not stop.is_set():
        for p in reversed(STORM):
            d.testbed.uevent(sysroot + p, "remove")
        for p in STORM:
            d.testbed.uevent(sysroot + p, "add")
        counts.op("uevent", 2 * len(STORM))
        # each event is seen through before the next round: a flood the
        # monitor's socket cannot hold is the hotplug suite's subject
        try:
            d.wait_status(lambda line: line.startswith(f"STATUS=hotplug add /devices/{STORM[-1]} "),
                          timeout=60)
        except AssertionError as e:
            counts.error("hotplug", e)
            return


def write_power(d, place, word):
    """The power file of the device at @place ("" the whole system's, at
    the mount's top)."""
    fd = os.open(own(d.path("root", place), "power") if place else d.path("power"),
                 os.O_WRONLY)
    try:
        os.write(fd, word.encode())
    finally:
        os.close(fd)


def pm(d, stop, counts, seed):
    rnd = random.Random(seed)
    while not stop.is_set():
        place = rnd.choice(PM_PLACES)
        for word in ("suspend", "resume"):
            try:
                write_power(d, place, word)
                counts.op(word)
            except OSError as e:
                counts.error(word, e)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60
    n_readers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    tmp = tempfile.TemporaryDirectory(prefix="driverfs-soak-")
    os.makedirs(os.path.join(tmp.name, "drivers.d"))
    with open(os.path.join(tmp.name, "drivers.d", "10-nic.conf"), "w") as f:
        f.write("[Driver]\nName=nic\nBus=pci\n[Match]\nvendor=0x15b3\n[Hooks]\n"
                "Suspend=/bin/true suspend\nResume=/bin/true resume\nTimeout=10\n")
    config = os.path.join(tmp.name, "driverfsd.conf")
    with open(config, "w") as f:
        f.write("[Daemon]\nLogLevel=warning\n")
    d = Daemon(TESTBED, ["--config", config])
    counts = Counts()
    failed = False
    try:
        # warm: every inode and the walk's buffers exist once
        for _ in os.walk(d.path("root")):
            pass
        rss_start = rss_kib(d.proc.pid)
        rest_start = heap_kib(d)
        stop = threading.Event()
        threads = [threading.Thread(target=reader, args=(d, stop, counts))
                   for _ in range(n_readers)]
        threads.append(threading.Thread(target=storm, args=(d, stop, counts)))
        threads += [threading.Thread(target=pm, args=(d, stop, counts, s)) for s in range(2)]
        start = time.monotonic()
        for t in threads:
            t.start()
        rss_peak = rss_start
        samples = []  # (seconds, KiB) every minute: a plateau, or growth
        next_sample = 60
        while time.monotonic() - start < seconds and d.proc.poll() is None:
            stop.wait(min(5, seconds))
            rss = rss_kib(d.proc.pid)
            rss_peak = max(rss_peak, rss)
            if time.monotonic() - start >= next_sample:
                samples.append((next_sample, rss, *heap_kib(d)))
                next_sample += 60
        stop.set()
        for t in threads:
            t.join(120)
        elapsed = time.monotonic() - start
        alive = d.proc.poll() is None
        if alive:
            # everything back on, so that the end is measured like the start
            write_power(d, "", "resume")
            for _ in os.walk(d.path("root")):
                pass
        rss_end = rss_kib(d.proc.pid) if alive else -1
        # at rest, as at the start: no request in flight, no open copy, so
        # what the heap holds then is what it keeps
        rest_end = heap_kib(d) if alive else (-1, -1, -1)
        print(f"soak: {elapsed:.0f} s, {n_readers} readers, 1 hotplug storm, 2 PM writers")
        for kind, n in sorted(counts.ops.items()):
            print(f"  {kind:10s} {n:10d}  ({n / elapsed:.0f}/s)")
        print("errors:" if counts.errors else "errors: none")
        for (kind, name), n in sorted(counts.errors.items()):
            mark = "" if name in EXPECTED else "   <- unexpected"
            if (kind, name) in counts.first:
                mark += f", first on {os.path.relpath(counts.first[kind, name], d.mnt)}"
            print(f"  {kind:10s} {name:10s} {n:8d}{mark}")
            failed |= name not in EXPECTED
        print(f"daemon: {'alive' if alive else 'DEAD, exit %s' % d.proc.returncode}; "
              f"RSS start {rss_start} KiB, peak {rss_peak} KiB, end {rss_end} KiB")
        print(f"at rest (after a walk, nothing else running): heap in use {rest_start[0]} KiB "
              f"at the start, {rest_end[0]} KiB at the end; nodes {rest_start[2]}, {rest_end[2]}")
        if samples:
            print("by minute, KiB (RSS / heap in use / heap free) and nodes: " +
                  ", ".join(f"{t // 60}m {k}/{u}/{f} {n}" for t, k, u, f, n in samples))
        failed |= not alive
    finally:
        try:
            d.stop()
        except AssertionError as e:
            print(e)
            failed = True
        tmp.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
