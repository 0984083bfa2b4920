# SPDX-License-Identifier: LGPL-2.1-or-later
"""No reader can stall the mount (issue 31, item 4): sysfs values read slowly
by users other than root (a preload library makes the daemon's reads of one
PCI function's config sleep until the test lets them go) take a bounded share
of the daemon's threads, so that root's power write and a stat are answered
while the readers are still held; the watchdog logs and counts the reads that
stopped moving. PCI config is never passed through, so its reads come to the
daemon over /dev/fuse or io_uring, whatever the kernel offers."""
import os
import re
import threading
import time

import pytest

from harness import Daemon

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "server-2dom.umockdev")
NIC = "pci0000:00/0000:00:02.0/0000:01:00.0/0000:02:10.0/0000:04:00.0"
AST_BRIDGE = "pci0000:00/0000:00:1c.0/0000:05:00.0"  # pci-pm, PM capability at 0x50
NOBODY = 65534
READERS = 40
BOUND = 30  # seconds: generous, the machine is shared


def start_reader(path, stop):
    """A child, as nobody, reading @path again and again until @stop exists
    (an EAGAIN, its share taken, is tried again a little later)."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            for _ in range(100000):
                if os.path.exists(stop):
                    break
                try:
                    with open(path, "rb") as f:
                        f.read()
                except OSError:
                    time.sleep(0.05)
            status = 0
        finally:
            os._exit(status)
    return pid


def wait_for(cond, timeout=BOUND):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def held(log):
    try:
        with open(log) as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


@pytest.mark.parametrize("opts", [["--no-passthrough", "--no-io-uring"], ["--no-passthrough"], []],
                         ids=["dev-fuse", "no-passthrough", "default"])
def test_root_is_answered_while_nobody_reads_a_slow_attribute(opts):
    tmp = None
    d = None
    pids = []
    stop = None
    try:
        import tempfile
        tmp = tempfile.TemporaryDirectory(prefix="driverfs-slow-")
        os.chmod(tmp.name, 0o755)  # nobody's readers look for the stop file
        go, stop, log = (os.path.join(tmp.name, n) for n in ("go", "stop", "log"))
        d = Daemon(TESTBED, opts, extra_env={
            "LD_PRELOAD": os.environ["DRIVERFS_SLOWREAD"],
            "DRIVERFS_SLOW_READS": NIC.rsplit("/", 1)[1] + "/config",
            "DRIVERFS_SLOW_GO": go, "DRIVERFS_SLOW_STOP": stop, "DRIVERFS_SLOW_LOG": log})
        config = d.path("root", NIC, "config")
        assert len(open(config, "rb").read()) == 64  # not slow yet
        open(go, "w").close()
        pids = [start_reader(config, stop) for _ in range(READERS)]
        assert wait_for(lambda: held(log) >= 1), "no reader reached the slow attribute"
        # the readers that can come in, in: every worker they may take, taken
        time.sleep(2)

        answered = {}

        def root_write():
            with open(d.path("root", AST_BRIDGE, "power"), "w") as f:
                f.write("suspend")
            answered["write"] = True

        def a_stat():
            os.stat(d.path("root", NIC, "vendor"))
            os.stat(d.path("root", AST_BRIDGE))
            answered["stat"] = True

        threads = [threading.Thread(target=fn, daemon=True) for fn in (root_write, a_stat)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(BOUND)
        # asked before the readers were let go: answered while they were held
        assert not os.path.exists(stop)
        assert answered == {"write": True, "stat": True}, \
            f"answered only {answered} while {READERS} readers as nobody were held"

        if "serving FUSE requests over io_uring" in d.output():
            # over io_uring, nobody's reads past its share were refused
            with open(d.path("metrics")) as f:
                metrics = f.read()
            m = re.search(r'^driverfsd_fuse_sysfs_reads_total\{result="refused"\} (\d+)',
                          metrics, re.M)
            assert m and int(m.group(1)) >= 1, metrics
            print("served over io_uring")
        if opts == ["--no-passthrough", "--no-io-uring"]:
            # the watchdog tells of the reads that stopped moving
            assert wait_for(lambda: re.search(r"a read request of uid 65534 on \S+/config",
                                              d.output()), 40), d.output()
            with open(d.path("metrics")) as f:
                metrics = f.read()
            m = re.search(r"^driverfsd_fuse_requests_stalled (\d+)", metrics, re.M)
            assert m and int(m.group(1)) >= 1, metrics
            m = re.search(r'^driverfsd_fuse_sysfs_reads_total\{result="queued"\} (\d+)',
                          metrics, re.M)
            assert m and int(m.group(1)) >= 1, metrics

        open(stop, "w").close()
        for t in threads:
            t.join(BOUND)
        with open(d.path("root", AST_BRIDGE, "power")) as f:
            assert f.read() == "suspended\n"
    finally:
        if stop:
            open(stop, "w").close()
        for pid in pids:
            os.waitpid(pid, 0)
        if d:
            d.stop()
        if tmp:
            tmp.cleanup()


@pytest.mark.parametrize("opts", [["--no-passthrough", "--no-io-uring"], []],
                         ids=["dev-fuse", "default"])
def test_a_few_bytes_of_a_binary_attribute_cost_a_few_bytes(opts):
    """A reader asking for 4 bytes of PCI config (a binary attribute, read
    by offset and size as sysfs reads it) costs the device 4 bytes, not the
    whole value; the bytes are sysfs's, and a whole read still gets the 64
    bytes a reader without CAP_SYS_ADMIN gets."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="driverfs-slow-") as tmp:
        sizes = os.path.join(tmp, "sizes")
        d = Daemon(TESTBED, opts, extra_env={
            "LD_PRELOAD": os.environ["DRIVERFS_SLOWREAD"],
            "DRIVERFS_SLOW_READS": NIC.rsplit("/", 1)[1] + "/config",
            "DRIVERFS_SLOW_SIZES": sizes})
        try:
            with open(os.path.join(d.testbed.get_root_dir(), "sys", "devices", NIC, "config"),
                      "rb") as f:
                sysfs = f.read()
            config = d.path("root", NIC, "config")
            if os.path.exists(sizes):
                os.unlink(sizes)  # what the daemon read before: its scan's
            fd = os.open(config, os.O_RDONLY)
            try:
                assert os.pread(fd, 4, 8) == sysfs[8:12]
            finally:
                os.close(fd)
            with open(sizes) as f:
                asked = [int(line) for line in f]
            assert sum(asked) <= 4, f"the daemon asked the device for {asked} bytes"
            with open(config, "rb") as f:
                assert f.read() == sysfs[:64]
        finally:
            d.stop()
