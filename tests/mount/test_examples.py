# SPDX-License-Identifier: LGPL-2.1-or-later
"""The shipped examples work as shipped (issue 30 item 10): each of
contrib/drivers.d/*.example, enabled as its comment says (copied to a
*.conf name in a drivers.d/ the daemon reads), on a testbed, its hooks run
through a real mount by suspend, resume, probe and remove. The programs
they run (hdparm, ip, the scanner's hook) must not touch this machine:
each is a recorder here, found in the hooks' PATH (the hook's shell is
given PATH=FAKE, nothing else, before the example's own command), or, for
a program the example names by a path of its own, at that path's place
(the path replaced); a hook that could reach any other program fails the
test before a daemon starts. A recorder writes its name and each argument in [ ], so
the arguments are seen as the program gets them. contrib/hotplug/by-class
runs in test_hotplug.py (test_naming_policy_runs_outside_the_daemon)."""
import contextlib
import glob
import os
import re
import shlex

from harness import Daemon, drivers_config
from hotplug_util import STICK, TESTBED, pull_out

HERE = os.path.dirname(os.path.abspath(__file__))
CONTRIB = os.path.join(HERE, "..", "..", "contrib")
EXAMPLE_2002 = os.path.join(HERE, "..", "testbeds", "2002-example.umockdev")
SATA_PLACE = "pci0000:00/0000:00:17.0"
STICK_PLACE = "pci0000:00/0000:00:14.0/usb1/1-1/1-1.2/1-1.2.3"

RECORDER = """#!/bin/sh
{{ printf '%s' "${{0##*/}}"; for a in "$@"; do printf ' [%s]' "$a"; done; echo; }} >> '{log}'
"""


def recorders(tmp, *names):
    """A directory FAKE in @tmp holding a recorder for each of @names, all
    writing to one log; (FAKE, the log's path)."""
    fake = os.path.join(tmp, "fake")
    os.makedirs(fake)
    log = os.path.join(tmp, "calls")
    open(log, "w").close()
    for name in names:
        path = os.path.join(fake, name)
        with open(path, "w") as f:
            f.write(RECORDER.format(log=log))
        os.chmod(path, 0o755)
    return fake, log


def only_recorders_run(text, fake):
    """Fails, before any daemon runs, unless every hook of @text can run
    nothing but a recorder in @fake: its program is one, or /bin/sh
    whose script sets PATH=@fake alone first and names no program by a
    path (an example's /sbin/ip would run this machine's ip, whatever
    PATH says)."""
    for line in text.splitlines():
        key, _, cmd = line.partition("=")
        if key not in ("Probe", "Remove", "Suspend", "Resume"):
            continue
        words = shlex.split(cmd)
        if words[0] != "/bin/sh":
            assert words[0].startswith(fake + "/"), f"{line}: would run {words[0]}"
            continue
        assert words[1] == "-c" and words[2].startswith(f"PATH={fake}; "), line
        # each command's program: its first word past assignments and exec
        for command in re.split(r"[;&|\n]+", words[2]):
            prog = [w for w in shlex.split(command) if "=" not in w and w != "exec"][:1]
            assert not prog or "/" not in prog[0] or prog[0].startswith(fake + "/"), \
                f"{line}: runs {prog[0]} by its path: it would run on this machine"


def enabled(tmp, fake, example, replace=()):
    """The configuration that enables contrib/drivers.d/@example as its
    comment says: a copy named without .example in a drivers.d/ beside it;
    each (old, new, count) of @replace made in its text, each found there
    count times; checked to run recorders of @fake only."""
    with open(os.path.join(CONTRIB, "drivers.d", example)) as f:
        text = f.read()
    for old, new, count in replace:
        assert text.count(old) == count, (example, old, text)
        text = text.replace(old, new)
    only_recorders_run(text, fake)
    return drivers_config(tmp, {example[:-len(".example")]: text})


def in_path(fake, hooks):
    """(old, new, count): the example's @hooks hooks of the form /bin/sh -c
    '...' run with PATH=@fake (alone: nothing of this machine's is found)."""
    return ("/bin/sh -c '", f"/bin/sh -c 'PATH={fake}; ", hooks)


def calls(log):
    with open(log) as f:
        return f.read().splitlines()


