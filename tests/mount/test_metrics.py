# SPDX-License-Identifier: LGPL-2.1-or-later
"""the metrics file and driverfsctl metrics (issue 19 item 3, docs/design.md
§6.8) on the USB tree testbed: the text parsed by prometheus_client's parser
and checked line by line against the format's rules (families whole, TYPE
and HELP first, no timestamps, counters ending in _total); every gauge
equal to what the mount's own listings and links say; PM transitions,
hotplug events, binding requests and FUSE requests counted as they happen;
driverfsctl metrics FILE replaced whole, and saying driverfsd_up 0 when the
mount cannot be read; a snapshot's mount serves the file and a save leaves
it out."""
import errno
import json
import os
import re
import signal
import stat
import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness import CTL, DAEMON, Daemon, has_devpath, own
from hotplug_util import HUB2, KBD, TESTBED, blocks, devpath, under, wait_event, without

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{" + LABEL + r"(?:," + LABEL + r")*\})? "
                    r"(\S+)$")


def check_format(text):
    """The format's rules, beyond what the parser checks: each family's
    HELP and TYPE before its samples, its samples together, no timestamp,
    values that are numbers; counters named *_total. Returns {family: type}."""
    assert text.endswith("\n")
    types, done, current = {}, set(), None
    helped = set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split()[2]
            assert NAME.match(name) and name not in helped, line
            helped.add(name)
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name in helped and name not in types, line
            assert kind in ("counter", "gauge", "histogram"), line
            if current:
                done.add(current)
            types[name], current = kind, name
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample (or has a timestamp): {line!r}"
        float(m.group(3))
        name = m.group(1)
        family = name
        if types.get(current) == "histogram":
            family = re.sub(r"_(bucket|sum|count)$", "", name)
        assert family == current and family not in done, f"{line!r} outside its family"
    for name, kind in types.items():
        assert (kind == "counter") == name.endswith("_total"), name
    return types


