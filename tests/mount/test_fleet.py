# SPDX-License-Identifier: LGPL-2.1-or-later
"""Metrics fleets already read (issue 34 item 2, docs/design.md §6.8), on the
server testbed: the metrics file's per-device PCI families, named and
labelled as node_exporter's pcidevice collector names its own (under
driverfsd's prefix), with what it does not have: what both ends of a link
can do, whether it is degraded, AER counts by severity and the names that
join a PCI address to a network interface, an NVMe controller, a disk and a
NUMA node; each value checked against the testbed. Then the real thing:
Debian's promtool checks the text, `driverfsctl metrics FILE` writes it for
Debian's node_exporter's textfile collector, a Prometheus on localhost
scrapes node_exporter, and its HTTP API answers the families, a degraded
link included."""
import json
import re
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness import CTL, Daemon, aer_correctable

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "..", "testbeds", "server-2dom.umockdev")
D1 = "/sys/devices/pci0001:00"
DS1B = D1 + "/0001:00:02.0/0001:01:00.0/0001:02:01.0"
NVME1 = DS1B + "/0001:04:00.0"
CX5 = "/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0/0000:02:10.0/0000:04:00.0"
NVME1_LOC = {"segment": "0001", "bus": "04", "device": "00", "function": "0"}
CX5_LOC = {"segment": "0000", "bus": "04", "device": "00", "function": "0"}


@pytest.fixture
def d():
    daemon = Daemon(TESTBED)
    yield daemon
    daemon.stop()


def samples(text):
    """{family: {frozenset(labels): value}}"""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return out


def one(got, name, **labels):
    hits = [v for k, v in got.get(name, {}).items() if set(labels.items()) <= k]
    assert len(hits) == 1, (name, labels, hits)
    return hits[0]


def info(got, **loc):
    hits = [dict(k) for k in got["driverfsd_pcidevice_info"] if set(loc.items()) <= k]
    assert len(hits) == 1, hits
    return hits[0]


def test_pci_families_as_node_exporter_names_them(d):
    tb = d.testbed
    for dev in (NVME1, DS1B):
        tb.set_attribute(dev, "current_link_speed", "2.5 GT/s PCIe\n")
    # the kernel's AER text (the vm tier's tests/vm/guest/test_aer.sh reads
    # the metrics against real counts, raised with aer_inject)
    tb.set_attribute(CX5, "aer_dev_correctable", aer_correctable(RxErr=2, BadTLP=1))
    tb.set_attribute(CX5, "aer_dev_nonfatal", "Undefined 0\nDLP 0\nTOTAL_ERR_NONFATAL 0\n")
    tb.set_attribute(CX5, "aer_dev_fatal", "Undefined 0\nDLP 0\nTOTAL_ERR_FATAL 0\n")
    got = samples(open(d.path("metrics")).read())
    # the info metric: node_exporter's labels, then the joins
    nic = info(got, **CX5_LOC)
    assert nic == {**CX5_LOC, "parent_segment": "0000", "parent_bus": "02",
                   "parent_device": "10", "parent_function": "0", "class_id": "0x020000",
                   "vendor_id": "0x15b3", "device_id": "0x1017",
                   "subsystem_vendor_id": "0x15b3", "subsystem_device_id": "0x0020",
                   "revision": "0x00", "driver": "mlx5_core", "numa_node": "0",
                   "netdev": "enp4s0f0np0", "nvme": "", "block": ""}, nic
    drive = info(got, **NVME1_LOC)
    assert (drive["nvme"], drive["driver"], drive["numa_node"]) == ("nvme1", "nvme", "1"), drive
    # a root port's parent is the host bridge, no PCI function: "*"
    rp = info(got, segment="0000", bus="00", device="02", function="0")
    assert rp["parent_bus"] == "*", rp
    # the links: the function's own, and both ends'
    assert one(got, "driverfsd_pcidevice_current_link_transfers_per_second", **NVME1_LOC) == 2.5e9
    assert one(got, "driverfsd_pcidevice_max_link_transfers_per_second", **NVME1_LOC) == 8e9
    assert one(got, "driverfsd_pcidevice_link_capable_transfers_per_second", **NVME1_LOC) == 8e9
    assert one(got, "driverfsd_pcidevice_current_link_width", **NVME1_LOC) == 4
    assert one(got, "driverfsd_pcidevice_link_degraded", **NVME1_LOC) == 1
    assert one(got, "driverfsd_pcidevice_link_degraded", **CX5_LOC) == 0
    # a drive that can do 16 GT/s behind an 8 GT/s port: its own max, and
    # what the link can do
    nvme0 = {"segment": "0000", "bus": "03", "device": "00", "function": "0"}
    assert one(got, "driverfsd_pcidevice_max_link_transfers_per_second", **nvme0) == 16e9
    assert one(got, "driverfsd_pcidevice_link_capable_transfers_per_second", **nvme0) == 8e9
    assert one(got, "driverfsd_pcidevice_link_degraded", **nvme0) == 0
    # AER by severity: counters, where the kernel has the files
    assert one(got, "driverfsd_pcidevice_aer_correctable_errors_total", **CX5_LOC) == 3
    assert one(got, "driverfsd_pcidevice_aer_fatal_errors_total", **CX5_LOC) == 0
    assert not [k for k in got.get("driverfsd_pcidevice_aer_correctable_errors_total", {})
                if ("bus", "03") in k]
    assert one(got, "driverfsd_pcidevice_numa_node", **NVME1_LOC) == 1
    # bounded: one series per PCI function per family
    n_pci = len(os.listdir(d.path("bus", "pci", "devices")))
    for name, series in got.items():
        if name.startswith("driverfsd_pcidevice_"):
            assert len(series) <= n_pci, (name, len(series), n_pci)
    assert len(got["driverfsd_pcidevice_info"]) == n_pci


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[0]} exited {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read().decode()
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"no answer from {url}")


