# SPDX-License-Identifier: LGPL-2.1-or-later
"""A hostile USB keyboard whose product string carries newlines (issue 14):
the kernel prints it unescaped into its input device's uevent text as
NAME="x"\\nDEVNAME=/etc/shadow\\nLUA_INIT=..." so the text gains lines. The
daemon must live (libudev aborts when asked the devnode of such a device),
and the hotplug helper's environment must hold the real DEVNAME (or none)
and no injected variable: at coldplug (a scan from sysfs) and when the
keyboard is plugged in (a netlink event)."""
import os

import pytest

from harness import Daemon
from hotplug_util import KBD, TESTBED, blocks, devpath, under, wait_event, without

EVIL = 'x"\nDEVNAME=/etc/shadow\nLUA_INIT=os.execute("touch /tmp/pwned")\nPYTHONWARNINGS=all'
# without DEVNAME libudev does not abort: the variables themselves are seen
QUIET = 'x"\nLUA_INIT=os.execute("touch /tmp/pwned")\nPYTHONWARNINGS=all'
# lines shaped as the kernel's (a relative DEVNAME, an upper-case key,
# quotes closed on each line): they pass the text's check, but the kernel
# writes DEVNAME only for a device with a number (its dev attribute), which
# an input device has not
SHAPED = 'x"\nDEVNAME=sda\nINJECTED="y'


def evil(block, name=EVIL):
    """An input device block of the keyboard with the hostile name: its
    uevent text (E: lines) as the kernel would print it, its name file too."""
    lines = []
    for line in block.split("\n"):
        if line.startswith("E: NAME="):
            lines += ["E: " + l for l in f'NAME="{name}"'.split("\n")]
        elif line.startswith("A: name="):
            lines.append("A: name=" + name.replace("\n", "\\n") + "\\n")
        else:
            lines.append(line)
    return "\n".join(lines)


def is_input(block):
    return os.path.basename(os.path.dirname(devpath(block))) == "input" and \
        os.path.basename(devpath(block)).startswith("input")


def kbd_blocks(name=EVIL):
    return [evil(b, name) if is_input(b) else b for b in blocks(TESTBED) if under(b, KBD)]


INPUTS = [devpath(b) for b in kbd_blocks() if is_input(b)]


def helper(tmp_path):
    """A helper writing its environment, NUL-separated, to out/<devpath
    with '/' as '!'> for each call."""
    out = tmp_path / "out"
    out.mkdir()
    script = tmp_path / "dump-env"
    script.write_text('#!/bin/sh\nf=$(printf %s "$DEVPATH" | tr / !)\n'
                      f'exec /usr/bin/env -0 > "{out}/$f"\n')
    script.chmod(0o755)
    return out, ["--hotplug-helper", str(script)]


def env_of(out, path):
    with open(out / path.replace("/", "!"), "rb") as f:
        entries = [e.decode(errors="replace") for e in f.read().split(b"\0") if e]
    return dict(e.split("=", 1) for e in entries)


def assert_clean(env, event=False):
    """@event: the environment of a plugged-in device, whose variables come
    from its netlink event: umockdev sends the lines of the uevent file as
    the event's variables (the kernel would send one NAME with newlines),
    so there a variable of a harmless name cannot be told from the device's."""
    assert env.get("DEVNAME") in (None, "") or env["DEVNAME"].startswith("/dev/input/"), env
    assert "LUA_INIT" not in env, env
    assert "PYTHONWARNINGS" not in env, env
    assert all("shadow" not in v for v in env.values()), env
    assert event or "INJECTED" not in env, env


@pytest.mark.parametrize("name", [EVIL, QUIET, SHAPED], ids=["devname", "variables", "shaped"])
def test_present_at_start(tmp_path, name):
    out, args = helper(tmp_path)
    bed = tmp_path / "testbed.umockdev"
    bed.write_text("\n\n".join([b for b in blocks(TESTBED) if not under(b, KBD)] + kbd_blocks(name))
                   + "\n")
    d = Daemon(str(bed), [*args, "--coldplug"])
    try:
        for p in INPUTS:
            d.wait_status(lambda l, p=p: l.startswith(f"STATUS=helper add {p} "))
            assert_clean(env_of(out, p))
        assert d.proc.poll() is None
        assert os.listdir(d.path("root"))
        assert "uevent text is not what the kernel writes" in d.output()
    finally:
        d.stop()


@pytest.mark.parametrize("name", [EVIL, SHAPED], ids=["devname", "shaped"])
def test_plugged_in(tmp_path, name):
    out, args = helper(tmp_path)
    d = Daemon(without(tmp_path, KBD), args)
    try:
        for b in kbd_blocks(name):
            assert d.testbed.add_from_string(b + "\n")
            wait_event(d, "add", devpath(b))
        for p in INPUTS:
            d.wait_status(lambda l, p=p: l.startswith(f"STATUS=helper add {p} "))
            assert_clean(env_of(out, p), event=True)
        assert d.proc.poll() is None
        assert os.listdir(d.path("root"))
    finally:
        d.stop()
