# SPDX-License-Identifier: LGPL-2.1-or-later
"""The configuration: driverfsd.conf and drivers.d errors with file and line,
--check-config's exit status and output, settings taking effect, SIGHUP
reloading drivers.d on a mounted testbed (a broken file keeps the drivers in
effect), and watchdog pings."""
import os
import signal
import subprocess
import tempfile

import pytest

from harness import DAEMON, Daemon

TESTBEDS = os.path.join(os.path.dirname(__file__), "..", "testbeds")
SMALL_PCI = os.path.join(TESTBEDS, "small-pci.umockdev")
HOST_BRIDGE = "0000:00:00.0"  # the testbed's one PCI function no kernel driver has


@pytest.fixture
def confdir():
    with tempfile.TemporaryDirectory(prefix="driverfs-config-") as tmp:
        os.mkdir(os.path.join(tmp, "drivers.d"))
        yield tmp


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def check(config):
    return subprocess.run([DAEMON, "--check-config", "--config", config],
                          capture_output=True, text=True, timeout=30)


def test_valid_config_checks_silently(confdir):
    conf = os.path.join(confdir, "driverfsd.conf")
    write(conf, "# every key\n[Daemon]\nMountPoint=/devices\nLogLevel=debug\n"
                "HotplugHelper=/usr/lib/driverfsd/policy --verbose\nColdplug=no\n"
                "[Sources]\nPCI=yes\nUSB=off\nUdev=true\n[PM]\nHookTimeout=30\n")
    write(os.path.join(confdir, "drivers.d", "10-a.conf"),
          "[Driver]\nName=a\nBus=pci\n[Hooks]\nSuspend=/bin/true\n")
    r = check(conf)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_check_config_names_file_and_line_of_every_error(confdir):
    conf = os.path.join(confdir, "driverfsd.conf")
    write(conf, "[Daemon]\n"
                "MountPoint=relative/path\n"  # 2
                "Colour=red\n"  # 3
                "[Sources]\n"
                "PCI=maybe\n"  # 5
                "[Frobnicate]\n"  # 6
                "Key=not reported again\n"
                "[PM]\n"
                "HookTimeout=0\n"  # 9
                "[Daemon]\n"
                "HotplugHelper=policy\n"  # 11
                "LogLevel=loud\n"  # 12
                "[Sources]\n"
                "Udev=no\n")  # 14
    drivers = os.path.join(confdir, "drivers.d")
    write(os.path.join(drivers, "10-a.conf"),
          "[Driver]\nName=a\nBus=pci\n"
          "Colour=blue\n"  # 4
          "[Hookz]\n")  # 5
    write(os.path.join(drivers, "20-b.conf"),
          "[Driver]\nName=b\nBus=pci\n[Hooks]\n"
          "Timeout=never\n")  # 5
    r = check(conf)
    assert r.returncode == 1
    assert r.stdout == ""
    d = os.path.join(drivers, "")
    assert r.stderr.splitlines() == [
        f"{conf}:2: bad MountPoint 'relative/path' (an absolute path)",
        f"{conf}:3: unknown key Colour in [Daemon]",
        f"{conf}:5: bad PCI 'maybe' (yes or no)",
        f"{conf}:6: unknown section [Frobnicate]",
        f"{conf}:9: bad HookTimeout '0' (seconds, from 1 to 3600)",
        f"{conf}:11: HotplugHelper=: the program must be an absolute path, not 'policy'",
        f"{conf}:12: bad LogLevel 'loud' (err, warning, notice, info or debug)",
        f"{conf}:14: Udev=no is not possible: the udev source places every device, "
        "the others complete its records",
        f"{d}10-a.conf:4: unknown key Colour in [Driver]",
        f"{d}10-a.conf:5: unknown section [Hookz]",
        f"{d}20-b.conf:5: bad Timeout 'never' (seconds, from 1 to 3600)",
    ]


def test_check_config_missing_files(confdir):
    # --config FILE must exist
    missing = os.path.join(confdir, "none.conf")
    r = check(missing)
    assert r.returncode == 1
    assert r.stderr == f"{missing}: cannot open: No such file or directory\n"
    # a bad drivers.d file alone fails the check too
    conf = os.path.join(confdir, "driverfsd.conf")
    write(conf, "")
    write(os.path.join(confdir, "drivers.d", "10-a.conf"), "[Driver]\nName=a\n")
    r = check(conf)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"{confdir}/drivers.d/10-a.conf:1: [Driver] has neither Bus= nor Class= "
        "(a driver drives the devices of a bus or of a class)"]


