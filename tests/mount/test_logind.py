# SPDX-License-Identifier: LGPL-2.1-or-later
"""driverfsd and system sleep (tests/testbeds/small-pci.umockdev).

A private system bus with dbusmock's logind template stands in for logind.
The daemon must hold a "sleep" "delay" inhibitor; on PrepareForSleep(true)
suspend the whole tree, children first, and only then release the
inhibitor; on PrepareForSleep(false) resume the tree, parents first, and
take a new inhibitor. Each step is reported as an sd_notify STATUS=, which
the tests wait for on the daemon's notify socket. Without a system bus, or
without logind on it, the daemon serves as before."""
import os
import shutil
import signal
import subprocess
import tempfile

import pytest

from harness import Daemon, own

try:
    import dbus
    import dbusmock
except ImportError:
    dbus = dbusmock = None

HERE = os.path.dirname(__file__)
TESTBED = os.path.join(HERE, "..", "testbeds", "small-pci.umockdev")

LOGIND_NAME = "org.freedesktop.login1"
LOGIND_PATH = "/org/freedesktop/login1"
MANAGER = "org.freedesktop.login1.Manager"
OUR_INHIBITOR = ("sleep", "driverfsd", "Suspend user-space driven devices in order", "delay")

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:dir={dir}</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


class SystemBus:
    """A private dbus-daemon, its address in $DBUS_SYSTEM_BUS_ADDRESS while
    it runs (the daemon under test inherits it from os.environ)."""

    def __init__(self):
        if shutil.which("dbus-daemon") is None:
            pytest.skip("dbus-daemon is not installed")
        self.tmp = tempfile.TemporaryDirectory(prefix="driverfs-bus-")
        conf = os.path.join(self.tmp.name, "system.conf")
        with open(conf, "w") as f:
            f.write(BUS_CONFIG.format(dir=self.tmp.name))
        self.proc = subprocess.Popen(
            ["dbus-daemon", "--nofork", "--nopidfile", "--config-file=" + conf,
             "--print-address=1"], stdout=subprocess.PIPE, text=True)
        # printed once it listens
        self.address = self.proc.stdout.readline().strip()
        if not self.address:
            self.proc.wait(30)
            self.tmp.cleanup()
            raise RuntimeError("dbus-daemon did not start")
        self.saved = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS")
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self.address

    def stop(self):
        if self.saved is None:
            os.environ.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
        else:
            os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self.saved
        self.proc.terminate()
        self.proc.wait(30)
        self.proc.stdout.close()
        self.tmp.cleanup()


class Logind:
    """dbusmock's logind template on a private system bus."""

    def __init__(self):
        if dbusmock is None:
            pytest.skip("python3-dbusmock is not installed")
        self.bus = SystemBus()
        try:
            # waits until the name is on the bus
            self.mock, _ = dbusmock.DBusTestCase.spawn_server_template(
                "logind", {}, stdout=subprocess.DEVNULL)
        except Exception:
            self.bus.stop()
            raise
        self.conn = dbus.bus.BusConnection(self.bus.address)
        self.obj = self.conn.get_object(LOGIND_NAME, LOGIND_PATH)

    def inhibitors(self):
        """(what, who, why, mode) of every inhibitor logind holds."""
        return [tuple(str(x) for x in i[:4])
                for i in self.obj.ListInhibitors(dbus_interface=MANAGER)]

    def ours(self):
        return self.inhibitors().count(OUR_INHIBITOR)

    def prepare_for_sleep(self, start):
        self.obj.EmitSignal(MANAGER, "PrepareForSleep", "b", [dbus.Boolean(start)],
                            dbus_interface="org.freedesktop.DBus.Mock")

    def restart(self):
        """A new logind, under a new unique name, as after a crash."""
        self.mock.terminate()
        self.mock.wait(30)
        self.mock, _ = dbusmock.DBusTestCase.spawn_server_template(
            "logind", {}, stdout=subprocess.DEVNULL)
        self.obj = self.conn.get_object(LOGIND_NAME, LOGIND_PATH)

    def owner(self):
        """The unique name owning org.freedesktop.login1."""
        bus = self.conn.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
        return str(bus.GetNameOwner(LOGIND_NAME, dbus_interface="org.freedesktop.DBus"))

    def stop(self):
        self.conn.close()
        self.mock.terminate()
        self.mock.wait(30)
        self.bus.stop()


