# SPDX-License-Identifier: LGPL-2.1-or-later
"""How requests reach the daemon (src/fuse/uring.h).

* Where the kernel offers FUSE over io_uring (fuse.enable_uring=Y), the
  daemon serves every request but FORGETs, INTERRUPTs and notifications
  over it: 4 threads per possible CPU, each pinned to its CPU and waiting
  as SCHED_IDLE; the tree it serves is the same as over /dev/fuse.
* A store that waits (a suspend blocked in a hook) holds one thread of its
  CPU; that CPU's other requests are still served. The store, and the hook
  it runs, are neither SCHED_IDLE nor pinned to the ring thread's CPU;
  without CAP_SYS_NICE (needed to leave SCHED_IDLE) the ring threads are
  normal ones.
* Under any user's CPU load a SCHED_IDLE thread would wait seconds for the
  CPU, woken or halfway through a request with the model's lock held: the
  rescuer makes a starved ring thread normal until its request is served,
  so reads and hotplug keep going.
* --no-io-uring, or a kernel that does not offer it, and every request goes
  through /dev/fuse.
* SIGTERM while the first requests are on their way (INIT, the rings being
  set up) still ends the daemon.
"""
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from harness import Daemon
from hotplug_util import Sender, wait_event
from test_faults import NIC, Env, wait_started

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "server-2dom.umockdev")
PARAM = "/sys/module/fuse/parameters/enable_uring"
PER_CPU = 4


def possible_cpus():
    with open("/sys/devices/system/cpu/possible") as f:
        text = f.read().strip()
    n = 0
    for part in text.split(","):
        first, _, last = part.partition("-")
        n += int(last or first) - int(first) + 1
    return n


def set_param(value):
    with open(PARAM, "w") as f:
        f.write(value)


@pytest.fixture
def uring():
    """The kernel offers io_uring to the daemons started in the test."""
    if os.environ.get("DRIVERFS_IO_URING") == "0":
        pytest.skip("driverfsd was built without io_uring (-Dio_uring=disabled)")
    if not os.path.exists(PARAM) or os.geteuid() != 0:
        pytest.skip("this kernel has no FUSE over io_uring, or not root")
    with open(PARAM) as f:
        old = f.read().strip()
    set_param("Y")
    yield
    set_param(old)