def start_refused(confdir, conf):
    """Starts the daemon on @conf, which it must refuse without mounting: its stderr."""
    mnt = os.path.join(confdir, "mnt")
    os.mkdir(mnt)
    r = subprocess.run([DAEMON, "-f", "--config", conf, mnt], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1
    assert not os.path.ismount(mnt)
    return r.stderr


def test_daemon_refuses_a_bad_config(confdir):
    conf = os.path.join(confdir, "driverfsd.conf")
    write(conf, "[Daemon]\nLogLevel=loud\n")
    assert f"{conf}:2: bad LogLevel 'loud'" in start_refused(confdir, conf)


def test_log_lines_carry_priorities_on_the_journal_stream(confdir):
    """With stderr the stream JOURNAL_STREAM names, lines start with <N>;
    with another stream named, they stay plain."""
    conf = os.path.join(confdir, "driverfsd.conf")
    write(conf, "[Daemon]\nLogLevel=loud\n")
    mnt = os.path.join(confdir, "mnt")
    os.mkdir(mnt)
    err = os.path.join(confdir, "stderr")
    for named in ("stderr", "other"):
        with open(err, "w+") as f:
            st = os.fstat(f.fileno()) if named == "stderr" else os.stat(conf)
            env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
            r = subprocess.run([DAEMON, "-f", "--config", conf, mnt], stderr=f, env=env,
                               timeout=30)
            f.seek(0)
            lines = f.read().splitlines()
        assert r.returncode == 1
        first = f"{conf}:2: bad LogLevel 'loud' (err, warning, notice, info or debug)"
        if named == "stderr":
            assert lines[0] == "<3>" + first  # LOG_ERR
        else:
            assert lines[0] == "driverfsd: error: " + first


def test_config_settings_take_effect(confdir):
    """MountPoint= is used when the command line names none, the command
    line wins over HotplugHelper=, and [Sources] turns USB off."""
    conf = os.path.join(confdir, "driverfsd.conf")
    mnt = os.path.join(confdir, "from-config")
    write(conf, f"[Daemon]\nMountPoint={mnt}\nLogLevel=debug\n[Sources]\nUSB=no\n")
    bed = os.path.join(TESTBEDS, "usb-tree.umockdev")
    d = Daemon(bed, ["--config", conf], mnt=mnt)
    try:
        assert d.mnt == mnt and d.is_mounted()
        assert os.listdir(os.path.join(mnt, "bus", "pci", "devices"))
        # udev still places the USB devices, but libusb's values are absent
        usb = os.listdir(os.path.join(mnt, "bus", "usb", "devices"))
        assert usb
        assert "debug:" in d.output()  # LogLevel=debug
    finally:
        d.stop()


DRIVER = """[Driver]
Name={name}
Bus=pci
[Match]
class=0x060000
[Hooks]
Remove={hook} remove {name}
"""

HOOK = """#!/bin/sh
echo "$1 $2 $DRIVERFS_PATH" >> {log}
"""


class Reloadable:
    """A daemon on the small PCI testbed with a drivers.d of ours."""

    def __init__(self, confdir, extra_env=None):
        self.dir = confdir
        self.conf = os.path.join(confdir, "driverfsd.conf")
        write(self.conf, "[PM]\nHookTimeout=10\n")
        self.drivers = os.path.join(confdir, "drivers.d")
        self.log = os.path.join(confdir, "hooks.log")
        self.hook = os.path.join(confdir, "hook.sh")
        write(self.hook, HOOK.format(log=self.log))
        os.chmod(self.hook, 0o755)
        self.d = Daemon(SMALL_PCI, ["--config", self.conf], extra_env=extra_env)

    def add_driver(self, file, name):
        write(os.path.join(self.drivers, file), DRIVER.format(name=name, hook=self.hook))

    def hup(self):
        """Sends SIGHUP and returns the STATUS= that came with READY=1."""
        self.d.proc.send_signal(signal.SIGHUP)
        self.d.wait_status(lambda line: line == "RELOADING=1")
        self.d.wait_status(lambda line: line == "READY=1")
        return self.d.wait_status(lambda line: line == "STATUS=reloaded"
                                  or line.startswith("STATUS=reload failed"))

    def bound(self, name):
        """The devices bound to driver @name (the links in its directory;
        its kind and priority files are not devices), None without it."""
        path = self.d.path("bus", "pci", "drivers", name)
        if not os.path.isdir(path):
            return None
        return sorted(e for e in os.listdir(path) if os.path.islink(os.path.join(path, e)))

    def hooks(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return f.read().splitlines()


@pytest.fixture
def reloadable(confdir):
    r = Reloadable(confdir)
    yield r
    r.d.stop()


def test_sighup_reloads_drivers_without_remounting(reloadable):
    r = reloadable
    assert r.bound("bridge-quiesce") is None
    mounted_before = r.d.is_mounted()
    r.add_driver("10-bridge.conf", "bridge-quiesce")
    assert r.hup() == "STATUS=reloaded"
    assert r.d.is_mounted() and mounted_before
    assert r.d.proc.poll() is None
    assert r.bound("bridge-quiesce") == [HOST_BRIDGE]
    link = os.readlink(r.d.path("root", "pci0000:00", HOST_BRIDGE, "driver"))
    assert link.endswith("bus/pci/drivers/bridge-quiesce")

    # a broken file: nothing changes, the errors are logged with file and line
    write(os.path.join(r.drivers, "20-broken.conf"), "[Driver]\nName=x\nBus=pci\nOops=1\n")
    assert r.hup() == "STATUS=reload failed: 1 error"
    assert f"{r.drivers}/20-broken.conf:4: unknown key Oops in [Driver]" in r.d.output()
    assert r.bound("bridge-quiesce") == [HOST_BRIDGE]
    assert r.hooks() == []  # nothing was removed

    # fixed, and the driver renamed: the old one lets go of its device
    # (remove hook) and the new one takes it
    os.unlink(os.path.join(r.drivers, "20-broken.conf"))
    r.add_driver("10-bridge.conf", "bridge-quiesce-2")
    assert r.hup() == "STATUS=reloaded"
    assert r.bound("bridge-quiesce") is None
    assert r.bound("bridge-quiesce-2") == [HOST_BRIDGE]
    assert r.hooks() == [f"remove bridge-quiesce pci0000:00/{HOST_BRIDGE}"]

    # an empty drivers.d: the device is let go of and is unbound
    os.unlink(os.path.join(r.drivers, "10-bridge.conf"))
    assert r.hup() == "STATUS=reloaded"
    assert r.bound("bridge-quiesce-2") is None
    assert not os.path.lexists(r.d.path("root", "pci0000:00", HOST_BRIDGE, "driver"))
    assert r.hooks()[-1] == f"remove bridge-quiesce-2 pci0000:00/{HOST_BRIDGE}"


def test_sighup_with_a_bad_main_config_keeps_everything(reloadable):
    r = reloadable
    r.add_driver("10-bridge.conf", "bridge-quiesce")
    assert r.hup() == "STATUS=reloaded"
    write(r.conf, "[PM]\nHookTimeout=soon\n")
    os.unlink(os.path.join(r.drivers, "10-bridge.conf"))
    assert r.hup() == "STATUS=reload failed: 1 error"
    assert f"{r.conf}:2: bad HookTimeout 'soon'" in r.d.output()
    assert r.bound("bridge-quiesce") == [HOST_BRIDGE]


def test_watchdog_pings(confdir):
    r = Reloadable(confdir, extra_env={"WATCHDOG_USEC": "200000"})
    try:
        for _ in range(3):
            r.d.wait_status(lambda line: line == "WATCHDOG=1", timeout=10)
        # pings go on through a reload
        r.add_driver("10-bridge.conf", "bridge-quiesce")
        assert r.hup() == "STATUS=reloaded"
        r.d.wait_status(lambda line: line == "WATCHDOG=1", timeout=10)
    finally:
        r.d.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="trusted files must be root's")
def test_a_hook_whose_interpreter_anyone_can_change_is_refused(confdir):
    """Issue 30 item 8: a hook root's alone whose #! names an interpreter
    another user owns would run that user's program as root. --check-config
    and the start refuse it, naming the interpreter; so does the runner when
    the interpreter changes hands after the start: the hook is not run."""
    ran = os.path.join(confdir, "interpreter-ran")
    interp = os.path.join(confdir, "interp")
    write(interp, f"#!/bin/sh\ntouch {ran}\n")
    os.chmod(interp, 0o755)
    hook = os.path.join(confdir, "hook")
    write(hook, f"#! {interp} -e\nexit 0\n")
    os.chmod(hook, 0o755)
    conf = os.path.join(confdir, "driverfsd.conf")
    write(conf, "[PM]\nHookTimeout=10\n")
    drv = os.path.join(confdir, "drivers.d", "10-a.conf")
    write(drv, f"[Driver]\nName=a\nBus=pci\n[Match]\nclass=0x060000\n[Hooks]\n"
               f"Suspend={hook}\nResume={hook}\n")
    assert check(conf).returncode == 0

    os.chown(interp, 1000, 1000)
    r = check(conf)
    assert (r.returncode, r.stderr) == (
        1, f"{drv}:7: Suspend=: program {hook} refused, anyone but root could change it: "
           f"the #! interpreter {interp} of {hook}: the file is owned by uid 1000, not root "
           "(mode 0755)\n"
           f"{drv}:8: Resume=: program {hook} refused, anyone but root could change it: "
           f"the #! interpreter {interp} of {hook}: the file is owned by uid 1000, not root "
           "(mode 0755)\n")
    assert f"the #! interpreter {interp} of {hook}" in start_refused(confdir, conf)
    assert not os.path.exists(ran)

    # checked again at each run: root's at the start, another user's at the hook
    os.chown(interp, 0, 0)
    d = Daemon(SMALL_PCI, ["--config", conf])
    try:
        os.chown(interp, 1000, 1000)
        with pytest.raises(OSError):
            with open(d.path("bus", "pci", "devices", HOST_BRIDGE, "power"), "w") as f:
                f.write("suspend")
        assert not os.path.exists(ran), "the user's interpreter ran as root"
        assert (f"refused to run {hook}, anyone but root could change it: the #! interpreter "
                f"{interp} of {hook}: the file is owned by uid 1000") in d.output()
    finally:
        d.stop()


def test_no_watchdog_for_another_pid(confdir):
    """WATCHDOG_PID naming another process: this one must not ping."""
    r = Reloadable(confdir, extra_env={"WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"})
    try:
        # a reload's notifications come after any ping the start made
        assert r.hup() == "STATUS=reloaded"
        assert "WATCHDOG=1" not in r.d.__dict__.get("status_backlog", [])
    finally:
        r.d.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="trusted files must be root's")
