# SPDX-License-Identifier: LGPL-2.1-or-later
"""Device links (issue 18, docs/design.md §3.5) on the ARM board testbed
(tests/testbeds/arm-board.umockdev: an RK3399 board whose platform devices
depend on clock, pinctrl, regulator, power-domain, iommu and PMIC
suppliers, often in other subtrees): every devlink the testbed has shows
as suppliers/ and consumers/ links and as its own device's supplier and
consumer links; a whole-system suspend takes every consumer before its
suppliers (the journal, checked against every link that orders), a
devlink device is never suspended; a supplier's subtree does not sleep
while a consumer outside it is awake; unbinding a supplier its bound
consumers depend on is refused; a devlink removed and added by hotplug
follows."""
import errno
import os
import re

from harness import Daemon, has_devpath, own

HERE = os.path.dirname(__file__)
TESTBED = os.path.join(HERE, "..", "testbeds", "arm-board.umockdev")


def records():
    """The testbed's records: {devpath: {"A": {...}, "L": {...}}}."""
    out = {}
    with open(TESTBED) as f:
        for block in f.read().split("\n\n"):
            lines = block.strip().splitlines()
            if not lines:
                continue
            rec = {"A": {}, "L": {}, "E": {}}
            for line in lines[1:]:
                kind, _, rest = line.partition(": ")
                if kind in rec:
                    k, _, v = rest.partition("=")
                    rec[kind][k] = v
            out[lines[0][3:]] = rec
    return out


RECORDS = records()
DEVLINKS = {p: r for p, r in RECORDS.items() if p.startswith("/devices/virtual/devlink/")}


def ends(path):
    """The devpaths a devlink record's supplier and consumer name."""
    rec = DEVLINKS[path]
    return tuple(os.path.normpath(os.path.join(path, rec["L"][k])) for k in ("supplier", "consumer"))


def orders(path):
    a = DEVLINKS[path]["A"]
    return a["sync_state_only"] == "0\\n" and a["status"] != "dormant\\n"


def place(d, devpath):
    """The device's directory in the mount, found by its devpath file."""
    for top, dirs, files in os.walk(d.path("root")):
        if has_devpath(files):
            with open(own(top, "devpath")) as f:
                if f.read().strip() == devpath:
                    return top
    raise AssertionError(f"{devpath} not in the mount")


def link_name(devpath):
    sub = RECORDS[devpath]["E"]["SUBSYSTEM"]
    return f"{sub}:{os.path.basename(devpath)}"


def journal(d):
    with open(d.path("power_log")) as f:
        return [line.split() for line in f.read().splitlines()]


