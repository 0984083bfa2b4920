# SPDX-License-Identifier: LGPL-2.1-or-later
"""Restarts under readers (issue 20, docs/design.md §10.1): driverfsd
--handover stores its /dev/fuse connection and state with its supervisor
(FDSTORE=1, as with systemd's file descriptor store), SIGUSR2 leaves the
mount to the next daemon, which is started with them (LISTEN_FDS) and
serves the same mount. The supervisor here is the test, speaking the
protocol systemd speaks. Readers hold a static value and a changing one
open, keep a directory open, sit in a device directory with a shell and
read in a loop across the restart: nothing fails, nothing hangs, the mount
is the same one. A daemon killed instead is not taken over: its mount is
detached and the next daemon mounts anew, and readers get an error, not a
hang."""
import os
import re
import signal
import subprocess
import tempfile
import threading
import time

import gi
import pytest

from harness import drivers_config, has_devpath, own
from hotplug_util import ROOT_HUB2, TESTBED
from supervisor import Supervised

gi.require_version("UMockdev", "1.0")
from gi.repository import UMockdev  # noqa: E402


def watcher_of(pid):
    """The pid of the daemon @pid's unmount watcher, its child."""
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{p}/stat") as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:]
        if name == "driverfsd-watch" and int(rest.split()[1]) == pid:
            return int(p)
    raise AssertionError(f"no unmount watcher of {pid}")


