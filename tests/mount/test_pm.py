# SPDX-License-Identifier: LGPL-2.1-or-later
"""Power management through the mount, on the server testbed: exec drivers
from drivers.d with their hook environment, kernel runtime-PM proxies
writing the testbed's power/control, pci-pm writing PMCSR into the
testbed's config space, rollback after a failing hook, and the power file's
errors (EINVAL, EIO, EBUSY)."""
import errno
import os
import stat
import tempfile

import pytest

from harness import CTL, Daemon, in_background, pci_pmcsr, wait_started

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "server-2dom.umockdev")
NIC = "pci0000:00/0000:00:02.0/0000:01:00.0/0000:02:10.0/0000:04:00.0"  # ConnectX-5, mlx5_core
SWITCH = "pci0000:00/0000:00:02.0"  # root port above the PLX switch
AST_BRIDGE = "pci0000:00/0000:00:1c.0/0000:05:00.0"  # no kernel driver, PM capability at 0x50

HOOK = """#!/bin/sh
# $1: the log directory; $2: the action named in the config
env | sort > "$1/$2.$(basename "$DEVPATH")"
echo "$2 $DRIVERFS_PATH" >> "$1/order"
if [ -e "$1/fail.$2.$(basename "$DEVPATH")" ]; then
    echo "refusing to $2" >&2
    exit 1
fi
if [ -p "$1/gate" ] && [ "$2" = suspend ]; then
    echo started > "$1/started"
    read _ < "$1/gate"
fi
exit 0
"""


def write_config(tmp, hooks_for="0x15b3"):
    os.makedirs(os.path.join(tmp, "drivers.d"))
    hook = os.path.join(tmp, "hook.sh")
    with open(hook, "w") as f:
        f.write(HOOK)
    os.chmod(hook, 0o755)
    log = os.path.join(tmp, "log")
    os.mkdir(log)
    with open(os.path.join(tmp, "drivers.d", "10-nic.conf"), "w") as f:
        f.write(f"""# ConnectX-5 quiesce policy
[Driver]
Name=nic-quiesce
Bus=pci
[Match]
vendor={hooks_for}
[Hooks]
Probe={hook} {log} probe
Suspend={hook} {log} suspend
Resume={hook} {log} resume
Timeout=10
""")
    # a --config FILE must exist; drivers.d/ beside it is what this test needs
    config = os.path.join(tmp, "driverfsd.conf")
    with open(config, "w") as f:
        f.write("[PM]\nHookTimeout=10\n")
    return config, log


class Env:
    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="driverfs-pm-")
        self.config, self.log = write_config(self.tmp.name)
        self.d = Daemon(TESTBED, ["--config", self.config])
        self.sys = os.path.join(self.d.testbed.get_root_dir(), "sys", "devices")

    def read(self, *parts):
        with open(self.d.path(*parts)) as f:
            return f.read()

    def power(self, place, word):
        with open(self.d.path("root", place, "power"), "w") as f:
            f.write(word)

    def hook_env(self, name):
        with open(os.path.join(self.log, name)) as f:
            return dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)

    def order(self):
        p = os.path.join(self.log, "order")
        if not os.path.exists(p):
            return []
        with open(p) as f:
            return f.read().splitlines()

    def stop(self):
        self.d.stop()
        self.tmp.cleanup()


@pytest.fixture
def env():
    e = Env()
    yield e
    e.stop()