def ring_threads(pid):
    """{tid: (comm, allowed CPUs)} of @pid's ring threads."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                allowed = re.search(r"^Cpus_allowed_list:\s*(\S+)", f.read(), re.M).group(1)
        except FileNotFoundError:
            continue
        if comm.startswith("fuse-ring-"):
            out[int(tid)] = (comm, allowed)
    return out


def read_tree(mnt):
    """{relative path: content or link target} of every file and link, but
    metrics (the daemon's counters, which every read moves)."""
    out = {}
    for top, dirs, files in os.walk(mnt):
        for name in dirs + files:
            p = os.path.join(top, name)
            rel = os.path.relpath(p, mnt)
            if rel == "metrics":
                continue
            if os.path.islink(p):
                out[rel] = "-> " + os.readlink(p)
            elif os.path.isfile(p):
                try:
                    with open(p, "rb") as f:  # sysfs values may be binary
                        out[rel] = f.read()
                except OSError as e:
                    out[rel] = f"error {e.errno}"
    return out


def served_over_uring(output):
    m = re.search(r"fuse requests: (\d+) .*; over io_uring: (\d+)", output)
    return (int(m.group(1)), int(m.group(2))) if m else None


def pinned_reads(mnt, cpu, result):
    """Reads the tree from a thread pinned to @cpu."""
    os.sched_setaffinity(0, {cpu})
    result[cpu] = read_tree(mnt)


def test_requests_come_over_io_uring_on_each_cpu(uring):
    d = Daemon(TESTBED)
    try:
        # the rings are set up at INIT, which READY does not wait for; the
        # first request waits for them
        os.listdir(d.mnt)
        threads = ring_threads(d.proc.pid)
        n = possible_cpus()
        assert len(threads) == n * PER_CPU, threads
        for tid, (comm, allowed) in threads.items():
            cpu = comm[len("fuse-ring-"):]
            if os.path.exists(f"/sys/devices/system/cpu/cpu{cpu}/online") or cpu == "0":
                assert allowed == cpu, threads
            # waiting as SCHED_IDLE: the asker is woken back on this CPU
            assert os.sched_getscheduler(tid) == os.SCHED_IDLE, threads
        # readers on every CPU the test may use, each served by its queue
        results = {}
        readers = [threading.Thread(target=pinned_reads, args=(d.mnt, cpu, results))
                   for cpu in sorted(os.sched_getaffinity(0))]
        for t in readers:
            t.start()
        for t in readers:
            t.join(120)
        assert len(results) == len(readers)
        trees = list(results.values())
        assert all(t == trees[0] for t in trees)
        assert len(trees[0]) > 500
        assert d.terminate() == 0
        out = d.output()
        assert "serving FUSE requests over io_uring" in out
        total, uring_served = served_over_uring(out)
        # all but INIT (and FORGETs, none here) came over the rings
        assert uring_served >= len(trees[0]) and uring_served >= total - 1, out
    finally:
        d.stop()
    # the same tree over /dev/fuse
    d = Daemon(TESTBED, ["--no-io-uring"])
    try:
        assert ring_threads(d.proc.pid) == {}
        assert read_tree(d.mnt) == trees[0]
        assert d.terminate() == 0
        assert "over io_uring" not in d.output()
    finally:
        d.stop()


def test_a_waiting_store_leaves_its_cpus_requests_served(uring):
    env = Env(timeout=120)
    gate = os.path.join(env.log, f"gate.suspend.{os.path.basename(NIC)}")
    os.mkfifo(gate)
    started = os.path.join(env.log, "started")
    os.mkfifo(started)
    old = os.sched_getaffinity(0)
    try:
        # the writer and the readers ask from the same CPU, so from the same
        # ring queue
        os.sched_setaffinity(0, {min(old)})
        errors = []

        def suspend():
            try:
                env.power(None, "suspend")
            except OSError as e:
                errors.append(e)

        writer = threading.Thread(target=suspend)
        writer.start()
        wait_started(started)
        # the store (and the hook it runs) is served as a normal thread
        with open(os.path.join(env.log, f"pid.{os.path.basename(NIC)}")) as f:
            hook = int(f.read())
        assert os.sched_getscheduler(hook) == os.SCHED_OTHER
        # and on any CPU the daemon may use, not its ring thread's alone
        assert os.sched_getaffinity(hook) == os.sched_getaffinity(env.d.proc.pid)
        # the store now waits in the hook: the other requests of this CPU
        reads = {}
        reader = threading.Thread(target=lambda: reads.update(read_tree(env.d.path("bus"))))
        reader.start()
        reader.join(30)
        assert not reader.is_alive(), "reads stalled behind a waiting store"
        assert len(reads) > 20
        assert writer.is_alive()
        with open(gate, "w") as f:
            f.write("go\n")
        writer.join(60)
        assert not writer.is_alive() and not errors, errors
        env.power(None, "resume")
        assert set(env.all_power().values()) == {"on"}
    finally:
        os.sched_setaffinity(0, old)
        env.stop()


def rescued(output):
    m = re.search(r"ring threads rescued: (\d+)", output)
    return int(m.group(1)) if m else None


def test_reads_and_hotplug_go_on_under_a_users_cpu_load(uring):
    # 32 busy loops of an unprivileged user on the CPU the test reads from:
    # a SCHED_IDLE ring thread weighs 3 against each loop's 1024 and waits
    # seconds for each request (more than a minute for the reads below,
    # before the rescuer); made normal, it waits its turn among the loops.
    # One CPU only, to leave the machine the rest.
    d = Daemon(TESTBED)
    old = os.sched_getaffinity(0)
    cpu = max(old)
    loops = []
    try:
        pci = d.path("bus", "pci", "devices")
        files = [os.path.join(pci, name, "vendor") for name in sorted(os.listdir(pci))][:12]
        assert len(files) >= 10
        sender = Sender(d)
        os.sched_setaffinity(0, {cpu})
        for _ in range(32):
            loops.append(subprocess.Popen(
                ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                 "taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"]))
        time.sleep(0.5)
        deadline = time.monotonic() + 60
        done = 0
        for f in files * 3:
            with open(f) as fh:
                assert fh.read().startswith("0x")
            done += 1
            if time.monotonic() > deadline:
                break
        assert done == len(files) * 3, f"{done} reads in 60 s under load"
        # and a hotplug event is taken in while the loops run
        seqnum = sender.send("change", "/devices/" + NIC)
        assert wait_event(d, "change", "/devices/" + NIC, timeout=60) == seqnum
        for p in loops:
            p.kill()
            p.wait()
        loops = []
        assert d.terminate() == 0
        assert rescued(d.output()) > 0, d.output()
    finally:
        for p in loops:
            p.kill()
            p.wait()
        os.sched_setaffinity(0, old)
        d.stop()


def test_without_cap_sys_nice_the_ring_threads_stay_normal(uring):
    # a SCHED_IDLE thread needs CAP_SYS_NICE (or RLIMIT_NICE) to become
    # normal again for a store: without it, no thread waits as SCHED_IDLE
    d = Daemon(TESTBED, wrapper=["setpriv", "--bounding-set", "-sys_nice"])
    try:
        with open(f"/proc/{d.proc.pid}/status") as f:
            caps = int(re.search(r"^CapEff:\s*(\S+)", f.read(), re.M).group(1), 16)
        assert not caps & (1 << 23)
        tree = read_tree(d.mnt)
        assert len(tree) > 500
        threads = ring_threads(d.proc.pid)
        assert len(threads) == possible_cpus() * PER_CPU
        assert all(os.sched_getscheduler(tid) == os.SCHED_OTHER for tid in threads), threads
        assert d.terminate() == 0
    finally:
        d.stop()


def test_kernel_without_io_uring_serves_through_dev_fuse(uring):
    set_param("N")
    d = Daemon(TESTBED)
    try:
        tree = read_tree(d.mnt)
        assert len(tree) > 500
        assert ring_threads(d.proc.pid) == {}
        assert d.terminate() == 0
        out = d.output()
        assert "serving FUSE requests over io_uring" not in out
        total, uring_served = served_over_uring(out)
        assert uring_served == 0 and total > len(tree)
    finally:
        d.stop()


def test_sigterm_while_the_rings_start_ends_the_daemon(uring):
    # READY comes before the session reads INIT: SIGTERM right after it
    # lands while the rings are set up (libfuse cancels its threads then)
    for _ in range(20):
        d = Daemon(TESTBED)
        try:
            assert d.terminate(signal.SIGTERM, timeout=30) == 0, d.output()
        finally:
            d.stop()
