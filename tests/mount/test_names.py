# SPDX-License-Identifier: LGPL-2.1-or-later
"""The kernel's names come first (docs/design.md §6.1, §6.2), on
tests/testbeds/names.umockdev: devices named like every file driverfsd adds,
at the top of /sys/devices (the RAPL PMU `power` of every x86 machine, and
PMUs called name, power_log, power_error, metrics, bindings) and below a
device (platform devices called name, binding, pm, suppliers ...), kernel
attributes named like driverfsd's files, and vtcon0's bind. Every device is
in the tree once, at its place, and its bus link leads to it; driverfsd's
own entries step aside to driverfs:<name>; the whole system's files are at
the top of the mount; PM, driverfsctl, hotplug and snapshots follow."""
import json
import os
import subprocess

import pytest

from harness import CTL, DAEMON, Daemon, has_devpath, own, parse_testbed, umockdev_env
from hotplug_util import event, remove_devices, wait_event
from test_snapshot import tree

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "names.umockdev")
EXPECTED = os.path.join(HERE, "..", "testbeds", "names.expected")
TOP_PMUS = ["bindings", "metrics", "name", "power", "power_error", "power_log"]
SOC = "platform/soc"
BELOW = ["binding", "consumers", "devnode", "devpath", "kernel_driver", "name", "pm",
         "power_error", "power_log", "suppliers"]


@pytest.fixture(scope="module")
def d():
    daemon = Daemon(TESTBED)
    yield daemon
    daemon.stop()


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def places(d):
    """{devpath: [paths under root/]} of every device directory in the mount,
    found by driverfsd's own devpath file, wherever it is."""
    out = {}
    root = d.path("root")
    for top, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith("driverfs:")]
        if top != root and has_devpath(files):
            out.setdefault(read(own(top, "devpath")).strip(), []).append(
                os.path.relpath(top, root))
    return out


def expected_devices():
    with open(EXPECTED) as f:
        return [line.split("\t")[0] for line in f if not line.startswith("#")]


def ctl(d, *args):
    return subprocess.run([CTL, "-m", d.mnt, *args], capture_output=True, text=True)


def test_the_whole_systems_files_are_at_the_top_and_root_holds_devices(d):
    assert sorted(os.listdir(d.mnt)) == ["bindings", "bus", "class", "devices_deferred",
                                         "metrics", "name", "power", "power_error", "power_log",
                                         "root"]
    assert sorted(os.listdir(d.path("root"))) == sorted(TOP_PMUS + ["platform", "virtual"])
    assert read(d.path("power")) == "on\n"
    assert read(d.path("power_error")) == ""
    assert "driverfsd_devices " in read(d.path("metrics"))
    for name in TOP_PMUS:
        assert os.path.isdir(d.path("root", name)), name
        # a PMU of its own: its perf type, and driverfsd's files beside it
        assert read(d.path("root", name, "type")).strip().isdigit(), name
        assert read(d.path("root", name, "power")) == "on\n", name
    assert read(d.path("root", "power", "events", "energy-pkg")) == "event=0x02\n"


def test_every_device_once_in_its_place_and_its_bus_link_leads_there(d):
    found = places(d)
    records = parse_testbed(TESTBED)
    for devpath in expected_devices():
        if devpath not in records:
            continue  # /devices/platform: a device of no subsystem, checked by its children
        where = found.get(devpath, [])
        assert len(where) == 1, f"{devpath}: expected once in the tree, found at {where}"
        rel = devpath[len("/devices/"):]
        # glue directories (misc/, vtconsole/) are left out
        rel = rel.replace("/misc/", "/").replace("virtual/vtconsole/", "virtual/")
        assert where[0] == rel, f"{devpath} is at root/{where[0]}"
        sub = records[devpath]["props"].get("SUBSYSTEM")
        if sub in ("event_source", "platform"):
            link = d.path("bus", sub, "devices", os.path.basename(devpath))
            assert os.path.realpath(link) == os.path.realpath(d.path("root", rel)), link
            assert os.readlink(own(d.path("root", rel), "subsystem")).endswith("bus/" + sub)