def tools():
    found = [shutil.which(t) for t in ("promtool", "prometheus", "prometheus-node-exporter")]
    if not all(found):
        if os.environ.get("CI"):
            pytest.fail("CI installs prometheus and prometheus-node-exporter (scripts/dev.sh)")
        pytest.skip("prometheus or prometheus-node-exporter not installed")
    return found


def test_node_exporter_and_prometheus_read_them(d):
    promtool, prometheus, node_exporter = tools()
    text = open(d.path("metrics")).read()
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    for dev in (NVME1, DS1B):
        d.testbed.set_attribute(dev, "current_link_speed", "2.5 GT/s PCIe\n")
    with tempfile.TemporaryDirectory(prefix="driverfs-fleet-") as tmp:
        textdir = os.path.join(tmp, "textfile")
        os.mkdir(textdir)
        r = subprocess.run([CTL, "-m", d.mnt, "metrics", os.path.join(textdir, "driverfsd.prom")],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        ne_port, prom_port = free_port(), free_port()
        ne = subprocess.Popen([node_exporter, "--collector.disable-defaults",
                               "--collector.textfile",
                               f"--collector.textfile.directory={textdir}",
                               f"--web.listen-address=127.0.0.1:{ne_port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n"
                    "  - job_name: node\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{ne_port}']\n")
        prom = subprocess.Popen([prometheus, f"--config.file={cfg}",
                                 f"--storage.tsdb.path={os.path.join(tmp, 'data')}",
                                 f"--web.listen-address=127.0.0.1:{prom_port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            exported = wait_http(f"http://127.0.0.1:{ne_port}/metrics", ne)
            # node_exporter took the file whole: no textfile error
            assert "driverfsd_pcidevice_info{" in exported
            assert 'node_textfile_scrape_error 0' in exported, exported[-2000:]
            query = ('driverfsd_pcidevice_link_degraded'
                     '{segment="0001",bus="04",device="00",function="0"}')
            url = (f"http://127.0.0.1:{prom_port}/api/v1/query?" +
                   urllib.parse.urlencode({"query": query}))
            deadline = time.monotonic() + 120
            result = []
            while time.monotonic() < deadline and not result:
                try:
                    doc = json.loads(wait_http(url, prom))
                    result = doc["data"]["result"]
                except (OSError, KeyError, ValueError):
                    pass
                if not result:
                    time.sleep(0.5)
            assert result and result[0]["value"][1] == "1", result
            assert result[0]["metric"]["job"] == "node"
            url = (f"http://127.0.0.1:{prom_port}/api/v1/query?" +
                   urllib.parse.urlencode({"query": 'count(driverfsd_pcidevice_info)'}))
            doc = json.loads(wait_http(url, prom))
            n_pci = len(os.listdir(d.path("bus", "pci", "devices")))
            assert doc["data"]["result"][0]["value"][1] == str(n_pci), doc
        finally:
            for p in (prom, ne):
                p.terminate()
                p.wait(30)


# NFD's label names after its prefix, and values (k8s label syntax)
NFD_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def nfd_testbed(tmp_path):
    """The server testbed with the first I350 port and the first ConnectX-5
    port on vfio-pci (the I350's sibling, in its IOMMU group, still on
    igb), and the ConnectX-5 port with SR-IOV (4 of 8 VFs)."""
    blocks = open(TESTBED).read().split("\n\n")
    for i, b in enumerate(blocks):
        first = b.split("\n", 1)[0]
        if first.endswith("/0000:07:00.0"):
            blocks[i] = b.replace("igb", "vfio-pci")
        elif first.endswith("/0000:04:00.0"):
            blocks[i] = (b.replace("mlx5_core", "vfio-pci") +
                         "\nA: sriov_totalvfs=8\\n\nA: sriov_numvfs=4\\n")
    path = tmp_path / "server-nfd.umockdev"
    path.write_text("\n\n".join(blocks))
    return str(path)


def test_nfd_feature_file(tmp_path):
    """driverfsctl nfd FILE (issue 34 item 3): NFD's local-source format,
    per PCI class and vendor what NFD's own pci source does not say; the
    file written through a dot-file renamed over it, and not at all when
    nothing changed."""
    d = Daemon(nfd_testbed(tmp_path))
    try:
        assert open(d.path("bus", "pci", "devices", "0000:07:00.0", "kernel_driver")).read() \
            == "vfio-pci\n"
        feat = tmp_path / "features.d"
        feat.mkdir()
        out = feat / "driverfsd"
        r = subprocess.run([CTL, "-m", d.mnt, "nfd", str(out)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        lines = out.read_text().splitlines()
        labels = dict(l.split("=", 1) for l in lines if not l.startswith("#"))
        assert labels == {
            "driverfsd.pci-0200_8086.vfio-pci": "1",
            "driverfsd.pci-0200_8086.vfio-pci-viable": "0",  # igb holds its sibling
            "driverfsd.pci-0200_15b3.vfio-pci": "1",
            "driverfsd.pci-0200_15b3.vfio-pci-viable": "1",
            "driverfsd.pci-0200_15b3.sriov-numvfs": "4",
            "driverfsd.pci-0200_15b3.sriov-totalvfs": "8",
        }, labels
        for name, value in labels.items():
            assert NFD_NAME.match(name) and NFD_NAME.match(value), (name, value)
        assert out.stat().st_size < 64 * 1024
        assert os.listdir(feat) == ["driverfsd"]  # no temporary left
        # nothing changed: nothing written (the same inode, not replaced)
        ino = out.stat().st_ino
        r = subprocess.run([CTL, "-m", d.mnt, "nfd", str(out)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and out.stat().st_ino == ino, r.stderr
        # a link degrades: the labels follow
        for dev in (NVME1, DS1B):
            d.testbed.set_attribute(dev, "current_link_speed", "2.5 GT/s PCIe\n")
        r = subprocess.run([CTL, "-m", d.mnt, "nfd", "-"], capture_output=True, text=True,
                           timeout=60)
        assert "driverfsd.pci-0108_8086.link-degraded=1" in r.stdout.splitlines(), r.stdout
        assert "driverfsd.pci-link-degraded=true" in r.stdout.splitlines()
        r = subprocess.run([CTL, "-m", d.mnt, "nfd", str(out)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and out.stat().st_ino != ino
        assert "driverfsd.pci-link-degraded=true" in out.read_text()
        assert sorted(os.listdir(feat)) == ["driverfsd"]
    finally:
        d.stop()


def nfd_writes(d):
    got = samples(open(d.path("metrics")).read())
    return {dict(k)["result"]: v for k, v in got["driverfsd_nfd_writes_total"].items()}


def wait_until(what, check, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"not seen in {timeout} s: {what}")


def test_the_daemon_keeps_the_feature_file_current(tmp_path):
    """[Fleet] NfdFile= (issue 34 item 3): the daemon writes the same text
    as driverfsctl nfd once it serves, again after the uevents that can
    change it (not on a timer), and not at all when the text is the same."""
    from hotplug_util import wait_event
    feat = tmp_path / "features.d"
    feat.mkdir()
    out = feat / "driverfsd"
    cfg = tmp_path / "driverfsd.conf"
    cfg.write_text(f"[Fleet]\nNfdFile={out}\n")
    d = Daemon(nfd_testbed(tmp_path), extra_args=("-c", str(cfg)))
    try:
        wait_until("the first feature file", lambda: out.exists())
        r = subprocess.run([CTL, "-m", d.mnt, "nfd", "-"], capture_output=True, text=True,
                           timeout=60)
        assert out.read_text() == r.stdout, (out.read_text(), r.stdout)
        assert "driverfsd.pci-0200_15b3.vfio-pci-viable=1" in r.stdout.splitlines()
        assert nfd_writes(d) == {"written": 1, "unchanged": 0, "failed": 0}
        ino = out.stat().st_ino
        # a link degrades, and the kernel says something of the device
        for dev in (NVME1, DS1B):
            d.testbed.set_attribute(dev, "current_link_speed", "2.5 GT/s PCIe\n")
        d.testbed.uevent(NVME1, "change")
        wait_event(d, "change", NVME1[len("/sys"):])
        wait_until("the labels follow", lambda: "pci-link-degraded=true" in out.read_text())
        assert out.stat().st_ino != ino
        assert sorted(os.listdir(feat)) == ["driverfsd"]
        # an event that changes nothing: built again, not written
        ino = out.stat().st_ino
        d.testbed.uevent(CX5, "change")
        wait_event(d, "change", CX5[len("/sys"):])
        wait_until("an unchanged build", lambda: nfd_writes(d)["unchanged"] >= 1)
        assert out.stat().st_ino == ino
        assert nfd_writes(d)["written"] == 2 and nfd_writes(d)["failed"] == 0
    finally:
        d.stop()
