# SPDX-License-Identifier: LGPL-2.1-or-later
"""Attribute files as sysfs has them (issue 5): partial reads, lseek and
pread at any offset, whole-value stores up to 4096 bytes, ENOENT in every
kind of directory, and concurrent readers while a value changes — on the
small PCI testbed, through the mounted filesystem."""
import errno
import os
import re
import subprocess
import threading

import pytest

# the same testbed and daemon fixture (a daemon of this module's own)
from test_small_pci import PLACES, d, read  # noqa: F401 - d is a fixture

XHCI = PLACES["0000:00:14.0"]
BRIDGE = PLACES["0000:00:1c.0"]
NVME = PLACES["0000:01:00.0"]
POWER_VALUES = ("on\n", "suspended\n")
# suspends and resumes raced by readers: the old design's torn reads came
# out in every run of this many (see test_power_reads_are_whole_...)
TRANSITIONS = int(os.environ.get("DRIVERFSD_TRANSITIONS", "400"))


def test_partial_reads_assemble_the_value(d):
    for name, want in (("vendor", b"0x8086\n"), ("power", b"on\n")):
        fd = os.open(d.path("root", XHCI, name), os.O_RDONLY)
        try:
            got = b""
            while True:
                chunk = os.read(fd, 1)
                if not chunk:
                    break
                got += chunk
        finally:
            os.close(fd)
        assert got == want, f"{name} read byte by byte: expected {want!r}, got {got!r}"


def test_pread_and_lseek_at_every_offset(d):
    want = b"0x8086\n"
    fd = os.open(d.path("root", XHCI, "vendor"), os.O_RDONLY)
    try:
        assert os.fstat(fd).st_size == len(want), "st_size is the value's length"
        assert os.pread(fd, 4096, 0) == want
        assert os.pread(fd, 4096, 3) == want[3:], "pread from the middle"
        assert os.pread(fd, 2, 3) == want[3:5], "a short pread from the middle"
        assert os.pread(fd, 4096, len(want)) == b"", "pread at the end"
        assert os.pread(fd, 4096, 100000) == b"", "pread beyond the end"
        assert os.lseek(fd, 0, os.SEEK_END) == len(want)
        assert os.read(fd, 10) == b""
        assert os.lseek(fd, 2, os.SEEK_SET) == 2
        assert os.read(fd, 10) == want[2:]
        assert os.lseek(fd, 1000, os.SEEK_SET) == 1000
        assert os.read(fd, 10) == b"", "read beyond the end"
    finally:
        os.close(fd)


def test_store_up_to_4096_bytes_then_efbig(d):
    power = d.path("root", XHCI, "power")
    # 4096 bytes reach the store whole: a bad value, refused as such
    fd = os.open(power, os.O_WRONLY)
    try:
        with pytest.raises(OSError) as e:
            os.write(fd, b"suspend" + b" " * (4096 - 7))
        assert e.value.errno == errno.EINVAL, "a 4096-byte bad value is EINVAL"
        with pytest.raises(OSError) as e:
            os.write(fd, b"suspend" + b" " * (4097 - 7))
        assert e.value.errno == errno.EFBIG, "a 4097-byte value is EFBIG"
        # one value per write, from offset 0 only
        with pytest.raises(OSError) as e:
            os.pwrite(fd, b"suspend\n", 5)
        assert e.value.errno == errno.EINVAL, "a write at an offset is EINVAL"
    finally:
        os.close(fd)
    assert read(power) == "on\n", "refused writes changed nothing"
    assert read(d.path("root", XHCI, "power_error")) == ""


