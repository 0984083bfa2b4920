#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""hotplug-bench: how fast uevents reach the mount, on the USB tree testbed.

  latency  a device removed and added back N times while a reader walks the
           mount (build/walk in a loop): the time from the add uevent sent
           to the first successful stat() of the device's directory; p50,
           p99, max.
  burst    EVENTS remove/add events of the second hub's subtree sent as fast
           as the daemon takes them (udevd's message format, blocking on a
           full socket, as bench and tests send them: tests/mount/
           hotplug_util.py), timed from the first sent to the daemon's report
           of the last; then the tree is compared with the testbed's.

Run it under umockdev from the build directory's parent:
  umockdev-wrapper /usr/bin/python3 bench/hotplug-bench.py [--latency N] [--burst EVENTS]
(DRIVERFSD and WALK name the daemon and the walker; default build/driverfsd
and build/walk.) Not part of meson test: the figures depend on the machine."""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mount"))
os.environ.setdefault("DRIVERFSD", os.path.join(HERE, "..", "build", "driverfsd"))

from harness import Daemon  # noqa: E402
from hotplug_util import (HUB2, KBD, TESTBED, Sender, blocks, devpath, devpaths_in_mount,  # noqa: E402
                          devpaths_in_testbed, under)


def reported(d, action, path, seqnum):
    d.wait_status(lambda l: l == f"STATUS=hotplug {action} {path} {seqnum}", timeout=120)
    d.status_backlog.clear()  # nobody waits for the others


def latency(d, sender, rounds):
    """Seconds from the add sent to the stat that finds the device."""
    # a leaf (no device below it, so that one add restores it): the
    # keyboard's input event device
    kbd = [devpath(b) for b in blocks(TESTBED) if under(b, KBD)]
    target = [p for p in kbd if "/event" in p and not any(q.startswith(p + "/") for q in kbd)][0]
    place = d.path("root", devpaths_in_mount(d)[target])
    subsystem = sender.subsystem(target)
    walk = os.environ.get("WALK", os.path.join(HERE, "..", "build", "walk"))
    walker = subprocess.Popen(["sh", "-c", 'while :; do "$0" "$1" >/dev/null; done', walk,
                               d.mnt], env={k: v for k, v in os.environ.items()
                                            if k != "LD_PRELOAD"})
    out = []
    try:
        for _ in range(rounds):
            reported(d, "remove", target, sender.send("remove", target, subsystem))
            assert not os.path.exists(place)
            t0 = time.perf_counter()
            seq = sender.send("add", target, subsystem)
            while True:
                try:
                    os.stat(place)
                    break
                except FileNotFoundError:
                    continue
            out.append(time.perf_counter() - t0)
            reported(d, "add", target, seq)
    finally:
        walker.kill()
        walker.wait()
    return out


def cpu_seconds(pid):
    """User and system time of the process so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def burst(d, sender, events):
    hub = [devpath(b) for b in blocks(TESTBED) if under(b, HUB2)]
    subsystems = {p: sender.subsystem(p) for p in hub}
    before = devpaths_in_mount(d)
    sent = 0
    cpu0, own0 = cpu_seconds(d.proc.pid), time.process_time()
    t0 = time.perf_counter()
    while sent < events:
        for p in reversed(hub):
            sender.send("remove", p, subsystems[p])
        for p in hub:
            last = sender.send("add", p, subsystems[p])
        sent += 2 * len(hub)
    t_sent = time.perf_counter() - t0
    reported(d, "add", hub[-1], last)
    elapsed = time.perf_counter() - t0
    cpu, own = cpu_seconds(d.proc.pid) - cpu0, time.process_time() - own0
    after = devpaths_in_mount(d)
    ok = set(after) == devpaths_in_testbed(d) and after == before
    if not ok:
        print("missing:", sorted(set(before) - set(after))[:5], "extra:",
              sorted(set(after) - set(before))[:5], "moved:",
              [(p, before[p], after[p]) for p in before if p in after and before[p] != after[p]][:5])
    return sent, t_sent, elapsed, cpu, own, ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=int, default=1000, metavar="N")
    ap.add_argument("--burst", type=int, default=10000, metavar="EVENTS")
    args = ap.parse_args()
    d = Daemon(TESTBED)
    try:
        sender = Sender(d)
        if args.latency:
            lat = sorted(latency(d, sender, args.latency))
            p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3  # noqa: E731
            print(f"latency  {len(lat)} adds under a concurrent walk: p50 {p(0.50):.3f} ms  "
                  f"p99 {p(0.99):.3f} ms  max {lat[-1] * 1e3:.3f} ms  "
                  f"mean {statistics.mean(lat) * 1e3:.3f} ms")
        if args.burst:
            sent, t_sent, elapsed, cpu, own, ok = burst(d, sender, args.burst)
            print(f"burst    {sent} events in {elapsed:.3f} s: {sent / elapsed:.0f} events/s "
                  f"(sender done after {t_sent:.3f} s; CPU per event: daemon {cpu * 1e6 / sent:.0f} us, "
                  f"sender {own * 1e6 / sent:.0f} us); "
                  "final tree "
                  f"{'equals the testbed' if ok else 'DIFFERS from the testbed'}")
    finally:
        d.stop()


if __name__ == "__main__":
    main()
