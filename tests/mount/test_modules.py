# SPDX-License-Identifier: LGPL-2.1-or-later
"""The candidate kernel modules in a device's binding file (issue 17 item 6,
docs/design.md §7.5): its modalias looked up with libkmod in the modules
directory's indexes, each module with whether it is loaded, built in or
not. The modules directory is made here as the kernel's build makes it:
modules whose .modinfo names their aliases, indexed by depmod; the same
lookups through modprobe -R (kmod's own command) are the reference."""
import os
import shutil
import subprocess

import pytest

from harness import Daemon

HERE = os.path.dirname(__file__)
TESTBED = os.path.join(HERE, "..", "testbeds", "small-pci.umockdev")
RELEASE = "6.1.0-test"
# module: the aliases its .modinfo declares (as the drivers' id tables do)
MODULES = {
    "e1000e": ["pci:v00008086d000015BCsv*sd*bc*sc*i*"],
    "xhci_pci": ["pci:v*d*sv*sd*bc0Csc03i30*"],
    "nvme": ["pci:v*d*sv*sd*bc01sc08i02*"],
    "ie31200_edac": ["pci:v00008086d00003EC2sv*sd*bc*sc*i*"],
    "skx_edac": ["pci:v00008086d00003EC2sv*sd*bc*sc*i*"],
}
PLACES = {
    "pci0000:00/0000:00:1f.6": "e1000e (loaded)",
    "pci0000:00/0000:00:14.0": "xhci_pci (built in)",
    "pci0000:00/0000:00:1c.0/0000:01:00.0": "nvme (not loaded)",
    "pci0000:00/0000:00:1c.0": "none (no module's alias matches its modalias)",
}


# built into the kernel: no .ko, listed in modules.builtin, its aliases in
# modules.builtin.modinfo (as the kernel's build writes them)
BUILTIN = {"xhci_pci": "kernel/drivers/usb/host/xhci-pci.ko"}


def modules_dir(tmp, modules=None, builtin=None):
    """BASE/lib/modules/RELEASE with the modules and depmod's indexes: @modules
    (MODULES unless given; name: aliases), @builtin of them built in
    (BUILTIN unless given; name: path)."""
    modules = MODULES if modules is None else modules
    builtin = BUILTIN if builtin is None else builtin
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc or not shutil.which("depmod"):
        pytest.skip("needs a C compiler and depmod (kmod)")
    base = os.path.join(tmp, "base")
    kernel = os.path.join(base, "lib/modules", RELEASE, "kernel/drivers")
    os.makedirs(kernel)
    top = os.path.join(base, "lib/modules", RELEASE)
    with open(os.path.join(top, "modules.builtin"), "w") as f:
        f.write("".join(path + "\n" for path in builtin.values()))
    with open(os.path.join(top, "modules.builtin.modinfo"), "wb") as f:
        for name in builtin:
            for alias in modules[name]:
                f.write(f"{name}.alias={alias}\0".encode())
            f.write(f"{name}.license=GPL\0".encode())
    for name, aliases in modules.items():
        if name in builtin:
            continue
        info = "".join(f"{k}={v}\\0" for k, v in
                       [("license", "GPL"), ("name", name), ("depends", "")]
                       + [("alias", a) for a in aliases])
        src = os.path.join(tmp, name + ".c")
        with open(src, "w") as f:
            f.write("static const char modinfo[] __attribute__((section(\".modinfo\"), used, "
                    f"aligned(1))) = \"{info}\";\n")
        # the file as the kernel's build names it (vfio-pci.ko: vfio_pci)
        subprocess.run([cc, "-c", src, "-o", os.path.join(kernel, name.replace("_", "-") + ".ko")],
                       check=True)
    subprocess.run(["depmod", "-b", base, RELEASE], check=True, capture_output=True)
    return base, os.path.join(base, "lib/modules", RELEASE)


def module_states(root):
    """e1000e loaded (its initstate live), xhci_pci built in (a directory
    with its parameters and no initstate), nvme not loaded."""
    os.makedirs(os.path.join(root, "sys/module/e1000e"))
    with open(os.path.join(root, "sys/module/e1000e/initstate"), "w") as f:
        f.write("live\n")
    os.makedirs(os.path.join(root, "sys/module/xhci_pci/parameters"))


def candidates(d, place):
    with open(d.path("root", place, "binding")) as f:
        lines = [x for x in f.read().splitlines() if x.startswith("candidate modules: ")]
    assert len(lines) <= 1, lines
    return lines[0][len("candidate modules: "):] if lines else None


def test_each_device_names_what_modprobe_would_load(tmp_path):
    base, moddir = modules_dir(str(tmp_path))
    d = Daemon(TESTBED, ["--modules-dir", moddir], prepare=module_states)
    try:
        for place, expected in PLACES.items():
            assert candidates(d, place) == expected, place
        # the two EDAC modules of the host bridge, both named
        assert sorted(candidates(d, "pci0000:00/0000:00:00.0").split(", ")) == \
            ["ie31200_edac (not loaded)", "skx_edac (not loaded)"]
        # the reference: modprobe -R resolves each device's modalias alike
        for place in [*PLACES, "pci0000:00/0000:00:00.0"]:
            with open(d.path("root", place, "modalias")) as f:
                alias = f.read().strip()
            r = subprocess.run(["modprobe", "-d", base, "-S", RELEASE, "-R", alias],
                               capture_output=True, text=True)
            want = sorted(r.stdout.split()) if r.returncode == 0 else []
            got = candidates(d, place)
            names = [] if got.startswith("none") else sorted(
                x.split(" (")[0] for x in got.split(", "))
            assert names == want, (place, got, r.stdout)
    finally:
        d.stop()


def test_reads_of_a_binding_file_look_up_once(tmp_path):
    # issue 30 item 3d: each read of a binding file, which any user may
    # make, looked its modalias up with libkmod under one lock; now the
    # answer is kept for the model's generation and DM_MODULES_KEEP_SEC
    # (2 s) at most (the daemon counts libkmod's lookups: "kernel modules
    # looked up N times" in its log at exit). What a slow machine spends
    # on the reads is allowed for: one lookup more per 2 s of them.
    import time
    base, moddir = modules_dir(str(tmp_path))
    d = Daemon(TESTBED, ["--modules-dir", moddir], prepare=module_states)
    try:
        start = time.monotonic()
        for _ in range(40):
            assert candidates(d, "pci0000:00/0000:00:1f.6") == "e1000e (loaded)"
        spent = time.monotonic() - start
        looked, = d.counted_at_exit(r"kernel modules looked up (\d+) times",
                                    "its libkmod lookups")
        # the old code: 40
        assert looked <= 1 + int(spent / 2) + 1, (looked, spent)
    finally:
        d.stop()


def test_without_indexes_no_candidates_are_named(tmp_path):
    empty = tmp_path / "modules"
    empty.mkdir()
    d = Daemon(TESTBED, ["--modules-dir", str(empty)])
    try:
        assert candidates(d, "pci0000:00/0000:00:1f.6") is None
        with open(d.path("root", "pci0000:00/0000:00:1f.6", "binding")) as f:
            assert f.read().startswith("bound to e1000e by the kernel\n")
        assert "no kernel module indexes in" in d.output()
    finally:
        d.stop()
