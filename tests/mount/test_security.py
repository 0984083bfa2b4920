# SPDX-License-Identifier: LGPL-2.1-or-later
"""Security through the mount (issue 8, part 5).

* A non-root user (a child process that drops to nobody) reads every file
  but can change nothing: write, truncate, chmod, chown, utime, create,
  mkdir, unlink, rmdir, rename, symlink and link each fail with EACCES or
  EPERM, and the tree is the same afterwards.
* Device-reported strings (names, serials with newlines, '/', '..',
  control characters, longer than a page) stay in their own file: the
  device's directory holds the same files as without them, the other
  devices' files are unchanged, and a uevent line that a device string
  smuggled in cannot set a hook's loader or shell variables.
* Hooks run the program itself, with only the documented environment.
"""
import errno
import json
import os
import re
import stat
import tempfile

from harness import Daemon, has_devpath, own

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBEDS = os.path.join(HERE, "..", "testbeds")
NOBODY = 65534
REFUSED = {errno.EACCES, errno.EPERM}


def snapshot_tree(mnt):
    """{path: (mode, uid, gid, content or link target)} of the whole mount."""
    out = {}
    for top, dirs, files in os.walk(mnt):
        for name in dirs + files:
            p = os.path.join(top, name)
            st = os.lstat(p)
            if os.path.islink(p):
                what = os.readlink(p)
            elif os.path.isdir(p):
                what = None
            elif name in ("runtime_status", "power_log", "metrics"):
                what = "(live)"
            else:
                with open(p, "rb") as f:
                    what = f.read()
            out[os.path.relpath(p, mnt)] = (st.st_mode, st.st_uid, st.st_gid, what)
    return out