def test_driverfsds_entries_step_aside(d):
    soc = d.path("root", SOC)
    listed = os.listdir(soc)
    for name in BELOW:
        assert listed.count(name) == 1, name
        assert os.path.isdir(os.path.join(soc, name)) and \
            read(own(os.path.join(soc, name), "devpath")).strip() == "/devices/" + SOC + "/" + name
    # driverfsd's own entries of those names, beside them
    for name in ("binding", "devpath", "kernel_driver", "name", "pm", "power_error"):
        assert "driverfs:" + name in listed, name
        assert own(soc, name) == os.path.join(soc, "driverfs:" + name)
    # where no child has the name, driverfsd's keeps it
    assert "power" in listed and "driverfs:power" not in listed
    assert read(os.path.join(soc, "driverfs:devpath")) == "/devices/" + SOC + "\n"
    assert read(os.path.join(soc, "driverfs:kernel_driver")) == "simple-pm-bus\n"
    assert "runtime_status" in os.listdir(os.path.join(soc, "driverfs:pm"))
    assert read(os.path.join(soc, "driverfs:binding")).startswith("bound to simple-pm-bus")
    assert read(os.path.join(soc, "driverfs:power_error")) == ""
    # soc/binding: its child binding (a misc device out of its glue) and
    # its own binding file
    b = os.path.join(soc, "binding")
    assert os.path.isdir(os.path.join(b, "binding"))
    assert read(os.path.join(b, "binding", "dev")) == "10:120\n"
    assert read(os.path.join(b, "driverfs:binding")).startswith("no driver")
    # the kernel's attributes named like driverfsd's files: the kernel's
    n = os.path.join(soc, "name")
    assert read(os.path.join(n, "name")) == "soc-hwmon\n"
    assert read(os.path.join(n, "power_error")) == "0\n"
    assert read(os.path.join(n, "driverfs:power_error")) == ""
    assert read(os.path.join(n, "driverfs:name"))
    # a console's bind: the kernel's value, read-only
    vt = d.path("root", "virtual", "vtcon0")
    assert read(os.path.join(vt, "bind")) == "1\n"
    assert os.stat(os.path.join(vt, "bind")).st_mode & 0o222 == 0
    assert read(os.path.join(vt, "name")) == "(S) dummy device\n"
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(soc, "driverfs:driverfs:name"))


def test_driverfsctl_finds_each_device_and_its_files(d):
    r = ctl(d, "list")
    assert r.returncode == 0, r.stderr
    listed = r.stdout.split()
    for name in TOP_PMUS:
        assert name in listed
    for name in BELOW:
        assert f"{SOC}/{name}" in listed
    assert f"{SOC}/binding/binding" in listed
    r = ctl(d, "info", "--json", SOC)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["driver"] == "simple-pm-bus" and doc["subsystem"] == "platform"
    assert doc["files"]["driverfs:devpath"] == "/devices/" + SOC
    # a bus id: the PMU called power, not a file
    r = ctl(d, "info", "--json", "power")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["path"] == "power"
    r = ctl(d, "tree", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)


def journal(d):
    return [line.split() for line in read(d.path("power_log")).splitlines()]


def test_whole_system_and_subtree_pm_name_them(d):
    r = ctl(d, "suspend", "--dry-run")
    assert r.returncode == 0, r.stderr
    suspended = [f[2] for f in journal(d) if f[1] == "suspend"]
    expect = {p[len("/devices/"):].replace("/misc/", "/").replace("virtual/vtconsole/",
                                                                    "virtual/")
              for p in expected_devices()}
    assert expect <= set(suspended), sorted(expect - set(suspended))
    assert suspended[-1] == "."
    # children first: soc/binding/binding before soc/binding before soc
    order = {p: i for i, p in enumerate(suspended)}
    assert order[f"{SOC}/binding/binding"] < order[f"{SOC}/binding"] < order[SOC]
    # a real transition of the whole system, and back
    with open(d.path("power"), "w") as f:
        f.write("suspend")
    assert read(d.path("root", "power", "power")) == "suspended\n"
    assert read(own(d.path("root", SOC), "power")) == "suspended\n"
    with open(d.path("power"), "w") as f:
        f.write("resume")
    assert read(d.path("root", "power", "power")) == "on\n"
    # the subtree of a device whose child is called binding
    r = ctl(d, "suspend", f"{SOC}/binding")
    assert r.returncode == 0, r.stderr
    assert read(d.path("root", SOC, "binding", "power")) == "suspended\n"
    assert read(d.path("root", SOC, "binding", "binding", "power")) == "suspended\n"
    assert read(d.path("root", SOC, "name", "power")) == "on\n"
    r = ctl(d, "resume", f"{SOC}/binding")
    assert r.returncode == 0, r.stderr
    assert read(d.path("root", SOC, "binding", "binding", "power")) == "on\n"


