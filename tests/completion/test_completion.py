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
                "sriov", "save", "diff"):
        words = ["driverfsctl"] + ([cmd] if cmd else []) + ["--"]
        offered |= set(complete("driverfsctl", words))
    assert named <= offered, named - offered


# Names a device, driver, bus or class may have in a mount (a snapshot's
# report.json chooses them all; docs/snapshot.md): each must complete as
# itself, never be expanded, split or globbed (issue 30 item 1).
HOSTILE = ["x$(touch${IFS}PWNED)", "y`touch${IFS}PWNED`", "z${PWN:=v}", "w$((6*7))",
           "semi;touch${IFS}PWNED", "a*", "b?", "c[ab]", "brace{a,b}", "~root",
           "has space", "it's", 'say"hi"', "back\\slash", "new\nline", "tab\there",
           "pipe|x", "-rf", "--force"]


def complete_words(script, words, cwd, env=None):
    """The command line @words completed (the last word) as in
    complete(), from @cwd: (the replies, each as the shell reads it back
    when the completed line runs: one word, its value). Fails when a reply
    is not exactly one word."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    prog = (f"source '{os.path.join(SCRIPTS, script)}'; COMP_WORDS=({quoted}); "
            f"COMP_CWORD={len(words) - 1}; _{script}; "
            # what the line runs with: each reply parsed as a shell word
            "for w in \"${COMPREPLY[@]}\"; do eval \"set -- $w\"; "
            "(($# == 1)) || { echo \"not one word: $w\" >&2; exit 3; }; "
            "printf '%s\\0' \"$1\"; done")
    r = subprocess.run(["bash", "--norc", "-c", prog], capture_output=True,
                       env=dict(os.environ, **(env or {})), cwd=cwd)
    assert r.returncode == 0, r.stderr.decode()
    return sorted(x.decode() for x in r.stdout.split(b"\0")[:-1])


@pytest.fixture
def hostile(tmp_path):
    """A mount-shaped tree whose devices, drivers, buses and classes have
    the hostile names, and a working directory with files a glob would
    match (where PWNED would appear)."""
    m = tmp_path / "devices"
    for bus in ["pci"] + [n for n in HOSTILE if "/" not in n]:
        (m / "bus" / bus / "devices").mkdir(parents=True)
        (m / "bus" / bus / "drivers").mkdir()
    for n in HOSTILE + ["0000:00:1f.6"]:
        os.symlink("../../../root/x", m / "bus" / "pci" / "devices" / n)
        (m / "bus" / "pci" / "drivers" / n).mkdir()
        (m / "class" / n).mkdir(parents=True)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for f in ("aaa", "bz", "ca", "PW"):
        (cwd / f).touch()
    return str(m), str(cwd)


def no_code_ran(cwd):
    assert sorted(os.listdir(cwd)) == ["PW", "aaa", "bz", "ca"], os.listdir(cwd)


@pytest.mark.parametrize("where", ["bus/pci/devices", "bus/pci/drivers", "bus", "class"])
@pytest.mark.parametrize("name", ["x$(touch${IFS}PWNED)", "y`touch${IFS}PWNED`"])
def test_a_name_runs_nothing_when_tab_is_pressed(tmp_path, where, name):
    """The report's reproducer: one name that runs a command, alone in its
    directory of the mount (among other names a quote of theirs could make
    compgen fail before it expanded anything); the completion alone, its
    replies not run."""
    m = tmp_path / "devices"
    (m / "bus" / "pci" / "devices").mkdir(parents=True)
    (m / "bus" / "pci" / "drivers").mkdir()
    (m / "class").mkdir()
    os.symlink("../../../root/x", m / where / name)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    line = {"bus/pci/devices": "info ''", "bus/pci/drivers": "bind 0000:00:1f.6 ''",
            "bus": "list --bus ''", "class": "tree --class ''"}[where]
    r = subprocess.run(["bash", "--norc", "-c",
                        f"source '{os.path.join(SCRIPTS, 'driverfsctl')}'; "
                        f"COMP_WORDS=(driverfsctl -m '{m}' {line}); "
                        f"COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _driverfsctl"],
                       cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert os.listdir(cwd) == []


def test_hostile_names_complete_as_themselves_and_run_nothing(hostile):
    mnt, cwd = hostile
    positional = sorted(n for n in HOSTILE + ["0000:00:1f.6"] if not n.startswith("-"))
    for cmd in ("info", "tree", "unbind", "suspend", "resume", "bind"):
        assert complete_words("driverfsctl", ["driverfsctl", "-m", mnt, cmd, ""], cwd) == \
            positional, cmd
        no_code_ran(cwd)
    # each by a prefix of it, as typed (the quoted form's prefix too)
    for n in HOSTILE:
        if n.startswith("-"):
            continue
        got = complete_words("driverfsctl", ["driverfsctl", "-m", mnt, "info", n[:2]], cwd)
        assert n in got and all(g.startswith(n[:2]) for g in got), (n, got)
    assert complete_words("driverfsctl", ["driverfsctl", "-m", mnt, "info", "x\\$"], cwd) == \
        ["x$(touch${IFS}PWNED)"]
    # a name with '-' first is no DEV driverfsctl takes: not offered, and
    # "-" still completes the command's options
    assert complete_words("driverfsctl", ["driverfsctl", "-m", mnt, "info", "-"], cwd) == \
        ["--json"]
    # bind DEV DRIVER: the drivers of the device's bus, the device named as
    # the completion wrote it
    for dev in ("'x$(touch${IFS}PWNED)'", "x\\$\\(touch\\$\\{IFS\\}PWNED\\)", "0000:00:1f.6"):
        assert complete_words("driverfsctl", ["driverfsctl", "-m", mnt, "bind", dev, ""],
                              cwd) == positional, dev
    # --bus and --class take any name, '-' first included
    everything = sorted(HOSTILE + ["0000:00:1f.6"])
    assert complete_words("driverfsctl", ["driverfsctl", "-m", mnt, "tree", "--class", ""],
                          cwd) == everything
    assert complete_words("driverfsctl", ["driverfsctl", "-m", mnt, "list", "--bus", ""],
                          cwd) == sorted(HOSTILE + ["pci"])
    no_code_ran(cwd)


def test_hostile_file_names_complete_as_themselves(hostile, tmp_path):
    """-m, save, diff, and driverfsd's files and directories: compgen's
    names quoted, not split or globbed (no newline: compgen prints one name
    a line)."""
    mnt, cwd = hostile
    files = tmp_path / "files"
    files.mkdir()
    names = [n for n in HOSTILE if "\n" not in n]
    for n in names:
        (files / n).touch()
    want = sorted(str(files / n) for n in names)
    for words in (["driverfsctl", "save", str(files) + "/"],
                  ["driverfsctl", "diff", str(files) + "/"],
                  ["driverfsctl", "metrics", str(files) + "/"],
                  ["driverfsd", "--snapshot", str(files) + "/"],
                  ["driverfsd", "-c", str(files) + "/"]):
        assert complete_words(words[0], words, cwd) == want, words
    assert complete_words("driverfsctl", ["driverfsctl", "-m", str(files) + "/"], cwd) == []
    dirs = tmp_path / "dirs"
    for n in names:
        (dirs / n).mkdir(parents=True)
    want = sorted(str(dirs / n) for n in names)
    assert complete_words("driverfsctl", ["driverfsctl", "-m", str(dirs) + "/"], cwd) == want
    assert complete_words("driverfsd", ["driverfsd", "--proc-root", str(dirs) + "/"], cwd) == \
        want
    assert complete_words("driverfsd", ["driverfsd", str(dirs) + "/"], cwd) == want
    no_code_ran(cwd)