def refused(path, text):
    """@text written to @path in one write: it must fail with EBUSY."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
        raise AssertionError(f"{text} to {path} was not refused")
    except OSError as e:
        assert e.errno == errno.EBUSY, e
    finally:
        os.close(fd)


def test_every_link_is_shown_and_orders_the_suspend(tmp_path):
    assert len(DEVLINKS) > 60
    d = Daemon(TESTBED)
    try:
        assert f"{len(DEVLINKS)} device links" in d.output()
        places = {}
        for path in DEVLINKS:
            for end in ends(path):
                if end not in places:
                    places[end] = place(d, end)
        for path in DEVLINKS:
            s, c = ends(path)
            sup = os.path.join(places[c], "suppliers", link_name(s))
            con = os.path.join(places[s], "consumers", link_name(c))
            assert os.path.realpath(sup) == places[s], path
            assert os.path.realpath(con) == places[c], path
            obj = d.path("root", "virtual", os.path.basename(path))
            assert os.path.realpath(os.path.join(obj, "supplier")) == places[s]
            assert os.path.realpath(os.path.join(obj, "consumer")) == places[c]
            with open(os.path.join(obj, "status")) as f:
                assert f.read() == DEVLINKS[path]["A"]["status"].replace("\\n", "\n")
        # a device with no links has neither directory
        leds = d.path("root", "platform", "gpio-keys")
        assert os.path.isdir(os.path.join(leds, "suppliers"))
        assert not os.path.exists(os.path.join(leds, "consumers"))
        spi = d.path("root", "platform", "ff1d0000.spi")
        assert not os.path.exists(os.path.join(spi, "consumers"))

        # the whole system, dry and for real: the same order, every link kept
        for how in ("suspend-dry-run", "suspend"):
            with open(d.path("power"), "w") as f:
                f.write(how)
            entries = journal(d)
            pos = {e[2]: int(e[0]) for e in entries if e[1] == "suspend"}
            assert not any(p.startswith("virtual/platform:") or p.startswith("virtual/i2c:")
                           for p in pos), "a devlink device was suspended"
            rel = {p: os.path.relpath(places[p], d.path("root")) for p in places}
            checked = 0
            for path in DEVLINKS:
                if not orders(path):
                    continue
                s, c = ends(path)
                assert pos[rel[c]] < pos[rel[s]], (how, path)
                checked += 1
            assert checked == len([p for p in DEVLINKS if orders(p)])
        # resume: suppliers first
        with open(d.path("power"), "w") as f:
            f.write("resume")
        pos = {e[2]: int(e[0]) for e in journal(d) if e[1] == "resume"}
        for path in DEVLINKS:
            if orders(path):
                s, c = ends(path)
                assert pos[rel[s]] < pos[rel[c]], ("resume", path)
    finally:
        d.stop()


def test_a_supplier_waits_for_its_consumers_and_is_kept_bound(tmp_path):
    d = Daemon(TESTBED)
    try:
        vcc = d.path("root", "platform", "vcc-sd")
        # fe320000.mmc, in another subtree, is awake: refused, the journal
        # names it
        refused(os.path.join(vcc, "power"), "suspend")
        assert ["1", "consumer", "platform/fe320000.mmc", "EBUSY", "0"] in journal(d)
        with open(os.path.join(vcc, "power")) as f:
            assert f.read() == "on\n"
        # the consumer first, then the supplier
        with open(d.path("root", "platform", "fe320000.mmc", "power"), "w") as f:
            f.write("suspend")
        with open(os.path.join(vcc, "power"), "w") as f:
            f.write("suspend")
        with open(os.path.join(vcc, "power")) as f:
            assert f.read() == "suspended\n"

        # unbinding the clock controller: every bound consumer over a
        # managed link is a reason (a dry run: nothing written)
        cru = d.path("root", "platform", "ff760000.clock-controller")
        refused(os.path.join(cru, "binding"), "none dry-run")
        with open(os.path.join(cru, "binding")) as f:
            report = f.read()
        assert "in use: platform:fe300000.ethernet (bound to rk_gmac-dwmac) depends on it " \
               "through a device link" in report, report
        n = len(re.findall(r"depends on it through a device link", report))
        assert n == len([p for p in DEVLINKS if os.path.basename(p).startswith(
            "platform:ff760000.clock-controller--")])
    finally:
        d.stop()


def test_a_devlink_removed_and_added_follows(tmp_path):
    d = Daemon(TESTBED)
    try:
        path = "/devices/virtual/devlink/platform:vcc-sd--platform:fe320000.mmc"
        sup = d.path("root", "platform", "fe320000.mmc", "suppliers", "platform:vcc-sd")
        assert os.path.islink(sup)
        block = next(b for b in open(TESTBED).read().split("\n\n") if b.startswith("P: " + path))
        d.testbed.uevent("/sys" + path, "remove")
        d.wait_status(lambda line: line.startswith(f"STATUS=hotplug remove {path} "))
        assert not os.path.lexists(sup)
        assert "platform:vcc-sd" not in os.listdir(
            d.path("root", "platform", "fe320000.mmc", "suppliers"))
        d.testbed.uevent("/sys" + path, "add")
        d.wait_status(lambda line: line.startswith(f"STATUS=hotplug add {path} "))
        assert os.path.islink(sup)
        assert block
    finally:
        d.stop()


def test_info_and_dot_show_the_links(tmp_path):
    import json
    import subprocess
    ctl = os.environ.get("DRIVERFSCTL", "driverfsctl")
    d = Daemon(TESTBED)
    try:
        r = subprocess.run([ctl, "-m", d.mnt, "info", "--json", "fe320000.mmc"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["suppliers"] == ["platform/ff3c0000.i2c/i2c-0/0-001b",
                                    "platform/ff760000.clock-controller", "platform/pinctrl",
                                    "platform/vcc-sd"], doc["suppliers"]
        assert doc["consumers"] == []
        r = subprocess.run([ctl, "-m", d.mnt, "info", "vcc-sd"], capture_output=True, text=True)
        assert "consumers            platform/fe320000.mmc\n" in r.stdout, r.stdout
        assert "suppliers            platform/pinctrl/ff790000.gpio4\n" \
               "                     platform/vcc3v3-sys\n" in r.stdout, r.stdout

        r = subprocess.run([ctl, "-m", d.mnt, "dot"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        edges = [x for x in r.stdout.splitlines() if "color=blue" in x]
        assert len(edges) == len(DEVLINKS), len(edges)
        assert '  "platform/vcc-sd" -> "platform/fe320000.mmc" [style=dashed' in r.stdout
        # --pm-order numbers the dry run's order, links included
        r = subprocess.run([ctl, "-m", d.mnt, "dot", "--pm-order"], capture_output=True, text=True)
        steps = dict(re.findall(r'"([^"]+)" \[label="[^"]*suspend #(\d+)', r.stdout))
        assert int(steps["platform/fe320000.mmc"]) < int(steps["platform/vcc-sd"])
        assert int(steps["platform/ff9a0000.gpu"]) < \
            int(steps["platform/ff3c0000.i2c/i2c-0/0-001b"])
    finally:
        d.stop()


def test_snapshots_save_and_load_the_links(tmp_path):
    """driverfsd --save and driverfsctl save write the same "links"; the
    snapshot's mount shows every link again, with its devlink device's ends,
    and saves back to the same bytes."""
    import json
    import subprocess
    import gi
    gi.require_version("UMockdev", "1.0")
    from gi.repository import UMockdev
    from harness import CTL, DAEMON, umockdev_env
    tb = UMockdev.Testbed.new()
    assert tb.add_from_file(TESTBED)
    first = str(tmp_path / "first.json")
    r = subprocess.run([DAEMON, "--save", first], env=umockdev_env(tb), capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    with open(first) as f:
        doc = json.load(f)
    assert len(doc["links"]) == len(DEVLINKS)
    assert {"supplier": "platform/vcc-sd", "consumer": "platform/fe320000.mmc"} in doc["links"]
    # load and save again: the same bytes
    second = str(tmp_path / "second.json")
    r = subprocess.run([DAEMON, "--snapshot", first, "--save", second], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    with open(first, "rb") as a, open(second, "rb") as b:
        assert a.read() == b.read()
    # served: the links are there, and driverfsctl saves the same file
    snap = Daemon(None, ["--snapshot", first])
    try:
        mmc = snap.path("root", "platform", "fe320000.mmc")
        assert sorted(os.listdir(os.path.join(mmc, "suppliers"))) == [
            "i2c:0-001b", "platform:ff760000.clock-controller", "platform:pinctrl",
            "platform:vcc-sd"]
        obj = snap.path("root", "virtual", "platform:vcc-sd--platform:fe320000.mmc")
        assert os.path.realpath(os.path.join(obj, "consumer")) == mmc
        third = str(tmp_path / "third.json")
        r = subprocess.run([CTL, "-m", snap.mnt, "save", third], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        with open(first, "rb") as a, open(third, "rb") as b:
            assert a.read() == b.read()
    finally:
        snap.stop()
    # a link that would make a cycle is refused with the file and its place
    doc["links"].append({"supplier": "platform/fe320000.mmc", "consumer": "platform/vcc-sd"})
    bad = str(tmp_path / "bad.json")
    with open(bad, "w") as f:
        json.dump(doc, f)
    r = subprocess.run([DAEMON, "--snapshot", bad, "--save", bad + ".out"], capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert f"links[{len(DEVLINKS)}]: platform/fe320000.mmc -> platform/vcc-sd: it would make " \
           "a cycle" in r.stderr, r.stderr


GPU_TESTBED = os.path.join(HERE, "..", "testbeds", "gpu-audio.umockdev")
GPU = "pci0000:00/0000:00:01.1/0000:01:00.0"
AUDIO = "pci0000:00/0000:00:01.1/0000:01:00.1"


def test_a_gpu_and_its_audio_function(tmp_path):
    """The HDMI audio function consumes its GPU over a stateless link with
    runtime PM: it suspends first and resumes last, the GPU alone does not
    sleep under it, and (stateless: not the driver core's) it is no reason
    against unbinding the GPU."""
    d = Daemon(GPU_TESTBED)
    try:
        assert os.path.realpath(d.path("root", AUDIO, "suppliers", "pci:0000:01:00.0")) == \
            d.path("root", GPU)
        assert os.listdir(d.path("root", GPU, "consumers")) == ["pci:0000:01:00.1"]
        with open(d.path("power"), "w") as f:
            f.write("suspend-dry-run")
        order = [e[2] for e in journal(d) if e[1] == "suspend"]
        assert order.index(AUDIO) < order.index(GPU) < order.index("pci0000:00/0000:00:01.1")
        # the GPU alone: refused while its audio function is awake
        refused(d.path("root", GPU, "power"), "suspend")
        assert ["1", "consumer", AUDIO, "EBUSY", "0"] in journal(d)
        # the root port's subtree holds both: one walk, audio first
        with open(d.path("root", "pci0000:00/0000:00:01.1", "power"), "w") as f:
            f.write("suspend")
        order = [e[2] for e in journal(d) if e[1] == "suspend"]
        assert order.index(AUDIO) < order.index(GPU)
        with open(d.path("root", "pci0000:00/0000:00:01.1", "power"), "w") as f:
            f.write("resume")
        order = [e[2] for e in journal(d) if e[1] == "resume"]
        assert order.index(GPU) < order.index(AUDIO)
        fd = os.open(d.path("root", GPU, "binding"), os.O_WRONLY)
        try:
            os.write(fd, b"none dry-run")
        finally:
            os.close(fd)
        with open(d.path("root", GPU, "binding")) as f:
            report = f.read()
        assert "device link" not in report and "plan: unbind from amdgpu" in report, report
    finally:
        d.stop()


def test_a_link_that_wakes_up_orders_the_next_walk(tmp_path):
    """status changes without an event: a dormant link (the pwm-regulator
    vdd-log, no driver yet) orders nothing; once sysfs says active, the next
    walk takes the GPU before its supplier."""
    d = Daemon(TESTBED)
    try:
        def order():
            with open(d.path("power"), "w") as f:
                f.write("suspend-dry-run")
            return [e[2] for e in journal(d) if e[1] == "suspend"]
        gpu, vdd = "platform/ff9a0000.gpu", "platform/vdd-log"
        o = order()
        assert o.index(vdd) < o.index(gpu)  # the list's order: no link between them
        status = os.path.join(d.testbed.get_root_dir(), "sys/devices/virtual/devlink",
                              "platform:vdd-log--platform:ff9a0000.gpu", "status")
        with open(status, "w") as f:
            f.write("active\n")
        o = order()
        assert o.index(gpu) < o.index(vdd)
    finally:
        d.stop()


def test_a_forced_unbind_of_a_supplier_takes_its_consumers_first(tmp_path):
    """vcc-sd supplies fe320000.mmc over a managed link: unbinding it is
    refused while the MMC controller is bound; forced, the kernel (kbind
    plays it) unbinds the consumer first, then the supplier, and the tree
    follows both."""
    from test_binding import Kernel
    k = Kernel(str(tmp_path))
    d = Daemon(TESTBED, extra_env=k.env(""))
    k.serve(d)
    try:
        vcc = d.path("root", "platform", "vcc-sd")
        mmc = d.path("root", "platform", "fe320000.mmc")
        refused(os.path.join(vcc, "binding"), "none")
        with open(os.path.join(vcc, "binding")) as f:
            assert "in use: platform:fe320000.mmc (bound to dwmmc_rockchip) depends on it" \
                in f.read()
        fd = os.open(os.path.join(vcc, "binding"), os.O_WRONLY)
        try:
            os.write(fd, b"none force")
        finally:
            os.close(fd)
        for place in ("platform/fe320000.mmc", "platform/vcc-sd"):
            d.wait_status(lambda line, p=place: line.startswith(
                f"STATUS=hotplug unbind /devices/{p} "))
        for dev in (vcc, mmc):
            assert not os.path.exists(os.path.join(dev, "kernel_driver")), dev
            assert not os.path.lexists(os.path.join(dev, "driver")), dev
        with open(os.path.join(vcc, "binding")) as f:
            assert "forced: proceeding although in use" in f.read()
    finally:
        k.stopped = True
        k.thread.join()
        d.stop()
