# SPDX-License-Identifier: LGPL-2.1-or-later
"""Readers walk the mount (every directory, file and link) while thousands
of unplug and replug events for the second hub's subtree arrive (each bound
device's unbind before its remove, its bind after its add): no reader
sees an error other than ENOENT or ENODEV (a device removed under it), the
daemon does not crash, and the tree ends as the testbed is.

DRIVERFSD_STRESS_EVENTS sets the number of events (default 3000, for a
meson test well under a minute; raise it for a soak)."""
import json
import os
import subprocess
import sys


from hotplug_util import (HERE, HUB2, TESTBED, Sender, blocks, devpath, devpaths_in_mount,
                          devpaths_in_testbed, under)

EVENTS = int(os.environ.get("DRIVERFSD_STRESS_EVENTS", "3000"))
READERS = 2


def test_readers_during_thousands_of_events(full, tmp_path):
    d = full
    hub = [devpath(b) for b in blocks(TESTBED) if under(b, HUB2)]  # parents first
    sender = Sender(d)  # blocking: every event reaches the daemon
    subsystems = {p: sender.subsystem(p) for p in hub}
    drivers = {p: sender.driver(p) for p in hub if sender.driver(p)}
    assert drivers, "the hub's devices have drivers"
    before = devpaths_in_mount(d)
    stop = tmp_path / "stop"
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # the mount only
    readers = [subprocess.Popen([sys.executable, os.path.join(HERE, "walker.py"), d.mnt,
                                 str(stop)], stdout=subprocess.PIPE, env=env)
               for _ in range(READERS)]
    try:
        sent = 0
        last = None
        while sent < EVENTS:
            # unplug, children first, each bound device unbound just
            # before its remove; replug, parents first, each add followed
            # by its bind, as the kernel sends them
            sender.unplug(list(reversed(hub)), subsystems, drivers)
            last = sender.plug(hub, subsystems, drivers)
            sent += 2 * (len(hub) + len(drivers))
        action, path, seqnum = last
        d.wait_status(lambda l: l == f"STATUS=hotplug {action} {path} {seqnum}", timeout=120)
    finally:
        stop.touch()
        results = [json.loads(r.communicate(timeout=120)[0]) for r in readers]
    assert d.proc.poll() is None, "the daemon is alive:\n" + d.output()
    for r in results:
        assert r["walks"] > 0 and r["files"] > 0, r
        assert not r["unexpected"], r
    assert not [l for l in d.status_backlog if l.startswith("STATUS=hotplug rescan")], \
        "no event was lost"
    after = devpaths_in_mount(d)
    assert set(after) == devpaths_in_testbed(d)
    assert after == before  # the same places, too
    print(f"{sent} events; readers: {results}")