def test_missing_names_are_enoent_everywhere(d):
    for parts in (("root", XHCI, "nosuchfile"),
                  ("root", XHCI, "nosuchdir", "vendor"),
                  ("root", XHCI, "pm", "nosuchfile"),
                  ("bus", "pci", "devices", "0000:00:99.0"),
                  ("bus", "pci", "drivers", "nvme", "0000:00:14.0"),  # xhci's, not nvme's
                  ("bus", "pci", "drivers", "nosuchdriver"),
                  ("bus", "nosuchbus"),
                  ("class", "nosuchclass")):
        with pytest.raises(OSError) as e:
            os.stat(d.path(*parts))
        assert e.value.errno == errno.ENOENT, "/".join(parts)
    # while the same names resolve where they are listed
    assert os.path.samefile(d.path("bus", "pci", "drivers", "xhci_hcd", "0000:00:14.0"),
                            d.path("root", XHCI))
    assert os.path.samefile(d.path("bus", "pci", "devices", "0000:01:00.0"),
                            d.path("root", NVME))


def test_concurrent_readers_while_power_changes(d):
    """Threads read the same and different files, walk the tree and run
    find and cat, while another suspends and resumes a subtree: no error,
    every value whole and one of the values it can have."""
    stop = threading.Event()
    errors = []
    nvme_power = d.path("root", NVME, "power")
    statics = {d.path("root", XHCI, "vendor"): "0x8086\n",
               d.path("root", NVME, "vendor"): read(d.path("root", NVME, "vendor")),
               d.path("root", BRIDGE, "devpath"): "/devices/" + BRIDGE + "\n"}

    def toggle():
        try:
            for i in range(20):
                with open(d.path("root", BRIDGE, "power"), "w") as f:
                    f.write("suspend\n" if i % 2 == 0 else "resume\n")
                want = "suspended\n" if i % 2 == 0 else "on\n"
                # what the writer changed is visible to it at once
                got = read(nvme_power)
                if got != want:
                    errors.append(f"after write {i}: expected {want!r}, got {got!r}")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"toggler: {e!r}")
        finally:
            stop.set()

    def reader(paths):
        try:
            while not stop.is_set():
                for p in paths:
                    v = read(p)
                    if p == nvme_power:
                        if v not in POWER_VALUES:
                            errors.append(f"{p}: expected a whole power value, got {v!r}")
                    elif v != statics[p]:
                        errors.append(f"{p}: expected {statics[p]!r}, got {v!r}")
        except Exception as e:  # noqa: BLE001
            errors.append(f"reader: {e!r}")

    def walker():
        try:
            while not stop.is_set():
                for top, _dirs, names in os.walk(d.path("root")):
                    for n in names:
                        p = os.path.join(top, n)
                        if not os.path.islink(p):
                            with open(p, "rb") as f:  # sysfs values may be binary
                                f.read()
        except Exception as e:  # noqa: BLE001
            errors.append(f"walker: {e!r}")

    def tools():
        while not stop.is_set():
            r = subprocess.run(f"find {d.mnt} -type f | xargs cat > /dev/null", shell=True,
                               capture_output=True, text=True)
            if r.returncode != 0 or r.stderr:
                errors.append(f"find | xargs cat: {r.returncode} {r.stderr}")

    threads = [threading.Thread(target=reader, args=([nvme_power],)),
               threading.Thread(target=reader, args=([nvme_power],)),
               threading.Thread(target=reader, args=(list(statics),)),
               threading.Thread(target=reader, args=(list(statics) + [nvme_power],)),
               threading.Thread(target=walker),
               threading.Thread(target=tools)]
    for t in threads:
        t.start()
    toggle()
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a reader hung"
    assert errors == []
    assert read(nvme_power) == "on\n"