@pytest.fixture(scope="module")
def logind():
    ld = Logind()
    yield ld
    ld.stop()


@pytest.fixture
def d(logind):
    daemon = Daemon(TESTBED)
    yield daemon
    daemon.stop()


def wait_notification(d, match, timeout=30):
    """The first line of the daemon's sd_notify datagrams for which match()
    is true (the harness waits on the socket)."""
    return d.wait_status(match, timeout)


def read(path):
    with open(path) as f:
        return f.read()


def power_states(d):
    """{path under root/ ("." for root, whose power file is at the top of
    the mount): content of its power file}"""
    root = d.path("root")
    states = {".": read(d.path("power"))}
    for top, _, names in os.walk(root):
        if top != root and any(n.endswith("power") for n in names):
            states[os.path.relpath(top, root)] = read(own(top, "power"))
    return states


def journal(d, phase):
    """Paths of the power_log lines of @phase, in journal order, each checked ok."""
    paths = []
    for line in read(d.path("power_log")).splitlines():
        _, ph, path, result = line.split()[:4]
        if ph == phase:
            assert result == "ok", f"expected every {phase} hook to succeed: {line}"
            paths.append(path)
    return paths


def is_ancestor(a, b):
    return a != b and (a == "." or b.startswith(a + "/"))


def sleep_and_check(d, logind):
    assert logind.ours() == 1, "expected our inhibitor to be held before sleep"
    logind.prepare_for_sleep(True)
    status = wait_notification(d, lambda line: line.startswith("STATUS=sleep: suspended:"))
    assert status == "STATUS=sleep: suspended: 0", d.output()

    states = power_states(d)
    assert len(states) > 5 and "." in states
    awake = {p: s for p, s in states.items() if s != "suspended\n"}
    assert awake == {}, "expected every device suspended"

    order = journal(d, "suspend")
    assert sorted(order) == sorted(states), "expected one suspend per device"
    for i, p in enumerate(order):
        for q in order[:i]:
            assert not is_ancestor(q, p), f"{q} suspended before its descendant {p}"
    # the system may sleep now
    assert logind.ours() == 0, f"expected our inhibitor released: {logind.inhibitors()}"


def wake_and_check(d, logind):
    logind.prepare_for_sleep(False)
    status = wait_notification(d, lambda line: line.startswith("STATUS=sleep: resumed:"))
    assert status == "STATUS=sleep: resumed: 0", d.output()

    states = power_states(d)
    asleep = {p: s for p, s in states.items() if s != "on\n"}
    assert asleep == {}, "expected every device on again"

    order = journal(d, "resume")
    assert sorted(order) == sorted(states), "expected one resume per device"
    for i, p in enumerate(order):
        for q in order[:i]:
            assert not is_ancestor(p, q), f"{p} resumed after its descendant {q}"
    assert logind.ours() == 1, f"expected one new inhibitor: {logind.inhibitors()}"


def test_inhibitor_held_once_ready(d, logind):
    assert logind.ours() == 1, f"expected {OUR_INHIBITOR} once: {logind.inhibitors()}"
    assert read(d.path("power")) == "on\n"


def test_sleep_suspends_children_first_and_wake_resumes(d, logind):
    sleep_and_check(d, logind)
    wake_and_check(d, logind)


def test_the_new_inhibitor_serves_the_next_sleep(d, logind):
    for _ in range(2):
        sleep_and_check(d, logind)
        wake_and_check(d, logind)


def test_wake_without_sleep_takes_no_second_inhibitor(d, logind):
    # e.g. a sleep that began before the daemon subscribed
    assert logind.ours() == 1
    logind.prepare_for_sleep(False)
    status = wait_notification(d, lambda line: line.startswith("STATUS=sleep: resumed:"))
    assert status == "STATUS=sleep: resumed: 0", d.output()
    assert set(power_states(d).values()) == {"on\n"}
    assert logind.ours() == 1, f"expected still one inhibitor: {logind.inhibitors()}"
    # and that one is still the one the next sleep releases
    sleep_and_check(d, logind)
    wake_and_check(d, logind)


def test_sigterm_ends_the_sleep_thread_and_the_inhibitor(logind):
    d = Daemon(TESTBED)
    try:
        assert logind.ours() == 1
        # a thread that does not end would keep the daemon past the timeout
        assert d.terminate(signal.SIGTERM) == 0, d.output()
        assert not d.is_mounted()
        assert logind.ours() == 0
    finally:
        d.stop()


