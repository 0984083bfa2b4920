# SPDX-License-Identifier: LGPL-2.1-or-later
"""bash completion (contrib/bash-completion, issue 19 item 2): the scripts
run in a real bash, against a directory shaped like a driverfs mount (bus/,
class/, drivers), as bash-completion would call them."""
import re
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "contrib", "bash-completion")


def complete(script, words, env=None):
    """COMPREPLY for the command line @words (the last being completed)."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    prog = (f"source '{os.path.join(SCRIPTS, script)}'; COMP_WORDS=({quoted}); "
            f"COMP_CWORD={len(words) - 1}; _{script}; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    r = subprocess.run(["bash", "--norc", "-c", prog], capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stderr
    return sorted(x for x in r.stdout.splitlines() if x)


@pytest.fixture
def mnt(tmp_path):
    """A tree shaped like a mount: two buses with devices and drivers, two
    classes."""
    m = tmp_path / "devices"
    for bus, devs, drivers in (("pci", ["0000:00:1f.6", "0000:01:00.0"],
                                ["e1000e", "vfio-pci", "nvme"]),
                               ("usb", ["1-1", "1-1:1.0"], ["usbhid", "hub"])):
        (m / "bus" / bus / "devices").mkdir(parents=True)
        for d in devs:
            os.symlink("../../../root/x", m / "bus" / bus / "devices" / d)
        for drv in drivers:
            (m / "bus" / bus / "drivers" / drv).mkdir(parents=True)
    for c in ("block", "net"):
        (m / "class" / c).mkdir(parents=True)
    return str(m)


def test_commands_and_options(mnt):
    assert complete("driverfsctl", ["driverfsctl", "b"]) == ["bind", "bindings"]
    assert complete("driverfsctl", ["driverfsctl", "-m", mnt, "su"]) == ["suspend"]
    assert complete("driverfsctl", ["driverfsctl", "-"]) == ["--help", "--mount", "--version",
                                                          "-V", "-h", "-m"]
    assert complete("driverfsctl", ["driverfsctl", "bind", "--d"]) == ["--default", "--dry-run"]
    assert complete("driverfsctl", ["driverfsctl", "list", "--"]) == ["--bus", "--class",
                                                                    "--json"]


def test_devices_drivers_buses_and_classes_from_the_mount(mnt):
    assert complete("driverfsctl", ["driverfsctl", "-m", mnt, "info", "0000"]) == \
        ["0000:00:1f.6", "0000:01:00.0"]
    assert complete("driverfsctl", ["driverfsctl", "-m", mnt, "unbind", "1-"]) == \
        ["1-1", "1-1:1.0"]
    # bind DEV DRIVER: the drivers of the device's own bus
    assert complete("driverfsctl", ["driverfsctl", "-m", mnt, "bind", "0000:00:1f.6", ""]) == \
        ["e1000e", "nvme", "vfio-pci"]
    assert complete("driverfsctl", ["driverfsctl", "-m", mnt, "bind", "--force", "1-1:1.0",
                                    "u"]) == ["usbhid"]
    assert complete("driverfsctl", ["driverfsctl", "-m", mnt, "tree", "--bus", ""]) == \
        ["pci", "usb"]
    assert complete("driverfsctl", ["driverfsctl", "-m", mnt, "dot", "--class", "n"]) == ["net"]
    # the mount from the environment, as driverfsctl takes it
    assert complete("driverfsctl", ["driverfsctl", "resume", "1-1:"],
                    env={"DRIVERFS_MOUNT": mnt}) == ["1-1:1.0"]
    # no mount there: nothing, and no error
    assert complete("driverfsctl", ["driverfsctl", "-m", "/nonexistent", "info", ""]) == []


def test_driverfsd_options(tmp_path):
    assert "--snapshot" in complete("driverfsd", ["driverfsd", "--sn"])
    assert complete("driverfsd", ["driverfsd", "--no-"]) == ["--no-io-uring", "--no-passthrough"]
    (tmp_path / "conf.d").mkdir()
    assert complete("driverfsd", ["driverfsd", "--modules-dir", str(tmp_path / "co")]) == \
        [str(tmp_path / "conf.d")]


def help_options(var):
    """The long options the --help of the program $@var names (not those
    it names as driverfsd's: "driverfsd --snapshot FILE")."""
    prog = os.environ.get(var)
    if not prog:
        pytest.skip(f"{var} not set")
    text = subprocess.run([prog, "--help"], capture_output=True, text=True).stdout
    return set(re.findall(r"(?<!driverfsd )(?<![\w-])(--[a-z][a-z-]+)", text))


def test_the_options_are_driverfsds_own():
    """Every long option --help names is completed, and no other."""
    named = help_options("DRIVERFSD")
    offered = set(x for x in complete("driverfsd", ["driverfsd", "--"]) if x.startswith("--"))
    assert named == offered, (named - offered, offered - named)


def test_every_driverfsctl_command_is_offered():
    """The commands --help lists (its lines "  NAME ..." under Commands:),
    and no other."""
    prog = os.environ.get("DRIVERFSCTL")
    if not prog:
        pytest.skip("DRIVERFSCTL not set")
    text = subprocess.run([prog, "--help"], capture_output=True, text=True).stdout
    block = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"^  ([a-z]+)", block, re.M))
    assert "metrics" in named
    assert set(complete("driverfsctl", ["driverfsctl", ""])) == named


def test_every_driverfsctl_option_is_offered():
    named = help_options("DRIVERFSCTL")
    offered = set()
    for cmd in ("", "list", "tree", "info", "dot", "suspend", "resume", "bind", "unbind",
                "save", "diff"):
        words = ["driverfsctl"] + ([cmd] if cmd else []) + ["--"]
        offered |= set(complete("driverfsctl", words))
    assert named <= offered, named - offered