def test_power_reads_are_whole_while_it_changes(d):
    """A power file read while its value changes gives one whole value,
    never the size of one and the bytes of the other ('sus', 'on\\npended\\n'),
    whether read at once, in pieces, by pread on a kept descriptor or by
    cat. Many transitions, each raced by readers: with the value's size and
    page taken apart by the kernel, this failed within some hundred."""
    bridge_power = d.path("root", BRIDGE, "power")
    paths = [d.path("root", NVME, "power"), bridge_power]
    stop = threading.Event()
    errors = []
    counts = []

    def check(how, v):
        if v not in POWER_VALUES:
            errors.append(f"{how}: expected a whole power value, got {v!r}")

    def whole():
        n = 0
        while not stop.is_set():
            for p in paths:
                check(f"read {p}", read(p))
                n += 1
        counts.append(n)

    def in_pieces():
        n = 0
        while not stop.is_set():
            for p in paths:
                fd = os.open(p, os.O_RDONLY)
                try:
                    got = b""
                    while chunk := os.read(fd, 2):
                        got += chunk
                finally:
                    os.close(fd)
                check(f"2-byte reads of {p}", got.decode())
                n += 1
        counts.append(n)

    def kept_open():
        # a poller keeps its descriptor and reads from offset 0 again
        fds = [os.open(p, os.O_RDONLY) for p in paths]
        n = 0
        try:
            while not stop.is_set():
                for p, fd in zip(paths, fds):
                    check(f"pread of a kept {p}", os.pread(fd, 4096, 0).decode())
                    n += 1
        finally:
            for fd in fds:
                os.close(fd)
        counts.append(n)

    def cat():
        while not stop.is_set():
            out = subprocess.run(["cat"] + paths * 20, capture_output=True, text=True).stdout
            # concatenated: split after each value
            got = [v + "\n" for v in out.split("\n")[:-1]]
            if len(got) != 40:
                errors.append(f"cat: expected 40 values, got {out!r}")
            for v in got:
                check("cat", v)

    threads = [threading.Thread(target=f) for f in (whole, whole, in_pieces, kept_open, cat)]
    for t in threads:
        t.start()
    try:
        for i in range(TRANSITIONS):
            with open(bridge_power, "w") as f:
                f.write("suspend\n" if i % 2 == 0 else "resume\n")
            if errors:
                break
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not any(t.is_alive() for t in threads), "a reader hung"
    assert errors == [], f"{len(errors)} torn reads in {TRANSITIONS} transitions, e.g. {errors[:5]}"
    assert sum(counts) > TRANSITIONS, f"the readers read too little to race: {counts}"
    assert read(bridge_power) == "on\n"


def getattrs_after_stats(rounds):
    """(GETATTRs a daemon of the small testbed served, live files, unbounded
    files) when every kernel_driver and power_log was lstat()ed @rounds
    times after one walk. Counted by the daemon (its log at exit)."""
    import re

    from harness import Daemon
    from test_small_pci import TESTBED
    dm = Daemon(TESTBED)
    try:
        live, unbounded = [], [dm.path("power_log")]  # the journal, at the top
        for top, dirs, files in os.walk(dm.path("root")):
            live += [os.path.join(top, f) for f in files if f == "kernel_driver"]
        for _ in range(rounds):
            for p in live + unbounded:
                os.lstat(p)
        assert dm.terminate() == 0
        n = int(re.search(r"fuse requests: .* getattr=(\d+)", dm.output()).group(1))
        return n, len(live), len(unbounded)
    finally:
        dm.stop()


def test_warm_stats_of_live_values_ask_the_daemon_nothing():
    # kernel_driver, a live value read fresh at each open, keeps its
    # attributes like any value: only power_log (its size measured at each
    # stat) is asked again. Ten more rounds of stats, ten more GETATTRs each
    # of power_log, none of kernel_driver.
    once, live, unbounded = getattrs_after_stats(1)
    more, _, _ = getattrs_after_stats(11)
    assert live and unbounded
    assert more - once <= 10 * unbounded, (once, more, live, unbounded)


def journal_daemon(extra_args=()):
    """A daemon of the small testbed whose journal holds a dry run's suspend."""
    from harness import Daemon
    from test_small_pci import TESTBED
    dm = Daemon(TESTBED, list(extra_args))
    try:
        with open(dm.path("power"), "w") as f:
            f.write("suspend-dry-run\n")
    except Exception:
        dm.stop()
        raise
    return dm


