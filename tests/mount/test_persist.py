# SPDX-License-Identifier: LGPL-2.1-or-later
"""Persisted bindings (issue 17, docs/design.md §7.5): a request made with
persist is recorded in driverfsd.conf's PersistFile=; a new daemon applies
it at start (the "boot" here: the testbed put back as the kernel binds at
boot), and the daemon applies it again when the device is unplugged and
plugged back (the kernel binds its own driver before the add event);
the bindings file and driverfsctl bindings say whether each is in force;
--default --persist forgets it and restores the kernel's driver. The
kernel's side is tests/helpers/kbind.c's."""
import os
import subprocess

from harness import Daemon
from test_binding import IDS, NIC, NIC_PLACE, TESTBED, Kernel, add_drivers, request, state

CTL = os.environ.get("DRIVERFSCTL", "driverfsctl")
SYS_NIC = "sys/devices/" + NIC_PLACE


def native(testbed):
    """The NIC as the kernel leaves it at boot or plug: e1000e, no override."""
    root = testbed.get_root_dir()
    nic = os.path.join(root, SYS_NIC)
    for link in (os.path.join(nic, "driver"),
                 *(os.path.join(root, "sys/bus/pci/drivers", d, NIC)
                   for d in os.listdir(os.path.join(root, "sys/bus/pci/drivers")))):
        if os.path.lexists(link):
            os.unlink(link)
    os.symlink("../../../bus/pci/drivers/e1000e", os.path.join(nic, "driver"))
    os.symlink("../../../../devices/" + NIC_PLACE,
               os.path.join(root, "sys/bus/pci/drivers/e1000e", NIC))
    with open(os.path.join(nic, "driver_override"), "w") as f:
        f.write("(null)\n")
    with open(os.path.join(nic, "uevent")) as f:
        lines = [x for x in f.read().splitlines() if not x.startswith("DRIVER=")]
    with open(os.path.join(nic, "uevent"), "w") as f:
        f.write("\n".join(lines + ["DRIVER=e1000e"]) + "\n")


def start(tmp, k, conf, testbed=None):
    env = k.env(IDS)
    if testbed is None:
        d = Daemon(TESTBED, ["-c", conf], prepare=add_drivers, extra_env=env)
    else:
        d = Daemon(None, ["-c", conf], testbed=testbed, extra_env=env)
    k.testbed = d.testbed
    return d


def persisting(tmp_path, state_file):
    """A kernel and a daemon whose PersistFile= is @state_file; the config."""
    conf = str(tmp_path / "driverfsd.conf")
    with open(conf, "w") as f:
        f.write(f"[Binding]\nPersistFile={state_file}\n")
    k = Kernel(str(tmp_path))
    return k, start(str(tmp_path), k, conf), conf


def bindings(d):
    r = subprocess.run([CTL, "-m", d.mnt, "bindings"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def wait_event(d, action):
    d.wait_status(lambda line: line.startswith(f"STATUS=hotplug {action} /devices/{NIC_PLACE} "))


def test_a_persisted_binding_survives_a_restart_and_a_replug(tmp_path):
    state_file = str(tmp_path / "state" / "bindings")
    k, d, conf = persisting(tmp_path, state_file)
    k.thread.start()
    try:
        assert bindings(d) == ""
        r = subprocess.run([CTL, "-m", d.mnt, "bind", "--persist", NIC, "vfio-pci"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "persisted: yes" in r.stdout
        wait_event(d, "unbind")
        wait_event(d, "bind")
        with open(state_file) as f:
            assert f"pci {NIC} vfio-pci\n" in f.read()
        assert bindings(d) == f"pci {NIC} vfio-pci in-force\n"

        # a restart after a boot: the kernel bound e1000e again
        assert d.terminate() == 0
        testbed = d.testbed
        native(testbed)
        d = start(str(tmp_path), k, conf, testbed=testbed)
        assert state(d)[:2] == ("vfio-pci", "vfio-pci\n"), d.output()
        assert "persisted binding of 0000:00:1f.6 to vfio-pci applied" in d.output()
        wait_event(d, "unbind")
        wait_event(d, "bind")
        assert bindings(d) == f"pci {NIC} vfio-pci in-force\n"

        # unplugged, and plugged back: bound to e1000e by the kernel at add
        testbed.uevent("/" + SYS_NIC, "remove")
        wait_event(d, "remove")
        assert bindings(d) == f"pci {NIC} vfio-pci absent\n"
        native(testbed)
        testbed.uevent("/" + SYS_NIC, "add")
        wait_event(d, "add")
        assert state(d)[:2] == ("vfio-pci", "vfio-pci\n")
        wait_event(d, "unbind")
        wait_event(d, "bind")
        assert bindings(d) == f"pci {NIC} vfio-pci in-force\n"

        # forgotten: back to the kernel's driver
        r = subprocess.run([CTL, "-m", d.mnt, "bind", "--default", "--persist", NIC],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "persisted: forgotten" in r.stdout
        wait_event(d, "unbind")
        wait_event(d, "bind")
        assert state(d) == ("e1000e", "(null)\n", ["e1000e"], ["DRIVER=e1000e"])
        assert bindings(d) == ""
        with open(state_file) as f:
            assert NIC not in f.read()
        # a dry run persists nothing
        assert request(d, "vfio-pci dry-run persist") == 0
        assert bindings(d) == ""
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()


def test_a_state_file_anyone_could_change_is_not_applied(tmp_path):
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    os.chmod(str(tmp_path), 0o755)
    state_file = state_dir / "bindings"
    state_file.write_text(f"pci {NIC} vfio-pci\nnot a line\n")
    os.chmod(str(state_file), 0o666)
    k, d, conf = persisting(tmp_path, state_file)
    try:
        assert "writable by other" in d.output()
        assert state(d)[0] == "e1000e"
    finally:
        d.stop()


def test_a_state_file_that_is_not_a_regular_file_is_refused(tmp_path):
    """A fifo where the state file is to be written (no reader: the open
    blocked the binding forever) is refused with the reason and left a
    fifo: the binding is done, not persisted, and the daemon serves on."""
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    state_file = state_dir / "bindings"
    k, d, conf = persisting(tmp_path, state_file)
    k.thread.start()
    try:
        os.mkfifo(state_file)
        r = subprocess.run([CTL, "-m", d.mnt, "bind", "--persist", NIC, "vfio-pci"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0
        assert "persisted: no (not a regular file (a fifo))" in r.stdout, r.stdout + r.stderr
        assert (f"{state_file}: cannot record the binding of {NIC}: not a regular file (a fifo)"
                in d.output())
        assert os.path.exists(state_file) and not os.path.isfile(state_file)
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()