def test_check_config_refuses_files_anyone_but_root_can_change(confdir):
    # issue 14, item 6: each names the file and what is at fault
    conf = os.path.join(confdir, "driverfsd.conf")
    write(conf, "[Daemon]\nLogLevel=debug\n")
    os.chmod(conf, 0o644)
    assert check(conf).returncode == 0
    refused = ": refused, anyone but root could change it: "

    def assert_refused(stderr):
        r = check(conf)
        assert (r.returncode, r.stderr) == (1, stderr)

    os.chmod(conf, 0o666)
    assert_refused(f"{conf}{refused}the file is writable by other (owner uid 0, mode 0666)\n")
    os.chmod(conf, 0o644)

    drv = os.path.join(confdir, "drivers.d", "10-a.conf")
    hook = os.path.join(confdir, "hook")
    write(hook, "#!/bin/sh\n")
    os.chmod(hook, 0o755)
    write(drv, f"[Driver]\nName=a\nBus=pci\n[Hooks]\nSuspend={hook}\n")
    os.chmod(drv, 0o664)
    assert_refused(f"{drv}{refused}the file is writable by group (owner uid 0, mode 0664)\n")
    os.chmod(drv, 0o644)
    os.chown(hook, 1000, 1000)
    assert_refused(f"{drv}:5: Suspend=: program {hook}{refused[1:]}"
                   "the file is owned by uid 1000, not root (mode 0755)\n")
    os.chown(hook, 0, 0)
    assert check(conf).returncode == 0

    # the daemon itself refuses to start on one
    os.chmod(conf, 0o666)
    assert f"{conf}: refused, anyone but root could change it" in start_refused(confdir, conf)