def test_open_journals_share_one_copy_and_stat_builds_none():
    # Twenty opens reading the journal and forty stats of it: one copy of
    # the journal, built once for its version, serves them all (counted by
    # the daemon: "power_log built N times" in its log at exit). The old
    # code built one per open and one per stat.
    dm = journal_daemon()
    try:
        log = dm.path("power_log")
        files = [open(log) for _ in range(20)]
        texts = {f.read() for f in files}
        for _ in range(40):
            os.stat(log)
        for f in files:
            f.close()
        assert len(texts) == 1 and "suspend" in texts.pop()
        built, = dm.counted_at_exit(r"power_log built (\d+) times", "the journal's builds")
        # the empty journal's and the dry run's: not one per open or stat
        assert built <= 2, built
    finally:
        dm.stop()


def in_child_as(uid, fn):
    """fn() run in a child process as @uid; returns what it returned (an
    int below 256) or raises with the child's failure."""
    pid = os.fork()
    if pid == 0:
        code = 255
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            code = fn()
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status), status
    return os.WEXITSTATUS(status)


def test_what_one_user_pins_is_bounded():
    # Each open of a changing value costs 512 bytes of the opener's budget,
    # each copy its length; root is not counted. With a budget of two opens
    # and one and a half journals, a user other than root reads the journal
    # through one file, opens a second, and cannot read it (ENOMEM) until
    # the first is closed; a third open is refused (EMFILE) while two are.
    if os.geteuid() != 0:
        pytest.skip("needs root to run a child as another user")
    dm = journal_daemon()
    try:
        size = len(read(dm.path("power_log")))
    finally:
        dm.stop()
    assert size > 0
    budget = 2 * 512 + size + size // 2
    dm = journal_daemon(["-o", f"max_open_bytes_per_uid={budget}"])
    try:
        log = dm.path("power_log")
        assert len(read(log)) == size

        def as_nobody():
            a = os.open(log, os.O_RDONLY)
            if len(os.read(a, 1 << 20)) != size:
                return 1
            b = os.open(log, os.O_RDONLY)
            try:
                os.read(b, 1 << 20)
                return 2  # a second copy past the budget
            except OSError as e:
                if e.errno != errno.ENOMEM:
                    return 3
            try:
                os.open(log, os.O_RDONLY)
                return 4  # a third open past the budget
            except OSError as e:
                if e.errno != errno.EMFILE:
                    return 5
            os.close(a)
            # the kernel sends the release after close() returned: poll
            import time
            deadline = time.monotonic() + 60
            while True:
                try:
                    got = os.read(b, 1 << 20)
                    break
                except OSError as e:
                    if e.errno != errno.ENOMEM or time.monotonic() > deadline:
                        return 6
                    time.sleep(0.01)
            if len(got) != size:
                return 7
            os.close(b)
            return 0

        assert in_child_as(65534, as_nobody) == 0
        # root is not counted: many opens, each read
        files = [open(log) for _ in range(10)]
        assert all(len(f.read()) == size for f in files)
        for f in files:
            f.close()
    finally:
        dm.stop()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))


def test_open_journals_do_not_each_hold_a_copy(tmp_path):
    # 3000 devices: a journal of some 100 KiB. Two hundred files hold it
    # open, each read through: the daemon's memory grows by one copy, not
    # two hundred (20 MiB in the old code, which copied it per open).
    from harness import Daemon
    bed = tmp_path / "many.umockdev"
    bed.write_text("".join(f"P: /devices/platform/dev{i}\nE: SUBSYSTEM=platform\n\n"
                           for i in range(3000)))
    dm = Daemon(str(bed))
    try:
        with open(dm.path("power"), "w") as f:
            f.write("suspend-dry-run\n")
        log = dm.path("power_log")
        size = len(read(log))
        assert size > 64 * 1024, size
        before = rss_kib(dm.proc.pid)
        files = [open(log) for _ in range(200)]
        assert all(len(f.read()) == size for f in files)
        grown = rss_kib(dm.proc.pid) - before
        for f in files:
            f.close()
        assert grown < 200 * size // 1024 // 4, \
            f"the daemon grew by {grown} KiB for 200 open copies of {size} bytes"
    finally:
        dm.stop()
