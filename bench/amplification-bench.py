#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""amplification-bench: what unprivileged readers hammering the mount cost
everyone else (issue 30 item 3). A walk of the whole tree (build/walk: every
directory listed, every file read, every link read) is timed alone, then
while READERS processes running as user nobody hammer one thing each:

  miss      lookups of names that are not there (in a device's directory and
            in bus/pci/devices/), 64 names in turn
  metrics   stat() of the metrics file
  classdrv  readlink() of each class/<class>/drivers/<bus>:<driver> link
  binding   reads of a PCI device's binding file (its candidate modules,
            looked up with libkmod in a modules directory made as
            tests/mount/test_modules.py makes it)

and the walk's slowdown (median walk with the hammer / median walk alone)
is printed per hammer, for each daemon given, side by side. Each reader makes
RATE operations a second at most (--rate), so that its own CPU is alike
whatever answers it (a miss the kernel answers from a negative entry costs a
reader spinning unthrottled a whole CPU, and the walk with it): compare
daemons, not a ratio with 1.

Run it from the source tree, as root, under umockdev:
  umockdev-wrapper /usr/bin/python3 bench/amplification-bench.py \\
      [--readers 4] [--rounds 5] [--walks 10] [--rate 2000] NAME=DRIVERFSD [NAME=DRIVERFSD ...]
(WALK names the walker; default build/walk.) Not part of meson test: the
figures depend on the machine."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mount"))

HAMMERS = ("miss", "metrics", "classdrv", "binding")

# one reader: the loop each hammer runs, as nobody, until killed
READER = r"""
import os, sys, time
kind, mnt, rate, arg = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
i = 0
due = time.monotonic()
while True:
    i += 1
    if i % 50 == 0:  # RATE a second: the readers' own CPU alike whatever answers them
        due += 50 / rate
        time.sleep(max(0, due - time.monotonic()))
    try:
        if kind == "miss":
            os.lstat(os.path.join(mnt, arg[i % 2], "nosuch%d" % (i % 64)))
        elif kind == "metrics":
            os.stat(os.path.join(mnt, "metrics"))
        elif kind == "classdrv":
            os.readlink(os.path.join(mnt, arg[i % len(arg)]))
        else:
            with open(os.path.join(mnt, arg[0])) as f:
                f.read()
    except OSError:
        pass
"""


WALKS = 1  # walks per figure (--walks)


def walk_once(mnt):
    """Seconds of WALKS walks of the tree in a row."""
    walk = os.environ.get("WALK", os.path.join(HERE, "..", "build", "walk"))
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    t0 = time.perf_counter()
    for _ in range(WALKS):
        subprocess.run([walk, mnt], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def requests(d):
    """The FUSE requests the daemon served so far (its metrics file)."""
    with open(d.path("metrics")) as f:
        return sum(float(line.rsplit(" ", 1)[1]) for line in f
                   if line.startswith("driverfsd_fuse_requests_total{"))


def targets(d):
    """What each hammer's readers are given (paths under the mount)."""
    pci = "pci0000:00/0000:00:1f.6"
    links = []
    for cls in sorted(os.listdir(d.path("class"))):
        top = d.path("class", cls, "drivers")
        links += [os.path.join("class", cls, "drivers", n) for n in sorted(os.listdir(top))
                  if ":" in n]
    return {"miss": [os.path.join("root", pci), "bus/pci/devices"],
            "metrics": [],
            "classdrv": links or ["class/none/drivers/none:none"],
            "binding": [os.path.join("root", pci, "binding")]}


RATE = 2000  # operations a second per reader (--rate)


def hammer(kind, mnt, args, readers):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return [subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                              sys.executable, "-c", READER, kind, mnt, str(RATE), *args],
                             env=env)
            for _ in range(readers)]


def measure(name, daemon, readers, rounds, tmp):
    os.environ["DRIVERFSD"] = daemon
    from harness import Daemon
    from test_modules import TESTBED, module_states, modules_dir
    os.makedirs(tmp)
    _, moddir = modules_dir(tmp)
    d = Daemon(TESTBED, ["--modules-dir", moddir], prepare=module_states)
    out = {}
    try:
        args = targets(d)
        walk_once(d.mnt)  # warm
        alone = [walk_once(d.mnt) for _ in range(rounds)]
        out["alone"] = statistics.median(alone)
        for kind in HAMMERS:
            procs = hammer(kind, d.mnt, args[kind], readers)
            try:
                time.sleep(0.5)  # the readers under way
                before, t0 = requests(d), time.perf_counter()
                out[kind] = statistics.median(walk_once(d.mnt) for _ in range(rounds))
                out[kind + " req/s"] = (requests(d) - before) / (time.perf_counter() - t0)
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
            # the walk alone again between hammers: the machine's drift
            out["alone"] = statistics.median([out["alone"], walk_once(d.mnt)])
    finally:
        d.stop()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--walks", type=int, default=10, help="walks per figure (a small tree)")
    ap.add_argument("--rate", type=float, default=2000, help="operations a second per reader")
    ap.add_argument("daemons", nargs="+", metavar="NAME=DRIVERFSD")
    a = ap.parse_args()
    global WALKS, RATE
    WALKS, RATE = a.walks, a.rate
    results = {}
    with tempfile.TemporaryDirectory(prefix="amplification-") as tmp:
        for i, spec in enumerate(a.daemons):
            name, path = spec.split("=", 1)
            results[name] = measure(name, os.path.abspath(path), a.readers, a.rounds,
                                    os.path.join(tmp, str(i)))
    names = list(results)
    print(f"# {a.readers} readers as nobody per hammer, {a.rate:.0f} operations/s each; the median of {a.rounds} figures, "
          f"each {a.walks} walks in a row")
    print("# req/s: FUSE requests the daemon served per second meanwhile (walk and hammer)")
    print(f"{'hammer':10}" + "".join(f"{n + ' walk (s)':>16}{n + ' ratio':>12}{n + ' req/s':>14}"
                                      for n in names))
    for kind in ("alone", *HAMMERS):
        row = f"{kind:10}"
        for n in names:
            r = results[n]
            row += f"{r[kind]:16.3f}{r[kind] / r['alone']:11.2f}x{r.get(kind + ' req/s', 0):14.0f}"
        print(row)


if __name__ == "__main__":
    main()
