# SPDX-License-Identifier: LGPL-2.1-or-later
"""driverfsctl through real mounts: save (the same bytes driverfsd --save
writes, read from the mount's files alone), the --json output of every
listing command, the --bus/--class filters, dot --pm-order, error messages
and exit statuses. Expectations come from the mount's files and links read
here directly, or from driverfsd itself, never from driverfsctl."""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile

import gi
import pytest

from harness import CTL, DAEMON, Daemon, umockdev_env

gi.require_version("UMockdev", "1.0")
from gi.repository import UMockdev  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBEDS = os.path.join(HERE, "..", "testbeds")
EXAMPLE = os.path.join(TESTBEDS, "2002-example.umockdev")
ALL_TESTBEDS = sorted(glob.glob(os.path.join(TESTBEDS, "*.umockdev")) +
                      glob.glob(os.path.join(TESTBEDS, "real", "*.umockdev")))


def ctl(mnt, *args):
    return subprocess.run([CTL, "-m", mnt, *args], capture_output=True, text=True)


def daemon_save(testbed, out):
    """driverfsd --save of @testbed into @out."""
    tb = UMockdev.Testbed.new()
    assert tb.add_from_file(testbed)
    r = subprocess.run([DAEMON, "--save", out], env=umockdev_env(tb), capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


@pytest.fixture
def tmp():
    t = tempfile.TemporaryDirectory(prefix="driverfs-ctl-")
    yield t.name
    t.cleanup()


# ---- save ----

@pytest.mark.parametrize("testbed", ALL_TESTBEDS, ids=os.path.basename)
def test_save_of_a_snapshot_mount_is_the_snapshot(testbed, tmp):
    first, second = os.path.join(tmp, "first.json"), os.path.join(tmp, "second.json")
    daemon_save(testbed, first)
    snap = Daemon(None, ["--snapshot", first])
    try:
        r = ctl(snap.mnt, "save", second)
        assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stderr
    finally:
        snap.stop()
    with open(first, "rb") as a, open(second, "rb") as b:
        assert a.read() == b.read(), f"driverfsctl save differs from driverfsd --save ({testbed})"


@pytest.mark.parametrize("testbed", [EXAMPLE, os.path.join(TESTBEDS, "server-2dom.umockdev"),
                                     os.path.join(TESTBEDS, "usb-tree.umockdev")],
                         ids=os.path.basename)
def test_save_of_a_live_mount_is_what_the_daemon_saves(testbed, tmp):
    first = os.path.join(tmp, "first.json")
    daemon_save(testbed, first)
    d = Daemon(testbed)
    try:
        r = ctl(d.mnt, "save", "-")
    finally:
        d.stop()
    assert r.returncode == 0, r.stderr
    with open(first) as f:
        expected = f.read()
    assert r.stdout == expected
    doc = json.loads(r.stdout)
    # what the mount had to expose for it: driver kinds and priorities, kernel drivers
    drivers = {drv["name"]: drv for bus in doc["buses"] for drv in bus["drivers"]}
    assert drivers["pci-pm"] == {"name": "pci-pm", "kind": "user", "priority": 50}
    assert any(dev.get("kernel_driver") for dev in doc["devices"])


def test_saved_file_loads_and_saves_again_identically(tmp):
    first, second, third = (os.path.join(tmp, n) for n in ("1.json", "2.json", "3.json"))
    daemon_save(EXAMPLE, first)
    snap = Daemon(None, ["--snapshot", first])
    try:
        assert ctl(snap.mnt, "save", second).returncode == 0
    finally:
        snap.stop()
    r = subprocess.run([DAEMON, "--snapshot", second, "--save", third], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    with open(second, "rb") as a, open(third, "rb") as b:
        assert a.read() == b.read()


# ---- the other commands, on the 2002 example ----

@pytest.fixture(scope="module")
def d():
    daemon = Daemon(EXAMPLE)
    yield daemon
    daemon.stop()


def links(d, *parts):
    """{link name: device path under root/} of a bus or class listing."""
    out = {}
    base = d.path(*parts)
    for name in os.listdir(base):
        target = os.path.relpath(os.path.realpath(os.path.join(base, name)), d.path("root"))
        out[name] = "" if target == "." else target
    return out


def all_devices(d):
    """Every device path under root/ ("" for root), found by walking the mount."""
    found = [""]
    for top, dirs, _ in os.walk(d.path("root")):
        for name in dirs:
            if os.path.isfile(os.path.join(top, name, "power")):
                rel = os.path.relpath(os.path.join(top, name), d.path("root"))
                found.append(rel)
    return found


def ancestors(path):
    out = [""]
    parts = path.split("/")
    for i in range(1, len(parts)):
        out.append("/".join(parts[:i]))
    return out


def test_list_and_tree_show_the_files_named_by_o(d):
    """-o NAME,...: an inventory in one command (the USB devices' ids here,
    which are sysfs attributes); a device without a file shows nothing."""
    usb = set(links(d, "bus", "usb", "devices").values())
    r = ctl(d.mnt, "list", "--bus", "usb", "-o", "idVendor,nosuchfile")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split()[0] for line in lines] == \
        [p for p in ctl(d.mnt, "list").stdout.split() if p in usb]
    shown = 0
    for line in lines:
        path, *fields = line.split("  ")
        assert not any(f.startswith("nosuchfile=") for f in fields), line
        want = os.path.join(d.mnt, "root", path, "idVendor")
        if os.path.exists(want):
            with open(want) as f:
                assert fields == ["idVendor=" + f.read().strip()], line
            shown += 1
        else:
            assert fields == [], line
    assert shown > 0
    doc = json.loads(ctl(d.mnt, "list", "--bus=usb", "-oidVendor,nosuchfile", "--json").stdout)
    assert all(set(dev["attributes"]) == {"idVendor", "nosuchfile"} for dev in doc)
    assert all(dev["attributes"]["nosuchfile"] is None for dev in doc)
    tree = ctl(d.mnt, "tree", "--bus", "usb", "--output=idVendor")
    assert tree.returncode == 0 and "idVendor=" in tree.stdout, tree.stderr
    for bad in ("../x", "a,,b", ",a", ""):
        r = ctl(d.mnt, "list", "-o", bad)
        assert r.returncode == 2, (bad, r.stdout, r.stderr)


def test_list_filtered_by_bus_keeps_the_global_order(d):
    usb = set(links(d, "bus", "usb", "devices").values())
    assert usb
    full = ctl(d.mnt, "list").stdout.split()
    r = ctl(d.mnt, "list", "--bus", "usb")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [p for p in full if p in usb]
    listed = json.loads(ctl(d.mnt, "list", "--bus=usb", "--json").stdout)
    assert [e["path"] for e in listed] == r.stdout.split()
    assert all(e["match"] is True for e in listed)


def test_tree_filtered_by_class_keeps_ancestors(d):
    inputs = set(links(d, "class", "input", "devices").values())
    kept = inputs | {a for p in inputs for a in ancestors(p)}
    r = ctl(d.mnt, "tree", "--class", "input", "--json")
    assert r.returncode == 0, r.stderr
    seen = {}

    def visit(node, parent):
        path = "" if node["path"] == "." else node["path"]
        assert os.path.dirname(path) == parent or parent is None, (path, parent)
        seen[path] = node["match"]
        for child in node["children"]:
            visit(child, path)
    visit(json.loads(r.stdout), None)
    assert set(seen) == kept
    assert {p for p, m in seen.items() if m} == inputs
    # text: the same devices, one per line; an ancestor kept for the shape
    # shows its directory name alone, a match its name too
    text = ctl(d.mnt, "tree", "--class", "input").stdout.splitlines()
    assert len(text) == len(kept) and text[0] == "root", text
    assert "`-- LNXSYSTM:00" in text or "|-- LNXSYSTM:00" in text, text
    button = [line for line in text if line.lstrip("|` -").startswith("input0")]
    assert len(button) == 1 and button[0].endswith("-- input0  Power Button"), text
    full = ctl(d.mnt, "tree").stdout.splitlines()
    assert len(full) == len(all_devices(d)) and full[0].startswith("root  ")


def test_filters_combine(d):
    # a device has one subsystem: --bus and --class together give either's devices
    usb = set(links(d, "bus", "usb", "devices").values())
    inputs = set(links(d, "class", "input", "devices").values())
    full = ctl(d.mnt, "list").stdout.split()
    r = ctl(d.mnt, "list", "--bus", "usb", "--class", "input")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [p for p in full if p in usb | inputs]


def test_info_json_is_the_files(d):
    path = "LNXSYSTM:00/LNXPWRBN:00/input0/event0"
    r = ctl(d.mnt, "info", path, "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["path"] == path
    assert info["subsystem"] == "input" and info["driver"] is None
    assert info["interface"] == "input/event"
    files = {}
    base = d.path("root", path)
    for top, dirs, names in os.walk(base):
        dirs[:] = [x for x in dirs if not os.path.isfile(os.path.join(top, x, "power"))]
        for n in names:
            rel = os.path.relpath(os.path.join(top, n), base)
            if os.path.islink(os.path.join(top, n)):
                continue
            try:
                with open(os.path.join(top, n), "rb") as f:
                    b = f.read()
            except PermissionError:
                continue
            b = b[:-1] if b.endswith(b"\n") else b
            try:
                v = b.decode() if b"\0" not in b else None
            except UnicodeDecodeError:
                v = None  # binary: null
            files[rel] = v
    assert info["files"] == files
    bound = json.loads(ctl(d.mnt, "info", "0000:00:07.2", "--json").stdout)
    assert bound["driver"] == "uhci_hcd" and bound["subsystem"] == "pci"
    assert bound["files"]["kernel_driver"] == "uhci_hcd"
    assert bound["interface"] is None


def test_dot_filtered_and_pm_order(d):
    listed = ctl(d.mnt, "list").stdout.split()
    r = ctl(d.mnt, "dot", "--pm-order")
    assert r.returncode == 0, r.stderr
    steps = {}
    for m in re.finditer(r'^  "([^"]*)" \[label="[^"]*\\nsuspend #(\d+)"', r.stdout, re.M):
        steps[int(m.group(2))] = "" if m.group(1) == "root" else m.group(1)
    # a dry run suspends children first: the global order backwards
    order = [steps[i] for i in sorted(steps)]
    assert order == [("" if p == "." else p) for p in reversed(listed)]
    # and its journal is what dot read
    with open(d.path("power_log")) as f:
        journal = [line.split()[2] for line in f]
    assert [("" if p == "." else p) for p in journal] == order
    pm_edges = [line for line in r.stdout.splitlines() if "color=red" in line]
    assert len(pm_edges) == len(listed) - 1
    filtered = ctl(d.mnt, "dot", "--bus", "usb")
    nodes = re.findall(r'^  "([^"]*)" \[', filtered.stdout, re.M)
    usb = set(links(d, "bus", "usb", "devices").values())
    kept = usb | {a for p in usb for a in ancestors(p)}
    assert {"" if n == "root" else n for n in nodes} == kept
    dashed = {n for n in re.findall(r'^  "([^"]*)" \[.*style=dashed', filtered.stdout, re.M)}
    assert {"" if n == "root" else n for n in dashed} == kept - usb
    if shutil.which("dot"):
        for out in (r.stdout, filtered.stdout):
            svg = subprocess.run(["dot", "-Tsvg"], input=out, capture_output=True, text=True)
            assert svg.returncode == 0 and "<svg" in svg.stdout, svg.stderr


def test_suspend_json_is_the_journal(d):
    r = ctl(d.mnt, "suspend", "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    entries = json.loads(r.stdout)
    with open(d.path("power_log")) as f:
        lines = [line.split() for line in f]
    assert [[str(e["seq"]), e["phase"], e["path"], e["result"], str(e["usec"])]
            for e in entries] == lines
    assert entries[-1]["path"] == "." and all(e["result"] == "ok" for e in entries)


def test_pm_order_on_a_read_only_snapshot(tmp):
    snapshot = os.path.join(tmp, "s.json")
    daemon_save(EXAMPLE, snapshot)
    snap = Daemon(None, ["--snapshot", snapshot])
    try:
        listed = ctl(snap.mnt, "list").stdout.split()
        r = ctl(snap.mnt, "dot", "--pm-order")
        assert r.returncode == 0, r.stderr
        steps = {int(m.group(2)): m.group(1) for m in re.finditer(
            r'^  "([^"]*)" \[label="[^"]*\\nsuspend #(\d+)"', r.stdout, re.M)}
        order = [steps[i] for i in sorted(steps)]
        assert order == ["root" if p == "." else p for p in reversed(listed)]
        # it wrote nothing: a suspend there fails as the file system is read-only
        r = ctl(snap.mnt, "suspend", "--dry-run")
        assert r.returncode == 1 and r.stderr.endswith("(EROFS)\n"), r.stderr
    finally:
        snap.stop()


# ---- errors ----

def test_errors_name_the_device_and_errno(d, tmp):
    for args in (["info", "0000:00:1f.3"], ["tree", "0000:00:1f.3"],
                 ["suspend", "0000:00:1f.3", "--dry-run"], ["info", "pci0000:00/nothing"]):
        r = ctl(d.mnt, *args)
        dev = args[1]
        assert (r.returncode, r.stdout, r.stderr) == \
            (1, "", f"driverfsctl: {dev}: no such device (ENOENT)\n"), args
    r = ctl(d.mnt, "list", "--bus", "nosuchbus")
    assert (r.returncode, r.stderr) == (1, "driverfsctl: bus/nosuchbus: no such bus (ENOENT)\n")
    r = ctl(d.mnt, "tree", "--class", "nosuchclass")
    assert (r.returncode, r.stderr) == \
        (1, "driverfsctl: class/nosuchclass: no such class (ENOENT)\n")
    r = ctl(d.mnt, "info", "../etc")
    assert r.returncode == 1 and r.stderr.endswith("(EINVAL)\n"), r.stderr
    r = ctl(tmp, "list")
    assert r.returncode == 1 and \
        r.stderr == f"driverfsctl: {tmp}: not a driverfs mount: no power file at its top (ENOENT)\n"
    r = ctl(d.mnt, "save", os.path.join(tmp, "no", "such", "dir.json"))
    assert r.returncode == 1 and "dir.json" in r.stderr and r.stderr.endswith("(ENOENT)\n")
    assert not os.path.exists(os.path.join(tmp, "no"))


@pytest.mark.parametrize("args", [["frobnicate"], ["list", "extra"], ["list", "--frob"],
                                  ["info"], ["info", "a", "b"], ["tree", "--bus"],
                                  ["dot", "--json"], ["save"], ["save", "a", "b"],
                                  ["suspend", "--pm-order"], ["list", "--class="]])
def test_bad_usage_exits_2(d, args):
    r = ctl(d.mnt, *args)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith("driverfsctl: "), \
        (args, r.returncode, r.stderr)


def test_help_and_man_page_name_every_command_and_option():
    r = subprocess.run([CTL, "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    with open(os.path.join(HERE, "..", "..", "man", "driverfsctl.8.in")) as f:
        man = f.read().replace("\\-", "-")
    for word in ("list", "tree", "info", "dot", "suspend", "resume", "save", "--json",
                 "--bus", "--class", "--pm-order", "--dry-run", "ENOENT"):
        assert word in r.stdout, word
        assert word in man, word


# What a device string may hold that a terminal acts on (issue 30 item 2):
# ESC sequences (OSC retitles the window, CSI clears the screen), other C0
# controls, DEL, C1 controls encoded in UTF-8 (U+009B is CSI to a terminal
# that reads UTF-8), and bytes that are not UTF-8 (0x9b alone is CSI to an
# 8-bit one).
HOSTILE_TEXT = "a\x1b]0;owned\x07b\x1b[2Jc\x01\x7fd\u009be\u0085f\rg\x08h"
HOSTILE_BYTES = HOSTILE_TEXT.encode() + b"\x9b\xff\xc3(i"


def raw_controls(out):
    """The bytes of @out a terminal would act on or that are not text:
    C0 controls but newline, DEL, C1 controls (alone or UTF-8 encoded), and
    any byte past ASCII (the escaped output is ASCII)."""
    return sorted({b for b in out if (b < 0x20 and b != 0x0a) or b >= 0x7f})


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A snapshot of the 2002 example whose devices say HOSTILE_TEXT: a USB
    device's name, product and a value of several lines; a file of
    HOSTILE_BYTES (not text: shown as binary by info, as its first line by
    list -o); its driver's name; served by driverfsd --snapshot."""
    tmp = tmp_path_factory.mktemp("hostile")
    snap = str(tmp / "s.json")
    daemon_save(EXAMPLE, snap)
    with open(snap) as f:
        doc = json.load(f)
    usb = [dv for dv in doc["devices"] if dv.get("bus") == "usb" and "product" in
           dv.get("values", {})][0]
    usb["values"]["name"] = HOSTILE_TEXT
    usb["values"]["product"] = HOSTILE_TEXT
    usb["values"]["multi"] = "first\x1b[31m\nsecond\x07\n\x9b"
    usb["files"] = dict(usb.get("files", {}))
    import base64
    usb["files"]["raw"] = {"mode": "0444",
                           "base64": base64.b64encode(HOSTILE_BYTES + b"\n").decode()}
    with open(snap, "w") as f:
        json.dump(doc, f)
    d = Daemon(None, ["--snapshot", snap])
    yield d, usb["path"]
    d.stop()


def run_bytes(mnt, *args):
    r = subprocess.run([CTL, "-m", mnt, *args], capture_output=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_device_strings_reach_the_terminal_escaped(hostile):
    d, place = hostile
    with open(d.path("root", place, "product"), "rb") as f:
        assert f.read() == HOSTILE_TEXT.encode() + b"\n"  # served as it came
    escaped = ("a\\x1b]0;owned\\x07b\\x1b[2Jc\\x01\\x7fd\\xc2\\x9be\\xc2\\x85f\\x0dg"
               "\\x08h")
    for args in (["info", place], ["tree"], ["tree", place], ["list", "-o", "product,raw"],
                 ["tree", "-o", "raw,name"]):
        out = run_bytes(d.mnt, *args)
        assert raw_controls(out) == [], (args, raw_controls(out))
        assert escaped.encode() in out, (args, out)
    info = run_bytes(d.mnt, "info", place).decode()
    assert f"product: {escaped}\n" in info, info
    # a value of several lines: each escaped, indented below the first
    assert "multi: first\\x1b[31m\n    second\\x07\n    \\xc2\\x9b\n" in info, info
    assert "raw: (binary, " in info  # not text
    # list -o: the first line, its invalid bytes escaped one by one
    out = run_bytes(d.mnt, "list", "-o", "raw").decode()
    assert f"raw={escaped}\\x9b\\xff\\xc3(i\n" in out, out
    # --json keeps the exact text
    doc = json.loads(run_bytes(d.mnt, "info", "--json", place))
    assert doc["files"]["product"] == HOSTILE_TEXT
    doc = json.loads(run_bytes(d.mnt, "list", "--json", "-o", "product"))
    assert [x for x in doc if x["path"] == place][0]["name"] == HOSTILE_TEXT
    assert [x for x in doc if x["path"] == place][0]["attributes"]["product"] == HOSTILE_TEXT