def parse(text):
    """{(name, frozenset(labels)): value} of every sample, by prometheus_client."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples, name, **labels):
    return samples[(name, frozenset(labels.items()))]


def metrics(d):
    with open(d.path("metrics")) as f:
        text = f.read()
    check_format(text)
    return parse(text)


@pytest.fixture
def d(tmp_path):
    daemon = Daemon(without(tmp_path, KBD))
    yield daemon
    daemon.stop()


def listing(d, *parts):
    return os.listdir(d.path(*parts))


def test_the_gauges_are_what_the_mount_shows(d):
    s = metrics(d)
    devices = 0
    for top, dirs, files in os.walk(d.path("root")):
        dirs[:] = [x for x in dirs if os.path.exists(os.path.join(top, x, "power"))]
        devices += top != d.path("root")
    assert value(s, "driverfsd_devices") == devices
    assert value(s, "driverfsd_devices_suspended") == 0
    assert value(s, "driverfsd_devices_power_errors") == 0
    for bus in listing(d, "bus"):
        names = listing(d, "bus", bus, "devices")
        assert value(s, "driverfsd_bus_devices", bus=bus) == len(names), bus
        unbound = [n for n in names
                   if not os.path.lexists(d.path("bus", bus, "devices", n, "driver"))
                   and not os.path.exists(d.path("bus", bus, "devices", n, "kernel_driver"))]
        assert value(s, "driverfsd_bus_devices_unbound", bus=bus) == len(unbound), bus
        for drv in listing(d, "bus", bus, "drivers"):
            ddir = d.path("bus", bus, "drivers", drv)
            bound = [n for n in listing(d, "bus", bus, "drivers", drv)
                     if os.path.islink(os.path.join(ddir, n))]
            with open(os.path.join(ddir, "kind")) as f:
                kind = "kernel" if f.read().strip() == "kernel" else "user"
            assert value(s, "driverfsd_driver_devices", bus=bus, driver=drv,
                         kind=kind) == len(bound), (bus, drv)
    for cls in listing(d, "class"):
        n = len(listing(d, "class", cls, "devices"))
        assert value(s, "driverfsd_class_devices", **{"class": cls}) == n, cls
    assert value(s, "driverfsd_build_info", version=subprocess.run(
        [DAEMON, "--version"], capture_output=True, text=True).stdout.split()[-1]) == 1


def test_memory_is_the_daemons(d):
    # resident memory as /proc has it, and the heap's use within it
    def resident():
        with open(f"/proc/{d.proc.pid}/status") as f:
            return 1024 * int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))
    before = resident()
    s = metrics(d)
    after = resident()
    rss = value(s, "process_resident_memory_bytes")
    assert min(before, after) * 0.8 <= rss <= max(before, after) * 1.25, (before, rss, after)
    in_use = value(s, "driverfsd_heap_bytes", state="in_use")
    free = value(s, "driverfsd_heap_bytes", state="free")
    assert 0 < in_use < rss and free >= 0, (in_use, free, rss)


def test_nodes_are_what_the_kernel_holds(d):
    # the node table follows the kernel's lookups: a walk adds a node for
    # each directory it went into, at least
    before = value(metrics(d), "driverfsd_fuse_nodes")
    dirs = sum(1 for _ in os.walk(d.path("root")))
    after = value(metrics(d), "driverfsd_fuse_nodes")
    assert after >= before + dirs - 1 and before >= 1, (before, dirs, after)


def test_counters_follow_what_happens(d):
    before = metrics(d)
    # PM: a real suspend and resume of a hub's subtree, and a dry run
    hub = None
    for top, dirs, files in os.walk(d.path("root")):
        if has_devpath(files) and open(own(top, "devpath")).read().strip() == HUB2:
            hub = top
    assert hub
    for word in ("suspend", "resume", "suspend-dry-run"):
        with open(os.path.join(hub, "power"), "w") as f:
            f.write(word)
    mid = metrics(d)
    for req in ("suspend", "resume", "suspend-dry-run"):
        key = dict(request=req, result="ok")
        assert value(mid, "driverfsd_pm_transitions_total", **key) == \
            value(before, "driverfsd_pm_transitions_total", **key) + 1, req
        assert value(mid, "driverfsd_pm_transition_duration_seconds_count", request=req) == \
            value(before, "driverfsd_pm_transition_duration_seconds_count", request=req) + 1
        assert value(mid, "driverfsd_pm_transition_duration_seconds_bucket", request=req,
                     le="+Inf") == \
            value(mid, "driverfsd_pm_transition_duration_seconds_count", request=req)
    assert value(mid, "driverfsd_pm_transition_duration_seconds_sum", request="suspend") > 0
    # a bad word is no transition
    with pytest.raises(OSError):
        with open(os.path.join(hub, "power"), "w") as f:
            f.write("sleep")
    # hotplug: the keyboard plugged in, one add per device
    added = [b for b in blocks(TESTBED) if under(b, KBD)]
    for b in added:
        assert d.testbed.add_from_string(b + "\n")
        wait_event(d, "add", devpath(b))
    # binding: a dry run is not counted, a refused request is (no such
    # driver is invalid)
    iface = [n for n in listing(d, "bus", "usb", "devices") if n.startswith("1-1.2.1:")][0]
    r = subprocess.run([CTL, "-m", d.mnt, "bind", "--dry-run", iface, "usbfs"],
                       capture_output=True, text=True)
    r = subprocess.run([CTL, "-m", d.mnt, "bind", iface, "no_such_driver"],
                       capture_output=True, text=True)
    assert r.returncode != 0
    after = metrics(d)
    assert value(after, "driverfsd_hotplug_events_total", action="add") == \
        value(mid, "driverfsd_hotplug_events_total", action="add") + len(added)
    assert value(after, "driverfsd_bus_devices", bus="usb") > \
        value(before, "driverfsd_bus_devices", bus="usb")
    assert value(after, "driverfsd_binding_requests_total", result="invalid") == \
        value(before, "driverfsd_binding_requests_total", result="invalid") + 1
    assert value(after, "driverfsd_binding_requests_total", result="ok") == \
        value(before, "driverfsd_binding_requests_total", result="ok")
    assert value(after, "driverfsd_pm_transitions_total", request="suspend", result="ok") == \
        value(mid, "driverfsd_pm_transitions_total", request="suspend", result="ok")
    # FUSE: every read of the file is a request, and so were the walks
    assert value(after, "driverfsd_fuse_requests_total", operation="read") > \
        value(before, "driverfsd_fuse_requests_total", operation="read")
    assert value(after, "driverfsd_fuse_requests_total", operation="lookup") > 0
    assert value(after, "driverfsd_hotplug_rescans_total", reason="overrun") == 0
    assert value(after, "driverfsd_config_reloads_total", result="ok") == 0
    # SIGHUP: a reload counted
    d.proc.send_signal(signal.SIGHUP)
    d.wait_status(lambda line: line == "STATUS=reloaded" or line.startswith("STATUS=reload "))
    assert value(metrics(d), "driverfsd_config_reloads_total", result="ok") == 1


def test_a_stat_builds_nothing_and_a_read_is_current(d):
    # issue 30 item 3b: each stat of the file, which any user may make,
    # built the whole text to measure it; now a stat gives the last
    # text's length and builds nothing, while every read still builds a
    # current text (the daemon counts its builds: "metrics N times" in
    # its log at exit)
    first = metrics(d)
    for _ in range(50):
        assert os.stat(d.path("metrics")).st_size > 0
    # a read after the stats is current: the 50 getattrs are counted
    later = metrics(d)
    assert value(later, "driverfsd_fuse_requests_total", operation="getattr") >= \
        value(first, "driverfsd_fuse_requests_total", operation="getattr") + 50
    # whole, whatever size a stat gave (direct_io): it ends with a newline
    # after the last family
    with open(d.path("metrics")) as f:
        text = f.read()
    assert len(text) >= os.stat(d.path("metrics")).st_size - 64
    check_format(text)
    built, = d.counted_at_exit(r"metrics (\d+) times", "the metrics file's builds")
    # the three reads' (and the first stat's, before any read): the old
    # code built one per stat, 50 more
    assert built <= 4, built


def test_driverfsctl_metrics_prints_and_writes_a_file(d, tmp_path):
    r = subprocess.run([CTL, "-m", d.mnt, "metrics"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# HELP driverfsd_up ")
    types = check_format(r.stdout)
    assert types["driverfsd_up"] == "gauge"
    s = parse(r.stdout)
    assert value(s, "driverfsd_up") == 1
    assert value(s, "driverfsd_bus_devices", bus="usb") > 0
    # a file for node_exporter's textfile collector: replaced whole, 0644
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    out = textfile / "driverfsd.prom"
    out.write_text("stale\n")
    r = subprocess.run([CTL, "-m", d.mnt, "metrics", str(out)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "", r.stderr
    assert oct(out.stat().st_mode & 0o777) == "0o644"
    check_format(out.read_text())
    assert value(parse(out.read_text()), "driverfsd_up") == 1
    assert [p.name for p in textfile.iterdir()] == ["driverfsd.prom"]  # no temporary left
    # no mount: the file says the daemon is down, not the last figures
    r = subprocess.run([CTL, "-m", str(textfile), "metrics", str(out)], capture_output=True,
                       text=True)
    assert r.returncode == 1
    assert f"{textfile}/metrics" in r.stderr and "ENOENT" in r.stderr, r.stderr
    assert parse(out.read_text()) == {("driverfsd_up", frozenset()): 0.0}
    # no mount, standard output: nothing but the error
    r = subprocess.run([CTL, "-m", str(textfile), "metrics"], capture_output=True, text=True)
    assert r.returncode == 1 and r.stdout == ""
    r = subprocess.run([CTL, "-m", d.mnt, "metrics", "a", "b"], capture_output=True, text=True)
    assert r.returncode == 2


def test_driverfsctl_metrics_refuses_what_is_not_a_regular_file(d, tmp_path):
    """A fifo planted where the file is to be (no reader: the open blocked
    forever), a character device (/dev/null) or a directory are refused
    with the reason, at once, and left as they were; the file's directory
    is left without a temporary."""
    tmp_path = tmp_path / "textfile"
    tmp_path.mkdir()
    fifo = tmp_path / "driverfsd.prom"
    os.mkfifo(fifo)
    for target, kind in ((fifo, "a fifo"), ("/dev/null", "a character device"),
                         (tmp_path, "a directory")):
        r = subprocess.run([CTL, "-m", d.mnt, "metrics", str(target)], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 1 and r.stdout == "", r.stderr
        assert f"{target}: not a regular file ({kind})" in r.stderr, r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["driverfsd.prom"]
    # a link of the caller's to a fifo is refused as the fifo
    os.symlink(fifo, tmp_path / "link.prom")
    r = subprocess.run([CTL, "-m", d.mnt, "metrics", str(tmp_path / "link.prom")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "not a regular file (a fifo)" in r.stderr, r.stderr


def test_the_file_is_read_only_and_only_the_roots(d):
    st = os.stat(d.path("metrics"))
    assert oct(st.st_mode & 0o777) == "0o444"
    # root may open it for writing (as sysfs's read-only files); no write
    # is taken
    with pytest.raises(OSError) as e:
        with open(d.path("metrics"), "w") as f:
            f.write("0\n")
    assert e.value.errno == errno.EACCES
    for top, dirs, files in os.walk(d.path("root")):
        if top != d.path("root"):
            assert "metrics" not in files, top


def test_a_snapshots_mount_serves_it_and_a_save_leaves_it_out(d, tmp_path):
    saved = tmp_path / "saved.json"
    r = subprocess.run([CTL, "-m", d.mnt, "save", str(saved)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(saved.read_text())
    assert "metrics" not in doc["devices"][0].get("values", {})
    assert "metrics" not in doc["devices"][0].get("files", {})
    snap = Daemon(None, ["--snapshot", str(saved)])
    try:
        s = metrics(snap)
        live = metrics(d)
        for key, v in live.items():
            if key[0] in ("driverfsd_devices", "driverfsd_bus_devices",
                          "driverfsd_class_devices"):
                assert s[key] == v, key
        # no PM engine, monitor or binding on a snapshot: their families
        # are not there
        assert not any(k[0].startswith(("driverfsd_pm_", "driverfsd_hotplug_",
                                        "driverfsd_binding_")) for k in s)
        assert value(s, "driverfsd_fuse_requests_total", operation="read") >= 1
    finally:
        snap.stop()