def as_nobody(fn, *args):
    """Runs fn(*args) in a child that dropped to nobody; its JSON result."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        status = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            assert os.geteuid() == NOBODY
            os.write(w, json.dumps(fn(*args)).encode())
            status = 0
        except BaseException as e:  # noqa: B036 - reported to the parent
            os.write(w, json.dumps({"exception": repr(e)}).encode())
        finally:
            os._exit(status)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    result = json.loads(data)
    assert status == 0, f"the unprivileged child failed: {result}"
    return result


def read_everything(mnt):
    """Errors reading any file or listing any directory, as nobody. Write-
    only files (kernel drivers' bind and unbind, 0200 as in sysfs) are
    nobody's to read: they must be only those; and the top's
    devices_deferred (0400: debugfs's, root's alone in the kernel too)."""
    errors, n = [], 0
    for top, dirs, files in os.walk(mnt, onerror=lambda e: errors.append(str(e))):
        for name in files:
            p = os.path.join(top, name)
            if os.path.islink(p):
                continue
            if top == mnt and name == "devices_deferred":
                if os.stat(p).st_mode & 0o777 != 0o400:
                    errors.append(f"{p}: not root's alone")
                continue
            if not os.stat(p).st_mode & 0o444:
                if name not in ("bind", "unbind") or os.path.basename(
                        os.path.dirname(os.path.dirname(p))) != "drivers":
                    errors.append(f"{p}: write-only")
                continue
            try:
                with open(p, "rb") as f:
                    f.read()
                n += 1
            except OSError as e:
                errors.append(f"{p}: {e}")
    return {"errors": errors, "read": n}


def try_everything(files, dirs, links):
    """Every way of changing the mount, on each file and directory: the
    ones that were not refused with EACCES/EPERM."""
    def attempt(what, fn, *args):
        try:
            fn(*args)
        except OSError as e:
            if e.errno in REFUSED:
                return None
            return f"{what} {args[0]}: errno {e.errno} ({e.strerror})"
        return f"{what} {args[0]}: succeeded"

    def open_close(path, flags):
        os.close(os.open(path, flags, 0o644))

    bad = []
    for f in files:
        bad += [attempt("open O_WRONLY", open_close, f, os.O_WRONLY),
                attempt("open O_RDWR", open_close, f, os.O_RDWR),
                attempt("open O_TRUNC", open_close, f, os.O_WRONLY | os.O_TRUNC),
                attempt("truncate", os.truncate, f, 0),
                attempt("chmod", os.chmod, f, 0o666),
                attempt("chown", os.chown, f, NOBODY, NOBODY),
                attempt("utime now", os.utime, f, None),
                attempt("utime", os.utime, f, (0, 0)),
                attempt("unlink", os.unlink, f),
                attempt("rename", os.rename, f, f + ".x"),
                attempt("link", os.link, f, f + ".l")]
    for ln in links:
        bad += [attempt("unlink", os.unlink, ln),
                attempt("rename", os.rename, ln, ln + ".x"),
                attempt("lchown", lambda p: os.chown(p, NOBODY, NOBODY, follow_symlinks=False),
                        ln)]
    for d in dirs:
        bad += [attempt("create", open_close, os.path.join(d, "new"),
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL),
                attempt("mkdir", os.mkdir, os.path.join(d, "newdir")),
                attempt("symlink", lambda p: os.symlink("/etc/passwd", p),
                        os.path.join(d, "newlink")),
                attempt("chmod", os.chmod, d, 0o777),
                attempt("chown", os.chown, d, NOBODY, NOBODY),
                attempt("utime", os.utime, d, (0, 0)),
                attempt("rmdir", os.rmdir, d),
                attempt("rename", os.rename, d, d + ".x")]
    return [b for b in bad if b]


def drivers_config(tmp, bus, hook_args=""):
    """--config whose drivers.d holds an exec driver taking every device of
    @bus, with a Probe hook that records argv and environment."""
    hook = os.path.join(tmp, "hook.sh")
    with open(hook, "w") as f:
        f.write('#!/bin/sh\n'
                'out="$1/$(basename "$DEVPATH")"\n'
                'shift\n'
                'for a in "$@"; do printf "arg:%s\\n" "$a"; done > "$out.args"\n'
                'env > "$out.env"\n')
    os.chmod(hook, 0o755)
    log = os.path.join(tmp, "log")
    os.mkdir(log)
    os.makedirs(os.path.join(tmp, "drivers.d"))
    with open(os.path.join(tmp, "drivers.d", "10-record.conf"), "w") as f:
        f.write(f"[Driver]\nName=record\nBus={bus}\n[Hooks]\nProbe={hook} {log} {hook_args}\n")
    config = os.path.join(tmp, "driverfsd.conf")
    with open(config, "w") as f:
        f.write("[PM]\nHookTimeout=10\n")
    return ["--config", config], log


def test_nobody_reads_everything_and_changes_nothing():
    with tempfile.TemporaryDirectory(prefix="driverfs-sec-") as tmp:
        args, _ = drivers_config(tmp, "pci")
        d = Daemon(os.path.join(TESTBEDS, "small-pci.umockdev"), args)
        try:
            before = snapshot_tree(d.mnt)
            got = as_nobody(read_everything, d.mnt)
            assert not got["errors"], "nobody could not read:\n" + "\n".join(got["errors"][:20])
            assert got["read"] > 50, f"only {got['read']} files read"

            files = [os.path.join(d.mnt, p) for p, (mode, *_r) in before.items()
                     if stat.S_ISREG(mode) and mode & 0o222]
            assert any(f.endswith("/pm/control") for f in files), "no pm/control to try"
            files += [os.path.join(d.mnt, p) for p in before
                      if p.endswith(("/name", "/uevent", "/vendor"))][:10]
            links = [os.path.join(d.mnt, p) for p, (mode, *_r) in before.items()
                     if stat.S_ISLNK(mode)][:10]
            dirs = [d.mnt, d.path("root"), d.path("bus"), d.path("class"),
                    d.path("bus", "pci", "drivers", "record")]
            dirs += [os.path.join(d.mnt, p) for p in before
                     if p.endswith("/pm") and os.path.isdir(os.path.join(d.mnt, p))][:3]
            bad = as_nobody(try_everything, files, dirs, links)
            assert not bad, "not refused for nobody:\n" + "\n".join(bad[:40])
            assert snapshot_tree(d.mnt) == before, "the tree changed"
            # root is refused the same, except writes (the model's own rules);
            # the mount point itself is the kernel's (EBUSY)
            bad = [b for b in try_everything(files, dirs[1:], links) if not b.startswith(
                ("open O_WRONLY", "open O_RDWR", "open O_TRUNC", "truncate"))]
            assert not bad, "not refused for root:\n" + "\n".join(bad[:40])
            assert snapshot_tree(d.mnt) == before, "the tree changed"
            assert d.proc.poll() is None
        finally:
            d.stop()


HUB = "/devices/pci0000:00/0000:00:14.0/usb1/1-1"
HID = HUB + "/1-1.2/1-1.2.1/1-1.2.1:1.0/0003:05F3:0007.0001"
INPUT = HID + "/input/input5"
EVIL = {
    "product": "Evil\\nname=pwned\\n../../../etc/passwd",
    "manufacturer": "/../..\x01\x1b[31mred\x7f\t",  # raw control characters
    "serial": "S" * 5000,
}


def evil_testbed(path):
    """usb-tree with hostile strings on the first hub, the HID device and
    its input device; what it changed, by devpath."""
    with open(os.path.join(TESTBEDS, "usb-tree.umockdev")) as f:
        text = f.read()
    out, cur = [], None
    for line in text.split("\n"):
        if line.startswith("P: "):
            cur = line[3:]
        if cur == HUB and re.match(r"A: (product|manufacturer|serial)=", line):
            continue
        if cur == INPUT and line.startswith("A: name="):
            line = "A: name=Keyboard\\nHID_NAME=x\\n" + "K" * 5000 + "\\n"
        out.append(line)
        if line == "P: " + HUB:
            out += [f"A: {k}={v}\\n" for k, v in EVIL.items()]
        if line == "P: " + HID:
            # the kernel's own uevent file, with a device-given HID name
            # that has newlines in it
            out.append("A: uevent=DRIVER=hid-generic\\nHID_ID=0003:000005F3:00000007\\n"
                       "HID_NAME=Evil\\nLD_PRELOAD=/nonexistent/evil.so\\n"
                       "BASH_ENV=/nonexistent/evil.sh\\nACTION=evil\\nDRIVER=evil\\n"
                       "PATH=/nonexistent\\nMODALIAS=hid:b0003g0001v000005F3p00000007\\n")
    with open(path, "w") as f:
        f.write("\n".join(out))


def device_dir(d, devpath):
    """The directory of the device whose devpath file says @devpath (glue
    directories such as input/ are not in the mount)."""
    for top, dirs, files in os.walk(d.path("root")):
        if has_devpath(files):
            with open(own(top, "devpath")) as f:
                if f.read() == devpath + "\n":
                    return top
    raise AssertionError(f"no device with devpath {devpath}")


def test_device_strings_stay_in_their_file():
    with tempfile.TemporaryDirectory(prefix="driverfs-evil-") as tmp:
        tb = os.path.join(tmp, "evil.umockdev")
        evil_testbed(tb)
        hook_args = "'$HOME' ';' 'touch /tmp/driverfs-pwned'"
        os.mkdir(os.path.join(tmp, "plain"))
        os.mkdir(os.path.join(tmp, "evil"))
        plain_args, _ = drivers_config(os.path.join(tmp, "plain"), "hid", hook_args)
        args, log = drivers_config(os.path.join(tmp, "evil"), "hid", hook_args)
        plain = Daemon(os.path.join(TESTBEDS, "usb-tree.umockdev"), plain_args)
        d = Daemon(tb, args)
        try:
            clean, dirty = snapshot_tree(plain.mnt), snapshot_tree(d.mnt)
            hub = os.path.relpath(device_dir(d, HUB), d.mnt)
            # the same files everywhere but the two strings the hub did not
            # have: no string made or named one
            new = {hub + "/manufacturer", hub + "/serial"}
            assert set(dirty) - set(clean) == new and set(clean) <= set(dirty), (
                "files differ: " + repr(sorted(set(clean) ^ set(dirty) - new)[:20]))
            clean.update({p: (0, 0, 0, None) for p in new})
            inp = os.path.relpath(device_dir(d, INPUT), d.mnt)
            hid = os.path.relpath(device_dir(d, HID), d.mnt)
            changed = sorted(p for p in clean if clean[p] != dirty[p])
            # (name is the input device's sysfs name, passed through byte
            # for byte as sysfs gives it; driverfs:name is driverfsd's
            # description: docs/design.md §6.2)
            allowed = {hub + "/product", hub + "/manufacturer", hub + "/serial",
                       inp + "/driverfs:name", inp + "/name", hid + "/uevent"}
            assert set(changed) <= allowed, f"other files changed: {sorted(set(changed) - allowed)}"
            for p in allowed - {inp + "/name"}:
                what = dirty[p][3]
                assert len(what) <= 4096, f"{p}: {len(what)} bytes"
            with open(os.path.join(d.testbed.get_root_dir(), "sys" + INPUT, "name"), "rb") as f:
                assert dirty[inp + "/name"][3] == f.read()
            # one value per file, cut at the device's newline
            assert dirty[hub + "/product"][3] == b"Evil\n", dirty[hub + "/product"]
            assert dirty[hub + "/manufacturer"][3] == b"/../..\x01\x1b[31mred\x7f\t\n"
            # the input device's uevent text fails the check (its NAME= runs
            # over lines): its name is its name file's first line
            assert dirty[inp + "/driverfs:name"][3] == b"Keyboard\n", dirty[inp + "/driverfs:name"]

            # the hook: its own program with the literal arguments, the
            # documented variables, none of the smuggled ones
            env_file = os.path.join(log, os.path.basename(HID) + ".env")
            assert os.path.exists(env_file), f"the hook did not run: {os.listdir(log)}"
            with open(env_file) as f:
                env = dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)
            with open(os.path.join(log, os.path.basename(HID) + ".args")) as f:
                assert f.read() == "arg:$HOME\narg:;\narg:touch /tmp/driverfs-pwned\n"
            assert not os.path.exists("/tmp/driverfs-pwned")
            # that uevent text names DRIVER twice (a device's line after the
            # kernel's): it fails the check, and nothing of it is taken
            for k in ("HID_NAME", "HID_ID", "MODALIAS"):
                assert k not in env, f"{k} came from a text that failed the check: {env}"
            assert env.get("ACTION") == "probe" and env.get("DRIVER") == "record", env
            assert env.get("PATH") == "/usr/sbin:/usr/bin:/sbin:/bin", env
            assert env.get("PWD") == "/", f"the hook ran in {env.get('PWD')}, not in /"
            for k in ("LD_PRELOAD", "BASH_ENV", "HOME"):
                assert k not in env, f"{k} reached the hook: {env}"
            documented = {"ACTION", "DRIVERFS_PATH", "DEVPATH", "BUS", "CLASS", "DRIVER", "KERNEL_DRIVER",
                          "DEVNAME", "PATH", "PWD", "HID_ID", "HID_NAME", "MODALIAS",
                          "SHLVL", "OLDPWD", "_"}
            assert set(env) <= documented, f"unexpected variables: {set(env) - documented}"
            assert d.proc.poll() is None
        finally:
            d.stop()
            plain.stop()