def test_a_snapshot_round_trip_keeps_every_name(d, tmp_path):
    """driverfsd --save and driverfsctl save of the machine write the same
    bytes, and the snapshot's mount shows what the live one did, each
    device at its place and each driverfs: name where it was."""
    import gi
    gi.require_version("UMockdev", "1.0")
    from gi.repository import UMockdev
    tb = UMockdev.Testbed.new()
    assert tb.add_from_file(TESTBED)
    saved, read_back = tmp_path / "daemon.json", tmp_path / "ctl.json"
    r = subprocess.run([DAEMON, "--save", str(saved)], env=umockdev_env(tb),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = ctl(d, "save", str(read_back))
    assert r.returncode == 0, r.stderr
    assert saved.read_bytes() == read_back.read_bytes()
    doc = json.loads(saved.read_text())
    by_path = {dev["path"]: dev for dev in doc["devices"]}
    # the kernel's name and driverfsd's description, each under its own name
    assert by_path[f"{SOC}/name"]["files"]["name"]["text"] == "soc-hwmon\n"
    assert "driverfs:name" in by_path[f"{SOC}/name"]["values"]
    assert "driverfs:name" in by_path[SOC]["values"] and "name" not in by_path[SOC]["values"]
    assert "power" in by_path and by_path[""]["path"] == ""
    snap = Daemon(None, ["--snapshot", str(saved)])
    try:
        live, kept = tree(d.mnt), tree(snap.mnt)
    finally:
        snap.stop()
    assert set(live) == set(kept), sorted(set(live) ^ set(kept))[:10]
    differ = [p for p in live if live[p] != kept[p]]
    assert differ == [], [(p, live[p], kept[p]) for p in differ[:5]]


def test_a_snapshot_of_the_old_names_loads(tmp_path):
    """A snapshot written when the kernel's name was saved as sysfs:name
    (and driverfsd's under name) loads into today's names."""
    doc = {"format": "driverfs-snapshot", "version": 2, "buses": [{"name": "platform", "drivers": []}], "classes": [],
           "devices": [
               {"path": "", "power": "on", "values": {"name": "old-machine"}},
               {"path": "hwmon0", "devpath": "/devices/hwmon0", "bus": "platform",
                "power": "on", "values": {"name": "Description", "sysfs:name": "coretemp",
                                          "sysfs:devpath": "1.2"}}]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    snap = Daemon(None, ["--snapshot", str(path)])
    try:
        dev = snap.path("root", "hwmon0")
        assert read(os.path.join(dev, "name")) == "coretemp\n"
        assert read(os.path.join(dev, "driverfs:name")) == "Description\n"
        assert read(os.path.join(dev, "devpath")) == "1.2\n"
        assert read(os.path.join(dev, "driverfs:devpath")) == "/devices/hwmon0\n"
        assert "sysfs:name" not in os.listdir(dev)
        assert read(snap.path("name")) == "old-machine\n"
    finally:
        snap.stop()


def test_hotplug_moves_driverfsds_entry_aside_and_back(tmp_path):
    """A child device called devpath appears below soc/devpath: the name is
    the child's at once (the kernel's cached entry dropped) and driverfsd's
    file is driverfs:devpath; the child gone, the file has its name back."""
    daemon = Daemon(TESTBED)
    try:
        parent = daemon.path("root", SOC, "devpath")
        mine = "/devices/" + SOC + "/devpath"
        assert read(os.path.join(parent, "devpath")) == mine + "\n"  # cached by the kernel
        child = mine + "/misc/devpath"
        assert daemon.testbed.add_from_string(
            f"P: {child}\nE: DEVNAME=/dev/devpath\nE: MAJOR=10\nE: MINOR=121\n"
            "E: SUBSYSTEM=misc\nA: dev=10:121\\n\n")
        wait_event(daemon, "add", child)
        assert os.path.isdir(os.path.join(parent, "devpath"))
        assert read(os.path.join(parent, "driverfs:devpath")) == mine + "\n"
        assert read(own(os.path.join(parent, "devpath"), "devpath")) == child + "\n"
        assert os.path.realpath(daemon.path("class", "misc", "devices", "devpath")) == \
            os.path.realpath(os.path.join(parent, "devpath"))
        event(daemon, "remove", child)
        remove_devices(daemon.testbed, [child])
        assert read(os.path.join(parent, "devpath")) == mine + "\n"
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(parent, "driverfs:devpath"))
    finally:
        daemon.stop()