def test_exec_driver_binds_and_hooks_get_their_environment(env):
    # the user driver was probed first and took both NIC functions from mlx5_core
    drv = env.d.path("bus", "pci", "drivers", "nic-quiesce")
    assert sorted(n for n in os.listdir(drv) if os.path.islink(os.path.join(drv, n))) == \
        ["0000:04:00.0", "0000:04:00.1"]
    assert os.path.realpath(env.d.path("root", NIC, "driver")) == drv
    # the kernel's driver stays visible beside the user driver that holds it
    assert env.read("root", NIC, "kernel_driver") == "mlx5_core\n"
    assert env.read("bus", "pci", "drivers", "nic-quiesce", "kind") == "user\n"
    probe = env.hook_env("probe.0000:04:00.0")
    assert probe["ACTION"] == "probe"
    env.power(NIC, "suspend")
    e = env.hook_env("suspend.0000:04:00.0")
    assert e["ACTION"] == "suspend"
    assert e["DRIVERFS_PATH"] == NIC
    assert e["DEVPATH"] == "/devices/" + NIC
    assert e["BUS"] == "pci"
    assert e["DRIVER"] == "nic-quiesce"
    assert e["PCI_SLOT_NAME"] == "0000:04:00.0"  # a uevent property
    assert "HOME" not in e and "PYTEST_CURRENT_TEST" not in e  # a clean environment
    assert env.read("root", NIC, "power") == "suspended\n"
    env.power(NIC, "resume")
    assert env.hook_env("resume.0000:04:00.0")["ACTION"] == "resume"
    assert env.read("root", NIC, "power") == "on\n"


def test_whole_system_suspend_and_resume_in_order(env):
    # against the real kernel: tests/vm/guest/test_pm.sh (vm-pm), the order of
    # walks over the guest's xHCI root port and its whole PCI hierarchy
    with open(env.d.path("power"), "w") as f:
        f.write("suspend")
    log = [line.split() for line in env.read("power_log").splitlines()]
    assert log and all(entry[3] == "ok" for entry in log)
    seen = {}
    for seq, phase, path, res, usec in log:
        assert phase == "suspend"
        seen[path] = int(seq)
    # every device once, each after all of its descendants
    for path, seq in seen.items():
        parent = os.path.dirname(path) if path != "." else None
        while parent:
            assert seen[parent] > seq, f"{parent} suspended before {path}"
            parent = os.path.dirname(parent)
    for top, dirs, files in os.walk(env.d.path("root")):
        if "power" in files:
            with open(os.path.join(top, "power")) as f:
                assert f.read() == "suspended\n", top
    with open(env.d.path("power"), "w") as f:
        f.write("resume")
    for top, dirs, files in os.walk(env.d.path("root")):
        if "power" in files:
            with open(os.path.join(top, "power")) as f:
                assert f.read() == "on\n", top


def test_kernel_proxy_writes_runtime_pm_controls(env):
    # against the real kernel: tests/vm/guest/test_pm.sh (vm-pm), where the
    # USB devices' control goes on -> auto -> on and the kernel suspends and
    # resumes them (runtime_status, which the testbed does not model)
    control = os.path.join(env.sys, SWITCH, "power", "control")
    with open(control, "w") as f:  # as an administrator may have left it
        f.write("on\n")
    env.power(SWITCH, "suspend")
    with open(control) as f:
        assert f.read().strip() == "auto"
    env.power(SWITCH, "resume")
    with open(control) as f:
        assert f.read().strip() == "on"


def test_pci_pm_puts_an_unbound_function_in_d3hot_and_back(env):
    drv = env.d.path("bus", "pci", "drivers", "pci-pm")
    assert os.path.lexists(os.path.join(drv, "0000:05:00.0"))
    before, header = pci_pmcsr(env.sys, AST_BRIDGE)
    assert before & 3 == 0
    env.power(AST_BRIDGE, "suspend")
    during, _ = pci_pmcsr(env.sys, AST_BRIDGE)
    assert during & 3 == 3, f"PMCSR {during:#06x}: expected D3hot"
    assert during & ~3 == before & ~3, "other PMCSR bits changed"
    env.power(AST_BRIDGE, "resume")
    after, header_after = pci_pmcsr(env.sys, AST_BRIDGE)
    assert after & 3 == 0
    assert header_after == header, "config header not restored"