def test_serves_without_a_system_bus(monkeypatch, tmp_path):
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", f"unix:path={tmp_path}/no-such-bus")
    d = Daemon(TESTBED)
    try:
        assert read(d.path("power")) == "on\n"
        assert "pci0000:00" in os.listdir(d.path("root"))
        assert "no system sleep integration" in d.output()
        assert d.terminate(signal.SIGTERM) == 0, d.output()
    finally:
        d.stop()


def test_serves_with_a_bus_but_no_logind():
    bus = SystemBus()
    try:
        d = Daemon(TESTBED)
        try:
            assert read(d.path("power")) == "on\n"
            assert "no system sleep integration" in d.output()
            assert d.terminate(signal.SIGTERM) == 0, d.output()
        finally:
            d.stop()
    finally:
        bus.stop()


def unique_name_of(logind, pid):
    """The unique bus name of the connection process @pid holds."""
    bus = logind.conn.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
    for name in bus.ListNames(dbus_interface="org.freedesktop.DBus"):
        if name.startswith(":"):
            try:
                if bus.GetConnectionUnixProcessID(name, dbus_interface="org.freedesktop.DBus") == pid:
                    return str(name)
            except dbus.DBusException:
                continue
    raise AssertionError(f"process {pid} has no connection on the bus")


def spoof_prepare_for_sleep(logind, destination):
    """PrepareForSleep(true) sent by the test's own connection (not
    logind's), to @destination (None: broadcast)."""
    msg = dbus.lowlevel.SignalMessage(LOGIND_PATH, MANAGER, "PrepareForSleep")
    if destination:
        msg.set_destination(destination)
    msg.append(True, signature="b")
    logind.conn.send_message(msg)
    logind.conn.flush()


def assert_spoof_ignored(d, logind):
    """Once the spoofed signal was sent: logind's own wake-up broadcast
    (sent after it, so delivered after it) is handled, and nothing was
    suspended nor the inhibitor given up in between."""
    logind.prepare_for_sleep(False)
    status = wait_notification(d, lambda line: line.startswith("STATUS=sleep:"))
    assert status == "STATUS=sleep: resumed: 0", f"a spoofed signal was acted on: {status}"
    assert journal(d, "suspend") == [], "a spoofed signal suspended devices"
    assert logind.ours() == 1, f"a spoofed signal dropped the inhibitor: {logind.inhibitors()}"
    assert set(power_states(d).values()) == {"on\n"}


def test_a_signal_sent_to_the_daemon_alone_is_not_loginds(d, logind):
    # any user may address a signal to the daemon's connection
    spoof_prepare_for_sleep(logind, unique_name_of(logind, d.proc.pid))
    assert_spoof_ignored(d, logind)
    assert "ignoring PrepareForSleep" in d.output()
    # logind's own broadcast still works
    sleep_and_check(d, logind)
    wake_and_check(d, logind)


def test_a_broadcast_from_another_connection_is_not_loginds(d, logind):
    spoof_prepare_for_sleep(logind, None)
    assert_spoof_ignored(d, logind)


def test_a_forged_change_of_logind_owner_is_ignored(d, logind):
    # "logind is now the test's connection", sent to the daemon alone
    # (only the bus itself may say so), then that connection's sleep
    us = unique_name_of(logind, d.proc.pid)
    msg = dbus.lowlevel.SignalMessage("/org/freedesktop/DBus", "org.freedesktop.DBus",
                                      "NameOwnerChanged")
    msg.set_destination(us)
    msg.append(LOGIND_NAME, logind.owner(), logind.conn.get_unique_name(), signature="sss")
    logind.conn.send_message(msg)
    spoof_prepare_for_sleep(logind, None)
    # neither counts, and logind's own signals still do
    assert_spoof_ignored(d, logind)
    sleep_and_check(d, logind)
    wake_and_check(d, logind)


def test_a_restarted_logind_is_followed(d, logind):
    old = logind.owner()
    logind.restart()
    assert logind.owner() != old, "expected the new logind under a new unique name"
    # the new logind's sleep counts: the daemon learnt its name from the bus
    logind.prepare_for_sleep(True)
    status = wait_notification(d, lambda line: line.startswith("STATUS=sleep:"))
    assert status == "STATUS=sleep: suspended: 0", d.output()
    assert set(power_states(d).values()) == {"suspended\n"}
    # and its wake takes an inhibitor from it
    wake_and_check(d, logind)