def power(d, place, what):
    with open(d.path("root", place, "power") if place else d.path("power"), "w") as f:
        f.write(what)


def test_every_shipped_example_has_a_test():
    tested = {"drivers.d/50-example.conf.example", "drivers.d/60-disk-flush.conf.example",
              "drivers.d/61-netif-down.conf.example", "hotplug/by-class"}
    shipped = {os.path.relpath(p, CONTRIB)
               for p in glob.glob(os.path.join(CONTRIB, "drivers.d", "*.example")) +
               glob.glob(os.path.join(CONTRIB, "hotplug", "*"))}
    assert shipped == tested


@contextlib.contextmanager
def serving(tmp, testbed, example, program, hooks):
    """@testbed served with @example enabled, its @hooks hooks of /bin/sh
    finding @program's recorder: (the daemon, the recorders' log). Every
    PM step it took succeeded."""
    fake, log = recorders(tmp, program)
    config = enabled(tmp, fake, example, [in_path(fake, hooks)])
    d = Daemon(testbed, ["--config", config])
    try:
        yield d, log
        with open(d.path("power_log")) as f:
            assert all(line.split()[3] == "ok" for line in f.read().splitlines())
    finally:
        d.stop()


def test_disk_flush_flushes_and_spins_down_each_whole_disk_by_its_node(tmp_path):
    """60-disk-flush: hdparm -F -y /dev/sdX for each disk (not a
    partition), before its controller suspends; nothing on resume."""
    with serving(str(tmp_path), TESTBED, "60-disk-flush.conf.example", "hdparm", 1) as (d, log):
        power(d, STICK_PLACE, "suspend")
        assert calls(log) == ["hdparm [-F] [-y] [/dev/sdb]"]
        power(d, STICK_PLACE, "resume")
        power(d, SATA_PLACE, "suspend")
        assert calls(log) == ["hdparm [-F] [-y] [/dev/sdb]", "hdparm [-F] [-y] [/dev/sda]"]
        power(d, SATA_PLACE, "resume")
        assert calls(log)[2:] == []


def test_netif_down_takes_ethernet_down_before_its_nic_and_up_after(tmp_path):
    """61-netif-down on the 2002 example: eth0 (type 1) down at suspend, up
    at resume; lo (type 772) is not its."""
    with serving(str(tmp_path), EXAMPLE_2002, "61-netif-down.conf.example", "ip", 2) as (d, log):
        power(d, None, "suspend")
        assert calls(log) == ["ip [link] [set] [dev] [eth0] [down]"]
        power(d, None, "resume")
        assert calls(log) == ["ip [link] [set] [dev] [eth0] [down]",
                              "ip [link] [set] [dev] [eth0] [up]"]


def as_scanner(root):
    """The USB stick made a Canon scanner, as 50-example.conf matches."""
    sysdir = os.path.join(root, "sys", STICK.lstrip("/"))
    for name, value in (("idVendor", "04a9\n"), ("product", "CanoScan LiDE 300\n")):
        with open(os.path.join(sysdir, name), "w") as f:
            f.write(value)


def test_the_exec_driver_example_probes_suspends_resumes_and_removes(tmp_path):
    """50-example: its hook (a path of the example's own, a recorder here)
    probes the scanner when the daemon starts, suspends and resumes it, and
    is told when it goes."""
    fake, log = recorders(str(tmp_path), "scanner-hook")
    hook = "/usr/local/libexec/scanner-hook"
    config = enabled(str(tmp_path), fake, "50-example.conf.example",
                     [(hook, os.path.join(fake, "scanner-hook"), 4)])
    d = Daemon(TESTBED, ["--config", config], prepare=as_scanner)
    try:
        assert calls(log) == ["scanner-hook [probe]"]
        assert os.readlink(d.path("root", STICK_PLACE, "driver")).endswith(
            "bus/usb/drivers/scanner-quiesce")
        power(d, STICK_PLACE, "suspend")
        power(d, STICK_PLACE, "resume")
        assert calls(log) == ["scanner-hook [probe]", "scanner-hook [suspend]",
                              "scanner-hook [resume]"]
        pull_out(d, STICK)
        assert calls(log)[3:] == ["scanner-hook [remove]"]
    finally:
        d.stop()
