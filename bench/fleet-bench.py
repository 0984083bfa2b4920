#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""fleet-bench - what fleets read, by machine size (issue 34 item 4): the
metrics file's size and the time to build it (docs/design.md §6.8), and the
NFD feature file's (§6.11), at N devices of which one in ten is a PCI
function (with link, AER and NUMA files, one in eight bound to vfio-pci),
side by side with reading the same text from a tmpfs copy in the same run
(the cost of a read with nothing to build: the floor).

  umockdev-wrapper bench/fleet-bench.py [N ...]   (default 1000 10000)

For each size: the text's bytes and lines, the series of the per-device
PCI families, the median and longest of ROUNDS (default 7) reads of
MOUNT/metrics, the tmpfs copy's median, their ratio; then the feature
file's bytes and the median time of `driverfsctl nfd -`. DRIVERFSD and
DRIVERFSCTL name the programs (default build/).

BASELINE=DIR (another build directory, main's) serves the same testbed
from DIR/driverfsd beside it, and its reads alternate with this build's in
the same rounds, so that both see the same load: each build's median per
PCI function and their ratio.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mount"))
os.environ.setdefault("DRIVERFSD", os.path.join(HERE, "..", "build", "driverfsd"))
os.environ.setdefault("DRIVERFSCTL", os.path.join(HERE, "..", "build", "driverfsctl"))
import gi  # noqa: E402

gi.require_version("UMockdev", "1.0")
from gi.repository import UMockdev  # noqa: E402

from harness import CTL, Daemon  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "7"))


def pci_record(i):
    """A PCIe endpoint function on the i-th slot of a host bridge."""
    dom, rest = divmod(i, 256 * 32 * 8)
    bus, rest = divmod(rest, 32 * 8)
    dev, fn = divmod(rest, 8)
    name = f"{dom:04x}:{bus:02x}:{dev:02x}.{fn}"
    drv = "vfio-pci" if i % 8 == 0 else "ixgbe"
    return (f"P: /devices/pci{dom:04x}:00/{name}\nE: DRIVER={drv}\nE: PCI_CLASS=20000\n"
            f"E: PCI_ID=8086:10FB\nE: PCI_SLOT_NAME={name}\nE: SUBSYSTEM=pci\n"
            f"L: driver=../../../bus/pci/drivers/{drv}\n"
            f"A: vendor=0x8086\\n\nA: device=0x10fb\\n\nA: class=0x020000\\n\n"
            f"A: subsystem_vendor=0x8086\\n\nA: subsystem_device=0x000c\\n\n"
            f"A: revision=0x01\\n\nA: numa_node={i % 2}\\n\nA: iommu_group={i}\\n\n"
            f"A: current_link_speed=5.0 GT/s PCIe\\n\nA: current_link_width={8 if i % 50 else 4}\\n\n"
            f"A: max_link_speed=5.0 GT/s PCIe\\n\nA: max_link_width=8\\n\n"
            f"A: aer_dev_correctable=RxErr 0\\nTOTAL_ERR_COR {i % 3}\\n\n"
            f"A: aer_dev_fatal=Undefined 0\\nTOTAL_ERR_FATAL 0\\n\n"
            f"A: aer_dev_nonfatal=Undefined 0\\nTOTAL_ERR_NONFATAL 0\\n\n")


def testbed(n):
    tb = UMockdev.Testbed.new()
    pci = n // 10
    for i in range(pci):
        assert tb.add_from_string(pci_record(i))
    for i in range(n - pci):
        assert tb.add_from_string(
            f"P: /devices/platform/bench.{i}\nE: SUBSYSTEM=platform\n"
            f"E: MODALIAS=platform:bench\nA: modalias=platform:bench\\n\n")
    return tb


def timed_read(path):
    t = time.monotonic()
    with open(path, "rb") as f:
        data = f.read()
    return time.monotonic() - t, data


def compare(tb, tmp, n, baseline):
    """This build's and @baseline's metrics builds, read in turn."""
    import harness
    mnts = []
    for name, daemon in (("this", harness.DAEMON), ("base", os.path.join(baseline, "driverfsd"))):
        os.mkdir(os.path.join(tmp, name))
        saved, harness.DAEMON = harness.DAEMON, daemon  # what Daemon() starts
        try:
            mnts.append(Daemon(None, testbed=tb, mnt=os.path.join(tmp, name), ready=600))
        finally:
            harness.DAEMON = saved
    try:
        times = {0: [], 1: []}
        texts = {}
        for _ in range(ROUNDS):
            for k, d in enumerate(mnts):
                t, texts[k] = timed_read(d.path("metrics"))
                times[k].append(t)
        pci = n // 10
        this, base = statistics.median(times[0]), statistics.median(times[1])
        same = [l for l in texts[0].decode().splitlines() if l.startswith("driverfsd_pcidevice_")] \
            == [l for l in texts[1].decode().splitlines() if l.startswith("driverfsd_pcidevice_")]
        print(f"  this build {this * 1e3:.1f} ms ({this / pci * 1e6:.0f} us per PCI function), "
              f"baseline {base * 1e3:.1f} ms ({base / pci * 1e6:.0f} us per PCI function); "
              f"this/baseline {this / base:.2f}; pcidevice series identical: {same}")
    finally:
        for d in mnts:
            d.stop()


def main():
    if os.geteuid() != 0:
        raise SystemExit("fleet-bench: run as root (a FUSE mount with allow_other)")
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000]
    print(f"fleet-bench {time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} CPUs, "
          f"{ROUNDS} reads each")
    for n in sizes:
        tb = testbed(n)
        with tempfile.TemporaryDirectory(prefix="driverfs-fleet-bench-") as tmp:
            os.chmod(tmp, 0o755)
            os.mkdir(os.path.join(tmp, "m"))
            d = Daemon(None, testbed=tb, mnt=os.path.join(tmp, "m"), ready=600)
            try:
                metrics = d.path("metrics")
                times, text = [], b""
                for _ in range(ROUNDS):
                    t, text = timed_read(metrics)
                    times.append(t)
                copy = "/dev/shm/driverfs-fleet-bench.prom"
                with open(copy, "wb") as f:
                    f.write(text)
                floor = statistics.median(timed_read(copy)[0] for _ in range(ROUNDS))
                os.unlink(copy)
                lines = text.decode().splitlines()
                pcidev = sum(1 for l in lines if l.startswith("driverfsd_pcidevice_"))
                nfd_times, nfd = [], ""
                for _ in range(ROUNDS):
                    t = time.monotonic()
                    nfd = subprocess.run([CTL, "-m", d.mnt, "nfd", "-"], capture_output=True,
                                         text=True, check=True, timeout=600).stdout
                    nfd_times.append(time.monotonic() - t)
                med = statistics.median(times)
                print(f"\nN={n} ({n // 10} PCI functions):")
                print(f"  metrics   {len(text)} bytes, {len(lines)} lines, {pcidev} pcidevice "
                      f"series; build+read median {med * 1e3:.1f} ms, longest "
                      f"{max(times) * 1e3:.1f} ms; tmpfs copy {floor * 1e3:.3f} ms; "
                      f"ratio {med / floor:.0f}x")
                print(f"  nfd       {len(nfd.encode())} bytes, {len(nfd.splitlines())} lines; "
                      f"driverfsctl nfd - median {statistics.median(nfd_times) * 1e3:.1f} ms")
            finally:
                d.stop()
            if os.environ.get("BASELINE"):
                compare(tb, tmp, n, os.environ["BASELINE"])


if __name__ == "__main__":
    main()