def test_pci_pm_resume_leaves_another_function_alone(env):
    """Between suspend and resume another function took the address (its
    config space is the testbed's file): resume checks the vendor/device ID
    and writes neither PMCSR nor the saved header into it."""
    before, header = pci_pmcsr(env.sys, AST_BRIDGE)
    env.power(AST_BRIDGE, "suspend")
    path = os.path.join(env.sys, AST_BRIDGE, "config")
    with open(path, "rb") as f:
        cfg = bytearray(f.read())
    cfg[0:4] = bytes.fromhex("86802315")  # 8086:1523, PM capability still at 0x50
    cfg[0x10:0x18] = b"\xaa" * 8  # its own BARs
    with open(path, "wb") as f:
        f.write(cfg)
    try:
        env.power(AST_BRIDGE, "resume")
    except OSError as e:
        assert e.errno == errno.EIO
    with open(path, "rb") as f:
        after = f.read()
    assert after[0x10:0x18] == b"\xaa" * 8, "another device's BARs written into the function"
    assert after == bytes(cfg), "the other function's config space changed"
    assert "not the function it suspended" in env.d.output()


def test_bad_word_is_einval_and_changes_nothing(env):
    with pytest.raises(OSError) as e:
        env.power(NIC, "hibernate")
    assert e.value.errno == errno.EINVAL
    assert env.read("root", NIC, "power") == "on\n"
    assert not any(line.startswith("suspend") for line in env.order())


def test_failing_hook_rolls_back_with_eio(env):
    # a real failure rolled back: tests/vm/guest/test_pm.sh (vm-pm), the NIC's
    # vfio-pci suspend failing ENOPKG in a walk of the guest's PCI hierarchy
    open(os.path.join(env.log, "fail.suspend.0000:04:00.1"), "w").close()
    with pytest.raises(OSError) as e:
        with open(env.d.path("power"), "w") as f:
            f.write("suspend")
    assert e.value.errno == errno.EIO
    for top, dirs, files in os.walk(env.d.path("root")):
        if "power" in files:
            with open(os.path.join(top, "power")) as f:
                assert f.read() == "on\n", top
    place = NIC[:-1] + "1"
    err = env.read("root", place, "power_error")
    assert err.startswith("suspend E"), err
    log = env.read("power_log").splitlines()
    failed = [line for line in log if line.split()[2] == place]
    assert failed and failed[0].split()[1] == "suspend" and failed[0].split()[3] != "ok"
    # the rollback resumed what had been suspended, after the failure
    fail_seq = int(failed[0].split()[0])
    resumed = [line.split()[2] for line in log if line.split()[1] == "resume"]
    suspended_ok = [line.split()[2] for line in log
                    if line.split()[1] == "suspend" and line.split()[3] == "ok"]
    assert sorted(resumed) == sorted(suspended_ok)
    assert all(int(line.split()[0]) > fail_seq for line in log if line.split()[1] == "resume")


def test_busy_while_a_transition_runs(env):
    gate = os.path.join(env.log, "gate")
    os.mkfifo(gate)
    started = os.path.join(env.log, "started")
    os.mkfifo(started)
    t, result = in_background(env.power, NIC, "suspend")
    # the hook is running now
    wait_started(started, what=lambda: f"the suspend: {result or 'still running'}")
    with pytest.raises(OSError) as e:
        with open(env.d.path("power"), "w") as f:
            f.write("resume")
    assert e.value.errno == errno.EBUSY
    with open(gate, "w") as f:
        f.write("go\n")
    t.join(30)
    assert result.get("errno") == 0
    assert env.read("root", NIC, "power") == "suspended\n"




def ctl(env, *args):
    import subprocess
    return subprocess.run([CTL, "-m", env.d.mnt, *args], capture_output=True, text=True)


