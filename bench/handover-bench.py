#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""handover-bench - the pause a reader sees across a restart, by machine
size, side by side: driverfsd --handover restarted by SIGUSR2 and taken over
by the next daemon (docs/design.md §10.1) against a plain restart (SIGTERM,
the mount gone, a new daemon mounting anew).

  umockdev-wrapper bench/handover-bench.py [N ...]   (root; default 1000 10000)

For each size N a umockdev testbed of N platform devices (each bound to a
driver, with a few attributes and a class device below it) is served (a
snapshot would not do: --handover serves a live machine); the whole mount is
walked once, so that the kernel holds a node per entry (what the next daemon
takes over, each node made when first used), and two readers in processes of
their own read a device's file every 2 ms: one a value passed through from
sysfs (a class device's "value"), one a value the daemon keeps ("modalias"). ROUNDS restarts (default 10) of each kind follow, each daemon
serving 0.5 s before the next restart. Printed per size: the nodes taken over,
the median and longest time from the signal to the next daemon's READY
(its enumeration: it answers from the state before, early.h), the
reader's longest read and its errors, the requests answered before a next
daemon had its model, and the ratio of the two kinds' medians. DRIVERFSD names the daemon (default build/driverfsd).
"""
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mount"))
os.environ.setdefault("DRIVERFSD", os.path.join(HERE, "..", "build", "driverfsd"))
import gi  # noqa: E402

gi.require_version("UMockdev", "1.0")
from gi.repository import UMockdev  # noqa: E402

from harness import Daemon  # noqa: E402
from supervisor import Supervised  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "10"))
# how long each daemon serves before the next restart: a read that waits
# for one restart, not for a row of them
SERVE = 0.5
# how long a daemon may take to start: 50 s at 10^5 devices on a quiet
# machine, which a busy one can double
READY = 600

# reads PATH every 2 ms, says "ready" after the first read, and when its
# stdin closes prints the longest read (s), the reads and the errors by name
READER = r"""
import errno, os, sys, threading, time
path = sys.argv[1]
longest, reads, errors, done = 0.0, 0, {}, False
def loop():
    global longest, reads
    while not done:
        t = time.monotonic()
        try:
            with open(path) as f:
                f.read()
            reads += 1
        except OSError as e:
            name = errno.errorcode.get(e.errno, str(e.errno))
            errors[name] = errors.get(name, 0) + 1
        longest = max(longest, time.monotonic() - t)
        time.sleep(0.002)
threading.Thread(target=loop, daemon=True).start()
while not reads and not errors:
    time.sleep(0.001)
print("ready", flush=True)
sys.stdin.read()
done = True
print(f"{longest:.3f} {reads} {errors}", flush=True)
"""


def testbed(n):
    """N platform devices bound to benchdrv, each with a class device."""
    tb = UMockdev.Testbed.new()
    for i in range(n // 2):
        dev = f"/devices/platform/bench.{i}"
        assert tb.add_from_string(
            f"P: {dev}\nE: DRIVER=benchdrv\nE: MODALIAS=platform:bench\nE: SUBSYSTEM=platform\n"
            f"L: driver=../../../bus/platform/drivers/benchdrv\n"
            f"A: ../../../bus/platform/drivers/benchdrv/bind=\n"
            f"A: driver_override=(null)\\n\nA: modalias=platform:bench\\n\n"
            f"A: uevent=DRIVER=benchdrv\\nMODALIAS=platform:bench\\n\n\n"
            f"P: {dev}/bench/bench{i}\nE: SUBSYSTEM=bench\nA: value={i}\\n\n"
            f"A: uevent=\n\n")
    return tb


def walk(mnt):
    entries = 0
    for top, dirs, files in os.walk(mnt):
        entries += len(dirs) + len(files)
    return entries


def a_file(mnt, name):
    """A device's file @name: "modalias", a value the daemon keeps (the
    next one answers it once it has its model), or "value", one it passes
    through from sysfs (answered from the state before)."""
    for top, dirs, files in os.walk(os.path.join(mnt, "root")):
        if name in files:
            return os.path.join(top, name)
    raise SystemExit(f"handover-bench: no device file {name} to read")


def reader(path):
    """The reader, once it has read once."""
    p = subprocess.Popen([sys.executable, "-c", READER, path], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"
    return p


def reader_result(p):
    out, _ = p.communicate(timeout=60)
    longest, reads, errors = out.split(" ", 2)
    return float(longest), int(reads), errors.strip()


def handover_rounds(tb, tmp):
    mnt = os.path.join(tmp, "handover")
    os.mkdir(mnt)
    d = Supervised(tb, mnt, tmp, ready=READY)
    entries = walk(mnt)
    r = [reader(a_file(mnt, name)) for name in ("value", "modalias")]
    pauses, made, early = [], "", 0
    for _ in range(ROUNDS):
        t0 = time.monotonic()
        d.proc.send_signal(signal.SIGUSR2)
        if d.proc.wait(60) != 75:
            raise SystemExit("handover-bench: the daemon did not leave:\n" + d.output())
        nxt = Supervised(tb, mnt, tmp, d.store, ready=READY)
        pauses.append(time.monotonic() - t0)
        d.close()
        d = nxt
        for line in d.output().splitlines():
            if "took over the mount" in line:
                made = line.split(": ", 2)[-1]
            if "before the model," in line:
                early += int(line.split("before the model, ")[1].split()[0])
        time.sleep(SERVE)
    result = [reader_result(p) for p in r]
    d.proc.send_signal(signal.SIGTERM)
    d.proc.wait(60)
    d.close()
    for fd in d.store.values():
        os.close(fd)
    return entries, made, early, pauses, result


def plain_rounds(tb, tmp):
    mnt = os.path.join(tmp, "plain")
    os.mkdir(mnt)
    d = Daemon(None, testbed=tb, mnt=mnt, ready=READY)
    walk(mnt)
    r = [reader(a_file(mnt, name)) for name in ("value", "modalias")]
    pauses = []
    for _ in range(ROUNDS):
        t0 = time.monotonic()
        d.stop()
        d = Daemon(None, testbed=tb, mnt=mnt, ready=READY)
        pauses.append(time.monotonic() - t0)
        time.sleep(SERVE)
    result = [reader_result(p) for p in r]
    d.stop()
    return pauses, result


def main():
    if os.geteuid() != 0:
        raise SystemExit("handover-bench: run as root (--handover serves a connection it "
                         "did not mount)")
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000]
    print(f"handover-bench {time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} CPUs, "
          f"{ROUNDS} restarts of each kind")
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="driverfs-hbench-") as tmp:
            os.chmod(tmp, 0o755)
            tb = testbed(n)
            entries, made, early, hp, hr = handover_rounds(tb, tmp)
            pp, pr = plain_rounds(tb, tmp)
            hm, pm = statistics.median(hp), statistics.median(pp)
            print(f"\nN={n}: {entries} entries walked; {made}")
            print(f"  handover  signal->READY median {hm:.3f} s, longest {max(hp):.3f} s; "
                  f"{early} requests answered before the next daemon's model")
            for kind, (l, reads, err) in zip(("sysfs value", "kept value"), hr):
                print(f"    reader of a {kind}: longest read {l:.3f} s, {reads} reads, "
                      f"errors {err}")
            print(f"  plain     signal->READY median {pm:.3f} s, longest {max(pp):.3f} s")
            for kind, (l, reads, err) in zip(("sysfs value", "kept value"), pr):
                print(f"    reader of a {kind}: longest read {l:.3f} s, {reads} reads, "
                      f"errors {err}")
            print(f"  handover/plain pause {hm / pm:.2f}")


if __name__ == "__main__":
    main()