def watcher_lives(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def mount_ids(mnt):
    """The IDs of the mounts at @mnt, the topmost last."""
    with open("/proc/self/mountinfo") as f:
        return [line.split()[0] for line in f if line.split()[4] == mnt]


def mount_id(mnt):
    ids = mount_ids(mnt)
    return ids[-1] if ids else None


@pytest.fixture
def env():
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    if os.geteuid() != 0:
        pytest.skip("--handover serves a connection it did not mount: root only")
    tb = UMockdev.Testbed.new()
    assert tb.add_from_file(TESTBED)
    tmp = tempfile.TemporaryDirectory(prefix="driverfs-handover-")
    os.chmod(tmp.name, 0o755)
    mnt = os.path.join(tmp.name, "devices")
    os.mkdir(mnt)
    daemons = []
    yield tb, mnt, tmp.name, daemons
    for d in daemons:
        d.close()
    for fd in (daemons[-1].store.values() if daemons else ()):
        try:
            os.close(fd)
        except OSError:
            pass  # one the test closed itself
    while mount_id(mnt):
        subprocess.run(["umount", "-l", mnt], stderr=subprocess.DEVNULL)
    tmp.cleanup()


def device_dir(mnt):
    """A USB device's directory (it has idVendor) under root/."""
    for top, dirs, files in os.walk(os.path.join(mnt, "root")):
        if "idVendor" in files and "product" in files:
            return top
    raise AssertionError("no USB device in the mount")


# The readers' answer for a call that fails: its errno's name.
ATTEMPT = r"""
import errno
def attempt(fn):
    try:
        return fn()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
"""

# A reader in a process of its own, as readers are (a process of the test
# that held files on the mount would flush them when it forks the next
# daemon, and wait for the mount it is starting): it opens a static value
# and a changing one, a directory, and sits in the device's directory;
# each line it is sent makes it read them all again and answer with what
# it got (errno names for errors), and meanwhile a thread reads in a loop,
# noting errors and the longest read.
HOLDER = r"""
import errno, json, os, sys, threading, time
dev = sys.argv[1]
os.chdir(dev)
vendor, power = open("idVendor"), open("power")
dirfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
state = {"longest": 0.0, "errors": [], "reads": 0}
quiet = len(sys.argv) > 2  # no read loop: nothing in flight at a kill
def loop():
    while True:
        t = time.monotonic()
        try:
            with open("product") as f:
                f.read()
            state["reads"] += 1
        except OSError as e:
            state["errors"].append(errno.errorcode.get(e.errno, str(e.errno)))
        state["longest"] = max(state["longest"], time.monotonic() - t)
        time.sleep(0.005)
if not quiet:
    threading.Thread(target=loop, daemon=True).start()
for line in sys.stdin:
    out = {"vendor": attempt(lambda: (vendor.seek(0), vendor.read())[1]),
           "power": attempt(lambda: (power.seek(0), power.read())[1]),
           "listing": attempt(lambda: sorted(os.listdir(dirfd))),
           "cwd": attempt(lambda: open("idVendor").read()),
           **state}
    print(json.dumps(out), flush=True)
"""


class Holder:
    def __init__(self, dev, quiet=False):
        self.proc = subprocess.Popen(["python3", "-c", ATTEMPT + HOLDER, dev,
                                      *(["quiet"] if quiet else [])],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def check(self, timeout=30):
        """What the reader gets now; fails when it does not answer in time
        (a hang)."""
        import json
        self.proc.stdin.write("x\n")
        self.proc.stdin.flush()
        got = []
        t = threading.Thread(target=lambda: got.append(self.proc.stdout.readline()),
                             daemon=True)
        t.start()
        t.join(timeout)
        assert got and got[0], "the reader hangs"
        return json.loads(got[0])

    def close(self):
        self.proc.kill()
        self.proc.wait()


def test_a_planned_restart_is_not_seen_by_readers(env):
    tb, mnt, tmp, daemons = env
    d1 = Supervised(tb, mnt, tmp)
    daemons.append(d1)
    assert set(d1.store) == {"fuse", "state"}, d1.lines
    before = mount_id(mnt)
    holder = Holder(device_dir(mnt))
    first = holder.check()
    assert first["vendor"].endswith("\n") and first["power"] == "on\n", first
    assert first["cwd"] == first["vendor"] and "idVendor" in first["listing"]
    time.sleep(0.2)

    t0 = time.monotonic()
    d1.proc.send_signal(signal.SIGUSR2)
    assert d1.proc.wait(30) == 75, d1.output()  # EX_TEMPFAIL: start the next one
    assert "left the mount" in d1.output()
    assert mount_id(mnt) == before  # still mounted, waiting for the next daemon
    d2 = Supervised(tb, mnt, tmp, d1.store)
    daemons.append(d2)
    pause = time.monotonic() - t0
    time.sleep(0.3)

    assert "took over the mount" in d2.output(), d2.output()
    assert "the last daemon left on purpose" in d2.output(), d2.output()
    assert mount_id(mnt) == before
    # a file opened from the new daemon holds a copy under a handle of its
    # own: never the number the old daemon gave the reader's power file
    # (a sysfs attribute passed through: its copy names its attribute, which
    # a read through the reader's old handle would then show)
    others = [open(os.path.join(device_dir(mnt), "urbnum")),
              open(os.path.join(mnt, "metrics"))]
    for f in others:
        assert f.read()
    after = holder.check()
    for f in others:
        f.close()
    # every reader goes on: the same values, no error in the loop
    for key in ("vendor", "power", "listing", "cwd"):
        assert after[key] == first[key], (key, after[key], first[key])
    assert after["errors"] == [] and after["reads"] > first["reads"], after
    print(f"handover: {pause:.3f} s from SIGUSR2 to the next daemon's READY; the longest "
          f"read took {after['longest']:.3f} s")
    holder.close()
    # new lookups too
    assert os.path.exists(os.path.join(mnt, "bus", "usb", "devices"))
    # a plain stop of the next daemon unmounts
    d2.proc.send_signal(signal.SIGTERM)
    assert d2.proc.wait(30) == 0, d2.output()
    deadline = time.monotonic() + 10
    while mount_id(mnt) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mount_id(mnt) is None


def test_a_killed_daemon_is_taken_over_too(env):
    """SIGKILL: the nodes were mirrored as they were made, so the next
    daemon takes the mount over as after a planned exit; the watcher waits
    for it rather than detaching the mount; a request the dead daemon held
    comes again (FUSE_NOTIFY_RESEND)."""
    tb, mnt, tmp, daemons = env
    d1 = Supervised(tb, mnt, tmp)
    daemons.append(d1)
    before = mount_id(mnt)
    holder = Holder(device_dir(mnt))
    first = holder.check()
    d1.proc.kill()
    d1.proc.wait(30)
    time.sleep(0.3)
    assert mount_id(mnt) == before  # kept for the successor
    d2 = Supervised(tb, mnt, tmp, d1.store)
    daemons.append(d2)
    assert "took over the mount" in d2.output(), d2.output()
    assert "the last daemon died serving the mount" in d2.output(), d2.output()
    assert mount_id(mnt) == before
    got = holder.check()
    for key in ("vendor", "power", "listing", "cwd"):
        assert got[key] == first[key], (key, got[key], first[key])
    assert got["errors"] == [], got
    holder.close()


# Holds a file open and, for each line it is sent, reads it again from the
# start (its errno's name on an error); "close" closes it.
OPENER = r"""
import errno, os, sys
f = open(sys.argv[1])
for line in sys.stdin:
    if line.strip() == "close":
        f.close()
        print("closed", flush=True)
        continue
    try:
        f.seek(0)
        print(repr(f.read()), flush=True)
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)), flush=True)
"""


def opener(path):
    p = subprocess.Popen(["python3", "-c", OPENER, path], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)

    def ask(line="read"):
        p.stdin.write(line + "\n")
        p.stdin.flush()
        return p.stdout.readline().strip()
    return p, ask


def kernel_has(symbol):
    """Whether the running kernel has @symbol (fuse's, built in or loaded)."""
    try:
        with open("/proc/kallsyms") as f:
            return any(line.split()[2:3] == [symbol] for line in f)
    except OSError:
        return False


def closing_counts(output):
    """The closing log line's count of files opened for passthrough."""
    m = re.search(r"opened for passthrough: (\d+)", output)
    return int(m.group(1)) if m else None


@pytest.mark.parametrize("how", ["planned", "killed", "next-without-passthrough"])
def test_passthrough_is_kept_across_a_restart(env, how):
    """The unit's configuration passes reads through (issue 31): the next
    daemon knows from the state that the connection negotiated it, takes
    over the backing files of files open across the restart (the kernel
    wants every open of such an inode to name the same one, any other open
    fails with EIO), puts them back at those files' release, and opens new
    files with passthrough of its own."""
    tb, mnt, tmp, daemons = env
    if not kernel_has("fuse_passthrough_open"):
        pytest.skip("the kernel has no FUSE passthrough (Linux >= 6.9)")
    d1 = Supervised(tb, mnt, tmp)
    daemons.append(d1)
    # a sysfs attribute of the device's own, passed through
    path = os.path.join(device_dir(mnt), "urbnum")
    with open(path) as f:
        value = f.read()
    # what the unit runs passes reads through (said once INIT is answered)
    assert "FUSE passthrough" in d1.output(), d1.output()
    p, ask = opener(path)
    assert ask() == repr(value)
    if how == "killed":
        d1.proc.kill()
        d1.proc.wait(30)
    else:
        d1.proc.send_signal(signal.SIGUSR2)
        assert d1.proc.wait(30) == 75, d1.output()
        assert closing_counts(d1.output()) >= 2, d1.output()
    extra = ("--no-passthrough",) if how == "next-without-passthrough" else ()
    d2 = Supervised(tb, mnt, tmp, d1.store, extra=extra)
    daemons.append(d2)
    out = d2.output()
    want = "not wanted" if extra else "on"
    assert re.search(rf"passthrough {want}, [1-9]\d* backing files of open files taken over",
                     out), out
    # the file open across the restart reads on; a new open of its inode
    # shares its backing (EIO if the next daemon registered another)
    assert ask() == repr(value)
    with open(path) as f:
        assert f.read() == value
    # its release puts the backing back: the inode opens anew after
    assert ask("close") == "closed"
    p.stdin.close()
    p.wait(30)
    for _ in range(2):
        with open(path) as f:
            assert f.read() == value
    d2.proc.send_signal(signal.SIGTERM)
    assert d2.proc.wait(30) == 0, d2.output()
    if extra:
        assert closing_counts(d2.output()) is None, d2.output()
    else:
        # the new open sharing the old backing, and the two after it
        assert closing_counts(d2.output()) >= 3, d2.output()


def serving_a_reader(env):
    """A daemon serving a reader: the daemon, its mount's ID, the reader."""
    tb, mnt, tmp, daemons = env
    d1 = Supervised(tb, mnt, tmp)
    daemons.append(d1)
    before = mount_id(mnt)
    holder = Holder(device_dir(mnt))
    holder.check()
    return d1, before, holder


def test_a_state_that_cannot_be_taken_over_ends_the_old_connection(env):
    """A state that is not one (or overflowed): the next daemon has the
    supervisor drop the stored connection, so that its readers get an error
    rather than waiting, and mounts anew."""
    tb, mnt, tmp, daemons = env
    d1, before, holder = serving_a_reader(env)
    watcher = watcher_of(d1.proc.pid)
    # the node mirror said to have overflowed
    import mmap
    m = mmap.mmap(d1.store["state"], 4096)
    off = m.find(b"driverfsd-state")
    assert off == 0
    d1.proc.kill()
    d1.proc.wait(30)
    # struct fs_handover_header: magic 16, version 4, state 4, epoch 8,
    # stored 4, init_len 4, init 256, names_used 4, high 4, ok 4
    m[16 + 4 + 4 + 8 + 4 + 4 + 256 + 8:16 + 4 + 4 + 8 + 4 + 4 + 256 + 12] = b"\0\0\0\0"
    m.close()
    d2 = Supervised(tb, mnt, tmp, d1.store)
    daemons.append(d2)
    assert "mounting anew" in d2.output(), d2.output()
    assert "FDSTOREREMOVE=1" in d2.lines, d2.lines
    assert mount_id(mnt) not in (None, before)
    got = holder.check()
    assert got["power"] in ("ENOTCONN", "ECONNABORTED", "ENODEV"), got
    holder.close()
    # the old mount's watcher ends after its bound: the next daemon
    # announced itself as it started, and withdrew when it did not take
    # the mount over (a watcher waiting for it while it lives would stay
    # 10 minutes)
    deadline = time.monotonic() + 90
    while watcher_lives(watcher) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not watcher_lives(watcher)


def test_a_mount_nobody_takes_over_ends_after_the_bound(env):
    """A killed daemon's connection kept by the supervisor with no
    successor coming: its watcher waits 30 s for one, then aborts the
    connection and detaches the mount, so that readers get an error rather
    than wait for ever; a daemon started later with the stale descriptors
    mounts anew."""
    tb, mnt, tmp, daemons = env
    d1, before, holder = serving_a_reader(env)
    d1.proc.kill()
    d1.proc.wait(30)
    t0 = time.monotonic()
    got = holder.check(timeout=60)  # waits for the bound, not for ever
    waited = time.monotonic() - t0
    # a file opened in the device's directory (values already read stay in
    # the pages the reader's open files keep)
    assert got["cwd"] in ("ECONNABORTED", "ENOTCONN"), got
    assert 20 < waited < 60, waited
    deadline = time.monotonic() + 10
    while mount_id(mnt) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mount_id(mnt) is None  # detached
    holder.close()
    d2 = Supervised(tb, mnt, tmp, d1.store)
    daemons.append(d2)
    assert "its connection was aborted" in d2.output(), d2.output()
    assert "FDSTOREREMOVE=1" in d2.lines, d2.lines
    assert mount_id(mnt) is not None
    assert os.path.isdir(os.path.join(mnt, "root"))


def handover(tb, mnt, tmp, daemons):
    """SIGUSR2 to the last daemon, the next one started with its store."""
    last = daemons[-1]
    last.proc.send_signal(signal.SIGUSR2)
    assert last.proc.wait(30) == 75, last.output()
    nxt = Supervised(tb, mnt, tmp, last.store)
    last.close()
    daemons.append(nxt)
    assert "took over the mount" in nxt.output(), nxt.output()
    return nxt


def test_a_next_daemon_slower_than_the_bound_is_waited_for(env):
    """The last daemon's watcher waits 30 s for a successor, then aborts the
    connection; a successor that started but enumerates longer (a large
    machine: 50 s at 10^5 devices under umockdev) announces itself first
    (its pid in the state) and is waited for while it lives: the mount is
    taken over, and a listing asked for meanwhile (which waits for the
    model: the value reads of the holder are answered before it, early.h)
    is answered, not given ECONNABORTED. The successor's enumeration is
    held here by a preload (tests/helpers/slowread.c) until the bound has
    passed."""
    tb, mnt, tmp, daemons = env
    d1, before, holder = serving_a_reader(env)
    first = holder.check()
    dev = device_dir(mnt)
    d1.proc.send_signal(signal.SIGUSR2)
    assert d1.proc.wait(30) == 75, d1.output()
    go, stop = os.path.join(tmp, "slow-go"), os.path.join(tmp, "slow-stop")
    open(go, "w").close()
    lister = subprocess.Popen(["python3", "-c", ATTEMPT + "import os, sys\n"
                               "print(attempt(lambda: sorted(os.listdir(sys.argv[1]))))",
                               dev], stdout=subprocess.PIPE, text=True)
    # the USB bus's uevent: read by the enumeration, held until stop exists
    timer = threading.Timer(40, lambda: open(stop, "w").close())
    timer.start()
    try:
        d2 = Supervised(tb, mnt, tmp, d1.store, env={
            "LD_PRELOAD": os.environ["DRIVERFS_SLOWREAD"],
            "DRIVERFS_SLOW_READS": "usb1/uevent",
            "DRIVERFS_SLOW_GO": go, "DRIVERFS_SLOW_STOP": stop})
    finally:
        timer.cancel()
    daemons.append(d2)
    assert os.path.exists(stop), "the next daemon was not held past the bound"
    assert "took over the mount" in d2.output(), d2.output()
    assert mount_id(mnt) == before
    got = holder.check()
    for key in ("vendor", "power", "listing", "cwd"):
        assert got[key] == first[key], (key, got[key], first[key])
    assert got["errors"] == [], got
    listing = lister.communicate(timeout=60)[0]
    assert listing == str(first["listing"]) + "\n", (listing, first["listing"])
    holder.close()


# Opens and reads a file in a process of its own: its text, or the errno's
# name.
READ_ONCE = ATTEMPT + r"""
import sys
print(attempt(lambda: open(sys.argv[1]).read()), end="", flush=True)
"""


def test_reads_are_answered_before_the_next_daemon_has_its_model(env):
    """The next daemon answers from the state as soon as it holds the
    connection, while it enumerates (issue 31 item 3): a value the last
    daemon read through passthrough is opened and read, fresh from sysfs,
    and a value it kept is opened and read from the pages the kernel
    keeps, with the enumeration still held; a request the state cannot
    answer (a listing) is kept and answered once the model is there; the
    daemon logs the requests it answered early."""
    tb, mnt, tmp, daemons = env
    if not kernel_has("fuse_passthrough_open"):
        pytest.skip("the kernel has no FUSE passthrough (Linux >= 6.9)")
    d1, before, holder = serving_a_reader(env)
    dev = device_dir(mnt)
    # a sysfs attribute of the device's own, passed through
    value = os.path.join(dev, "urbnum")
    with open(value) as f:
        old = f.read()
    with open(own(dev, "devpath")) as f:
        syspath = "/sys" + f.read().strip()
    # a value the daemon keeps, read here first: the daemon's READ drops
    # the atime the kernel keeps, so the open's fstat after the restart
    # asks (what only the attributes the last daemon told answer)
    vendor = os.path.join(dev, "idProduct")
    with open(vendor) as f:
        vendor_text = f.read()
    d1.proc.send_signal(signal.SIGUSR2)
    assert d1.proc.wait(30) == 75, d1.output()
    # meanwhile the value changes: read from sysfs, not from the mirror
    tb.set_attribute(syspath, "urbnum", "4242\n")
    go, stop = os.path.join(tmp, "slow-go"), os.path.join(tmp, "slow-stop")
    open(go, "w").close()
    started = []
    starter = threading.Thread(target=lambda: started.append(Supervised(
        tb, mnt, tmp, d1.store, env={
            "LD_PRELOAD": os.environ["DRIVERFS_SLOWREAD"],
            "DRIVERFS_SLOW_READS": "usb1/uevent",
            "DRIVERFS_SLOW_GO": go, "DRIVERFS_SLOW_STOP": stop}, ready=200)), daemon=True)
    # the enumeration held until this test lets it go, 120 s at most
    timer = threading.Timer(120, lambda: open(stop, "w").close())
    timer.start()
    try:
        starter.start()
        got = subprocess.run(["python3", "-c", READ_ONCE, value], capture_output=True,
                             text=True, timeout=150).stdout
        # a value the daemon keeps, whose pages the kernel has
        kept = subprocess.run(["python3", "-c", READ_ONCE, vendor], capture_output=True,
                              text=True, timeout=150).stdout
        held = not os.path.exists(stop)
        lister = subprocess.Popen(["python3", "-c", ATTEMPT + "import os, sys\n"
                                   "print(attempt(lambda: sorted(os.listdir(sys.argv[1]))))",
                                   dev], stdout=subprocess.PIPE, text=True)
    finally:
        open(stop, "w").close()
        timer.cancel()
    starter.join(60)
    assert started, "the next daemon did not serve"
    d2 = started[0]
    daemons.append(d2)
    assert got != old and got == "4242\n", (got, old)
    assert kept == vendor_text, (kept, vendor_text)
    assert held, "the open waited for the enumeration"
    m = re.search(r"before the model, (\d+) requests answered", d2.output())
    assert m and int(m.group(1)) >= 1, d2.output()
    listing = lister.communicate(timeout=30)[0]
    assert "urbnum" in listing and "idVendor" in listing, listing
    assert mount_id(mnt) == before
    got = holder.check()
    assert got["errors"] == [], got
    assert got["vendor"] == open(os.path.join(dev, "idVendor")).read()
    holder.close()


def test_devices_plugged_while_no_daemon_serves_are_there_after(env):
    from hotplug_util import KBD, blocks, devpath, under
    tb, mnt, tmp, daemons = env
    kbd = [b for b in blocks(TESTBED) if under(b, KBD)]
    tb2 = UMockdev.Testbed.new()  # the machine without the keyboard
    for b in blocks(TESTBED):
        if not under(b, KBD):
            assert tb2.add_from_string(b + "\n")
    daemons.append(Supervised(tb2, mnt, tmp))
    holder = Holder(device_dir(mnt))
    holder.check()
    last = daemons[-1]
    last.proc.send_signal(signal.SIGUSR2)
    assert last.proc.wait(30) == 75
    # plugged in between the two daemons: no one hears the uevents
    for b in kbd:
        assert tb2.add_from_string(b + "\n")
    d2 = Supervised(tb2, mnt, tmp, last.store)
    daemons.append(d2)
    found = [top for top, dirs, files in os.walk(os.path.join(mnt, "root"))
             if has_devpath(files) and open(own(top, "devpath")).read().strip()
             == devpath(kbd[0])]
    assert found, "the keyboard plugged in meanwhile is in the tree"
    got = holder.check()
    assert got["errors"] == [], got
    holder.close()


def test_what_changed_while_no_daemon_served_is_seen_after(env):
    """What the kernel cached from the last daemon (names, attributes and
    pages for an hour, listings) is dropped by the next one: a value that
    changed between the two is read anew, not from the pages the kernel
    kept; a device unplugged meanwhile is gone from paths and listings as
    after a removal."""
    from hotplug_util import remove_devices
    tb, mnt, tmp, daemons = env
    text = ("[Driver]\nName=hub-watch\nBus=usb\nPriority=100\n[Match]\nidVendor=1a40\n"
            "[Hooks]\nSuspend=/bin/true\nResume=/bin/true\n")
    conf = drivers_config(tmp, {"10-hub.conf": text})
    driver = os.path.join(tmp, "drivers.d", "10-hub.conf")
    daemons.append(Supervised(tb, mnt, tmp, extra=["-c", conf]))
    # a SCSI host of the SATA controller with its class device (no device
    # node: umockdev's remove_device() of one with a node leaves its
    # emulation thread a closed socket, which later aborts the test)
    host = "/devices/pci0000:00/0000:00:17.0/ata6/host5"
    dirs = {open(own(top, "devpath")).read().strip(): top
            for top, _, files in os.walk(os.path.join(mnt, "root")) if has_devpath(files)}
    host_dir, parent = dirs[host], os.path.dirname(dirs[host])
    os.stat(os.path.join(host_dir, "uevent"))  # cached: names, attributes
    assert "host5" in os.listdir(parent)
    priority = os.path.join(mnt, "bus", "usb", "drivers", "hub-watch", "priority")
    with open(priority) as f:  # cached: its attributes and page
        assert f.read() == "100\n"
    assert os.stat(priority).st_size == 4
    last = daemons[-1]
    last.proc.send_signal(signal.SIGUSR2)
    assert last.proc.wait(30) == 75
    # meanwhile, with no daemon to see it: a value changes, a device goes
    with open(driver, "w") as f:
        f.write(text.replace("Priority=100", "Priority=50"))
    remove_devices(tb, [host + "/scsi_host/host5", host])
    d2 = Supervised(tb, mnt, tmp, last.store, extra=["-c", conf])
    daemons.append(d2)
    assert re.search(r"[1-9][0-9]* nodes the kernel holds, taken over on demand",
                     d2.output()), d2.output()
    # the invalidations go on the notifier's thread, as the daemon serves
    deadline = time.monotonic() + 10
    while os.stat(priority).st_size == 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.stat(priority).st_size == 3
    with open(priority) as f:
        assert f.read() == "50\n"
    assert not os.path.exists(host_dir)
    assert not os.path.exists(os.path.join(host_dir, "uevent"))
    assert "host5" not in os.listdir(parent)
    assert os.path.isdir(parent)  # what is still there answers


# Holds a file open for writing; each line "w VALUE" writes VALUE through
# it and answers "ok" or its errno's name.
WRITER = r"""
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
for line in sys.stdin:
    try:
        os.write(fd, (line.split(" ", 1)[1].strip() + "\n").encode())
        print("ok", flush=True)
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)), flush=True)
"""


def records_of(paths):
    """The records of the devices at @paths in the USB tree testbed, as
    umockdev's add_from_string() takes them."""
    with open(TESTBED) as f:
        blocks = f.read().split("\n\n")
    return "\n\n".join(b for b in blocks if b.split("\n", 1)[0][3:] in paths) + "\n\n"


def test_an_old_handle_never_acts_on_a_device_plugged_at_its_path(env):
    """After a handover nodes are found again by their parent and name, and
    a device's by its identity too (issue 31): a device unplugged while no
    daemon served, and another plugged at the same path, is not the one a
    handle opened before the restart names. A write through that handle
    fails (ESTALE) and never reaches the new device; the path, looked up
    anew, is the new device's."""
    from hotplug_util import remove_devices
    tb, mnt, tmp, daemons = env
    d1 = Supervised(tb, mnt, tmp)
    daemons.append(d1)
    host = "/devices/pci0000:00/0000:00:17.0/ata6/host5"
    chost = host + "/scsi_host/host5"
    dirs = {open(own(top, "devpath")).read().strip(): top
            for top, _, files in os.walk(os.path.join(mnt, "root")) if has_devpath(files)}
    attr = os.path.join(dirs[chost], "eh_deadline")
    sys_attr = tb.get_sys_dir() + chost + "/eh_deadline"
    p = subprocess.Popen(["python3", "-c", WRITER, attr], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)

    def write(value):
        p.stdin.write(f"w {value}\n")
        p.stdin.flush()
        return p.stdout.readline().strip()
    assert write(5) == "ok"
    assert open(sys_attr).read() == "5\n"
    d1.proc.send_signal(signal.SIGUSR2)
    assert d1.proc.wait(30) == 75, d1.output()
    # meanwhile the device goes and another comes at its path
    remove_devices(tb, [chost, host])
    assert tb.add_from_string(records_of({host, chost}))
    assert open(sys_attr).read() == "off\n"
    d2 = Supervised(tb, mnt, tmp, d1.store)
    daemons.append(d2)
    assert re.search(r"[1-9][0-9]* nodes the kernel holds, taken over on demand",
                     d2.output()), d2.output()
    got = write(7)
    assert got in ("ESTALE", "ENODEV"), got
    assert open(sys_attr).read() == "off\n"  # the new device untouched
    p.stdin.close()
    p.wait(30)
    # the path is the new device's
    with open(attr) as f:
        assert f.read() == "off\n"
    with open(attr, "w") as f:
        f.write("9\n")
    assert open(sys_attr).read() == "9\n"


# A process of its own that holds, idle, an open file and a directory as
# its working directory; each line it is sent makes it answer what they
# give now: the file's value and inode number, the directory's listing and
# inode number (errno names for errors).
IDLE = r"""
import errno, json, os, sys
f = open(sys.argv[1])
os.chdir(sys.argv[2])
for line in sys.stdin:
    print(json.dumps({"value": attempt(lambda: (f.seek(0), f.read())[1]),
                      "ino": attempt(lambda: os.fstat(f.fileno()).st_ino),
                      "listing": attempt(lambda: sorted(os.listdir("."))),
                      "cwd_ino": attempt(lambda: os.stat(".").st_ino)}), flush=True)
"""


def idle(path, cwd):
    import json
    p = subprocess.Popen(["python3", "-c", ATTEMPT + IDLE, path, cwd], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)

    def ask():
        p.stdin.write("x\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())
    return p, ask


def taken_over(d):
    """The nodes the kernel holds that the daemon @d took over."""
    m = re.search(r"(\d+) nodes the kernel holds, taken over on demand", d.output())
    assert m, d.output()
    return int(m.group(1))


def pending(mnt):
    """The nodes taken over and not made yet (the metric)."""
    with open(os.path.join(mnt, "metrics")) as f:
        m = re.search(r"^driverfsd_fuse_nodes_pending (\S+)$", f.read(), re.M)
    assert m
    return float(m.group(1))


def a_class_driver_link(mnt):
    """A link of a class's drivers/ (its entry is kept by the kernel for no
    time: each use of the path looks it up again)."""
    for cls in sorted(os.listdir(os.path.join(mnt, "class"))):
        top = os.path.join(mnt, "class", cls, "drivers")
        for name in sorted(os.listdir(top)) if os.path.isdir(top) else ():
            if os.path.islink(os.path.join(top, name)):
                return os.path.join(top, name)
    raise AssertionError("no class driver link in the mount")


def test_nodes_the_kernel_holds_are_made_when_used(env):
    """The next daemon makes a node the kernel holds only when a request
    names it (issue 31): an open file and a working directory untouched
    since the restart work as before, under the same inode numbers; a
    lookup of a name whose node was taken over gives that node, the same
    inode number, not a second node (a class's driver link, whose entry the
    kernel keeps for no time, is looked up at each use)."""
    tb, mnt, tmp, daemons = env
    d1 = Supervised(tb, mnt, tmp)
    daemons.append(d1)
    dev = device_dir(mnt)
    p, ask = idle(os.path.join(dev, "idVendor"), os.path.dirname(dev))
    first = ask()
    assert first["value"].endswith("\n") and isinstance(first["listing"], list), first
    link = a_class_driver_link(mnt)
    link_ino, target = os.lstat(link).st_ino, os.readlink(link)
    d2 = handover(tb, mnt, tmp, daemons)
    held = taken_over(d2)
    assert held > 0
    # once what the kernel cached is dropped (on the notifier's thread, as
    # the daemon serves) the reader's requests reach the daemon, which
    # makes their nodes then
    deadline = time.monotonic() + 10
    while True:
        got = ask()
        assert got == first, (got, first)
        if pending(mnt) < held or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert pending(mnt) < held
    assert os.lstat(link).st_ino == link_ino
    assert os.readlink(link) == target
    p.kill()
    p.wait()


def test_nodes_taken_over_and_forgotten_unused_are_freed(env):
    """A node taken over that the kernel forgets before any request names
    it (its caches dropped) is freed, in the state too: the next handover
    carries fewer; what a reader still holds is kept and works."""
    tb, mnt, tmp, daemons = env
    daemons.append(Supervised(tb, mnt, tmp))
    for top, dirs, files in os.walk(mnt):
        for name in files:
            os.lstat(os.path.join(top, name))
    dev = device_dir(mnt)
    p, ask = idle(os.path.join(dev, "idVendor"), dev)
    first = ask()
    d2 = handover(tb, mnt, tmp, daemons)
    held = taken_over(d2)
    assert held > 100
    # the kernel's caches: unused dentries and inodes go, FORGET each
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")
    deadline = time.monotonic() + 30
    while pending(mnt) > held / 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    d3 = handover(tb, mnt, tmp, daemons)
    assert 0 < taken_over(d3) < held / 2, (taken_over(d3), held)
    assert ask() == first
    p.kill()
    p.wait()


def test_a_device_gone_while_no_daemon_served_is_gone_for_its_holders(env):
    """A device unplugged while no daemon served: a file of it held open
    and its directory held as a working directory fail (the node, made on
    demand, is not found: ESTALE, or as sysfs says ENODEV); its path and
    listings no longer have it."""
    from hotplug_util import remove_devices
    tb, mnt, tmp, daemons = env
    daemons.append(Supervised(tb, mnt, tmp))
    host = "/devices/pci0000:00/0000:00:17.0/ata6/host5"
    dirs = {open(own(top, "devpath")).read().strip(): top
            for top, _, files in os.walk(os.path.join(mnt, "root")) if has_devpath(files)}
    host_dir, parent = dirs[host], os.path.dirname(dirs[host])
    p, ask = idle(os.path.join(host_dir, "uevent"), host_dir)
    first = ask()
    assert isinstance(first["value"], str) and isinstance(first["listing"], list), first
    last = daemons[-1]
    last.proc.send_signal(signal.SIGUSR2)
    assert last.proc.wait(30) == 75
    remove_devices(tb, [host + "/scsi_host/host5", host])
    daemons.append(Supervised(tb, mnt, tmp, last.store))
    # what the kernel cached is dropped on the notifier's thread, as the
    # daemon serves
    deadline = time.monotonic() + 10
    got = ask()
    while isinstance(got["value"], str) and got["value"] == first["value"] \
            and time.monotonic() < deadline:
        time.sleep(0.05)
        got = ask()
    assert got["value"] in ("ESTALE", "ENODEV", "ENOENT"), got
    assert got["listing"] in ("ESTALE", "ENODEV", "ENOENT"), got
    assert not os.path.exists(os.path.join(host_dir, "uevent"))
    assert not os.path.exists(host_dir)
    assert "host5" not in os.listdir(parent)
    p.kill()
    p.wait()


def test_a_soak_of_restarts_under_readers(env):
    """Restarts in a row under a reader: none fails or hangs, the mount is
    the same one throughout (DRIVERFS_SOAK restarts, 100 by default)."""
    tb, mnt, tmp, daemons = env
    daemons.append(Supervised(tb, mnt, tmp))
    before = mount_id(mnt)
    holder = Holder(device_dir(mnt))
    first = holder.check()
    rounds = int(os.environ.get("DRIVERFS_SOAK", "100"))
    pauses = []
    for i in range(rounds):
        t0 = time.monotonic()
        handover(tb, mnt, tmp, daemons)
        pauses.append(time.monotonic() - t0)
        if i % 10 == 9:
            got = holder.check()
            assert got["vendor"] == first["vendor"] and got["errors"] == [], (i, got)
    got = holder.check()
    assert got["errors"] == [] and got["vendor"] == first["vendor"], got
    assert mount_id(mnt) == before
    pauses.sort()
    print(f"soak: {rounds} restarts; from SIGUSR2 to the next READY: median "
          f"{pauses[len(pauses) // 2]:.3f} s, longest {pauses[-1]:.3f} s; the longest read "
          f"{got['longest']:.3f} s over {got['reads']} reads")
    holder.close()


def test_a_suspend_under_way_finishes_and_the_next_daemon_resumes_it(env):
    """SIGUSR2 while a suspend runs (a hook that takes a second): the
    suspend finishes and its writer gets its answer, the daemon leaves, and
    the next one resumes what the transition record lists, as after any
    restart."""
    tb, mnt, tmp, daemons = env
    conf = drivers_config(tmp, {"10-slow.conf": (
        "[Driver]\nName=slow-hub\nBus=usb\nPriority=100\n[Match]\nidVendor=1a40\n"
        "[Hooks]\nSuspend=/bin/sleep 1\nResume=/bin/true\nTimeout=10\n")})
    extra = ["-c", conf]
    daemons.append(Supervised(tb, mnt, tmp, extra=extra))
    hub = os.path.join(mnt, "root", ROOT_HUB2)
    assert os.readlink(os.path.join(hub, "driver")).endswith("drivers/slow-hub")
    writer = subprocess.Popen(["sh", "-c", f"echo suspend > '{hub}/power'; echo $?"],
                              stdout=subprocess.PIPE, text=True)
    time.sleep(0.4)  # the hook runs
    last = daemons[-1]
    last.proc.send_signal(signal.SIGUSR2)
    assert last.proc.wait(30) == 75, last.output()
    out, _ = writer.communicate(timeout=30)
    assert out.strip() == "0", out  # the suspend finished, the writer was answered
    d2 = Supervised(tb, mnt, tmp, last.store, extra=extra)
    last.close()
    daemons.append(d2)
    assert "took over the mount" in d2.output()
    # the hub's subtree, which the suspend took
    assert re.search(r"resumed \d+ devices? an earlier run left suspended", d2.output()), \
        d2.output()
    with open(os.path.join(hub, "power")) as f:
        assert f.read() == "on\n"


class Systemd:
    """What driverfsd asks systemd on SIGTERM, on a private system bus
    (test_logind's): the unit of a pid, and the job queued for it."""

    UNIT = "/org/freedesktop/systemd1/unit/driverfsd_2eservice"
    JOB = "/org/freedesktop/systemd1/job/7"

    def __init__(self, job_type):
        try:
            import dbus
            import dbusmock
        except ImportError:
            pytest.skip("python3-dbusmock is not installed")
        from test_logind import SystemBus
        self.bus = SystemBus()
        self.mock = dbusmock.DBusTestCase.spawn_server(
            "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
            "org.freedesktop.systemd1.Manager", system_bus=True, stdout=subprocess.DEVNULL)
        conn = dbus.bus.BusConnection(self.bus.address)
        obj = conn.get_object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
        mock = dbus.Interface(obj, dbusmock.MOCK_IFACE)
        mock.AddMethod("", "GetUnitByPID", "u", "o", f"ret = dbus.ObjectPath('{self.UNIT}')")
        mock.AddObject(self.UNIT, "org.freedesktop.systemd1.Unit",
                       {"Job": dbus.Struct((dbus.UInt32(7), dbus.ObjectPath(self.JOB)),
                                           signature="uo")}, [])
        mock.AddObject(self.JOB, "org.freedesktop.systemd1.Job", {"JobType": job_type}, [])
        conn.close()

    def stop(self):
        self.mock.terminate()
        self.mock.wait(30)
        self.bus.stop()


@pytest.mark.parametrize("job", ["restart", "stop"])
def test_systemctl_restart_hands_over_and_stop_unmounts(env, job):
    """SIGTERM with a restart job queued for the unit (`systemctl restart`)
    hands the mount over as SIGUSR2 does; with a stop job it unmounts."""
    systemd = Systemd(job)
    try:
        tb, mnt, tmp, daemons = env
        d1 = Supervised(tb, mnt, tmp)
        daemons.append(d1)
        before = mount_id(mnt)
        d1.proc.send_signal(signal.SIGTERM)
        status = d1.proc.wait(30)
        if job == "stop":
            assert status == 0, d1.output()
            assert mount_id(mnt) is None
            return
        assert status == 75, d1.output()
        assert "job for this daemon: restart" in d1.output()
        assert mount_id(mnt) == before
        d2 = Supervised(tb, mnt, tmp, d1.store)
        daemons.append(d2)
        assert "took over the mount" in d2.output()
        assert mount_id(mnt) == before
    finally:
        systemd.stop()


def io_uring_offered():
    try:
        with open("/sys/module/fuse/parameters/enable_uring") as f:
            return f.read().strip() == "Y"
    except OSError:
        return False


def served_over_io_uring(output):
    """The requests a daemon's closing line says it served over io_uring."""
    counts = re.findall(r"over io_uring: (\d+)", output)
    return int(counts[-1]) if counts else 0


@pytest.mark.parametrize("how", ["planned", "killed"])
def test_the_next_daemon_serves_over_io_uring_too(env, how):
    """Issue 31 item 2, --handover-io-uring: the kernel sends a connection
    whose io_uring rings were ready nothing but FORGETs and INTERRUPTs over
    /dev/fuse, so the next daemon (without the option: the state says it)
    registers ring entries of its own on it and serves over io_uring,
    after a planned exit (the reader reading in a loop across it) and
    after a SIGKILL (with nothing in flight: a request a killed daemon held
    in its ring entry is never sent again, docs/design.md §10.1). Without
    the fix the first daemon serves /dev/fuse only; with io_uring on and
    no registration by the next one, the reader hangs."""
    if not io_uring_offered():
        pytest.skip("the kernel offers no FUSE over io_uring (fuse.enable_uring)")
    tb, mnt, tmp, daemons = env
    d1 = Supervised(tb, mnt, tmp, extra=("--handover-io-uring",))
    daemons.append(d1)
    before = mount_id(mnt)
    holder = Holder(device_dir(mnt), quiet=how == "killed")
    first = holder.check()
    if "the kernel offers no FUSE over io_uring" in d1.output():
        pytest.skip("fuse.enable_uring was turned off meanwhile")
    assert "serving FUSE requests over io_uring" in d1.output(), d1.output()
    if how == "planned":
        time.sleep(0.2)
        d1.proc.send_signal(signal.SIGUSR2)
        assert d1.proc.wait(30) == 75, d1.output()
        assert served_over_io_uring(d1.output()) > 0, d1.output()
    else:
        d1.proc.kill()
        d1.proc.wait(30)
    assert mount_id(mnt) == before
    d2 = Supervised(tb, mnt, tmp, d1.store)
    daemons.append(d2)
    assert "took over the mount" in d2.output(), d2.output()
    time.sleep(0.3)
    after = holder.check()
    for key in ("vendor", "power", "listing", "cwd"):
        assert after[key] == first[key], (key, after[key], first[key])
    # a read the kernel gave a leaving ring entry as it ended fails with
    # ECANCELED (Linux 6.18: fuse_uring_send_in_task() on a cancelled task
    # work), the one error the option admits; none hangs
    assert set(after["errors"]) <= {"ECANCELED"}, after
    if how == "planned":
        assert after["reads"] > first["reads"], after
    holder.close()
    assert "over io_uring on the connection taken over" in d2.output(), d2.output()
    d2.proc.send_signal(signal.SIGTERM)
    assert d2.proc.wait(30) == 0, d2.output()
    # more than the statfs each CPU's queue was woken with
    assert served_over_io_uring(d2.output()) > os.cpu_count(), d2.output()
    assert mount_id(mnt) is None or wait_unmounted(mnt)


def wait_unmounted(mnt):
    deadline = time.monotonic() + 10
    while mount_id(mnt) and time.monotonic() < deadline:
        time.sleep(0.1)
    return mount_id(mnt) is None