def test_driverfsctl_dry_run_records_the_order_and_calls_nothing(env):
    r = ctl(env, "suspend", "--dry-run")
    assert r.returncode == 0, r.stderr
    lines = [line.split() for line in r.stdout.splitlines()]
    paths = [entry[2] for entry in lines]
    assert paths[-1] == "."  # root last, every device before it
    assert paths.index(NIC) < paths.index(os.path.dirname(NIC))
    assert not any(line.startswith("suspend") for line in env.order()), "a hook ran"
    assert env.read("root", NIC, "power") == "on\n"
    assert env.read("power") == "on\n"


def test_driverfsctl_by_bus_id_and_failure(env):
    r = ctl(env, "suspend", "0000:04:00.0")  # a bus id
    assert r.returncode == 0, r.stderr
    assert env.read("root", NIC, "power") == "suspended\n"
    assert [line.split()[2] for line in r.stdout.splitlines()][-1] == NIC
    r = ctl(env, "resume", "root/" + NIC)  # a path under root/
    assert r.returncode == 0, r.stderr
    assert env.read("root", NIC, "power") == "on\n"
    open(os.path.join(env.log, "fail.suspend.0000:04:00.0"), "w").close()
    r = ctl(env, "suspend", NIC)
    assert r.returncode == 1
    assert NIC in r.stderr and "(EIO)" in r.stderr, r.stderr
    assert env.read("root", NIC, "power") == "on\n"
    r = ctl(env, "suspend", "0000:99:00.0")
    assert r.returncode == 1 and r.stderr == "driverfsctl: 0000:99:00.0: no such device (ENOENT)\n"
    assert ctl(env, "frobnicate").returncode == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="trusted files must be root's")
def test_a_record_anyone_but_root_could_write_is_refused():
    """Issue 30 item 5: pci-pm's state in the transition record is the
    function's saved config header, which the start's recovery writes back.
    A record owned by another user (or writable by group or other) is
    refused with the reason, and nothing is written to the device; the same
    file, root's, is what a recovery writes (the threat is real)."""
    tmp = tempfile.TemporaryDirectory(prefix="driverfs-pm-")
    os.chmod(tmp.name, 0o755)
    config, _ = write_config(tmp.name)
    run = os.path.join(tmp.name, "run")
    os.mkdir(run, 0o755)
    record = os.path.join(run, "transition")
    crafted = {}

    def plant(root, owner):
        path = os.path.join(root, "sys", "devices", AST_BRIDGE, "config")
        with open(path, "rb") as f:
            cfg = f.read()
        crafted["before"] = cfg
        header = bytearray(cfg[:64])
        header[0x10:0x18] = b"\xaa" * 8  # BARs of the planter's choice
        with open(record, "w") as f:
            f.write(f"+/devices/{AST_BRIDGE}\n=pm=50,cfg={header.hex()} /devices/{AST_BRIDGE}\n")
        os.chown(record, owner, owner)

    try:
        d = Daemon(TESTBED, ["--config", config, "--transition-record", record],
                   prepare=lambda root: plant(root, 65534))
        try:
            sys_devices = os.path.join(d.testbed.get_root_dir(), "sys", "devices")
            with open(os.path.join(sys_devices, AST_BRIDGE, "config"), "rb") as f:
                assert f.read() == crafted["before"], "a refused record wrote config space"
            assert (f"{record}: refused, anyone but root could change it: the file is owned "
                    "by uid 65534, not root (mode 0644); nothing in it is resumed") in d.output()
            assert os.path.exists(record), "the refused record is left for root to look at"
            with open(d.path("root", AST_BRIDGE, "power")) as f:
                assert f.read().strip() == "on"
        finally:
            d.stop()

        # the same file, root's: the recovery writes its header
        d = Daemon(TESTBED, ["--config", config, "--transition-record", record],
                   prepare=lambda root: plant(root, 0))
        try:
            sys_devices = os.path.join(d.testbed.get_root_dir(), "sys", "devices")
            _, header = pci_pmcsr(sys_devices, AST_BRIDGE)
            assert header[0x10:0x18] == b"\xaa" * 8
            assert "refused" not in d.output()
        finally:
            d.stop()
    finally:
        tmp.cleanup()
