# SPDX-License-Identifier: LGPL-2.1-or-later
"""Directory listings kept between the replies of one listing (issue 14,
item 4): a listing belongs to one node, (inode, generation), not to an inode
number that hotplug or a reload gives to another directory; the entries of
a driver's directory hold the driver. Also the power_log copies shared by
open files and bounded per uid (item 7), and links deeper than 64 levels."""
import ctypes
import os
import re
import struct

from harness import Daemon
from hotplug_util import KBD, ROOT_HUB2, STICK, TESTBED, blocks, devpath, pull_out, under, \
    wait_event, without

libc = ctypes.CDLL(None, use_errno=True)
SYS_getdents64 = 217  # x86_64


def getdents(fd, size=4096):
    """The names of one getdents64() call on @fd ([] at the end)."""
    buf = ctypes.create_string_buffer(size)
    n = libc.syscall(SYS_getdents64, fd, buf, size)
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    names, pos = [], 0
    while pos < n:
        _ino, _off, reclen, _type = struct.unpack_from("QqHB", buf.raw, pos)
        names.append(buf.raw[pos + 19:pos + reclen].split(b"\0", 1)[0].decode())
        pos += reclen
    return names


def names_from(path, offset):
    """Every name of the directory @path from the directory offset @offset
    (2: the first entry after the dots), as a seekdir() there reads them."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.lseek(fd, offset, os.SEEK_SET)
        names = []
        while True:
            got = getdents(fd)
            if not got:
                return names
            names += got
    finally:
        os.close(fd)


def start_a_listing(path):
    """Opens @path, reads its first entry or so, and closes it: the daemon's
    listing was started and never read to its end."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert getdents(fd, 64), f"{path} lists something"
    finally:
        os.close(fd)


def renumbered(block, k):
    """The record @block of the keyboard with the device node the kernel
    gives its @k-th copy: a name and number of its own (its number + 10k),
    as the kernel does and umockdev wants (it keeps a removed device's
    node, and a second node of that name aborts it)."""
    node = re.search(r"^N: ([^=\n]*?)(\d+)(=|$)", block, re.M)
    if not node:
        return block
    stem, num = node.group(1), node.group(2)
    renamed = f"{stem}{int(num) + 10 * k:0{len(num)}d}"
    block = re.sub(rf"{re.escape(stem + num)}(?!\d)", renamed, block)
    block = re.sub(r"^E: MINOR=(\d+)$", lambda m: f"E: MINOR={int(m.group(1)) + 10 * k}",
                   block, flags=re.M)
    return re.sub(r"^A: dev=(\d+):(\d+)", lambda m: f"A: dev={m.group(1)}:{int(m.group(2)) + 10 * k}",
                  block, flags=re.M)


def test_a_new_directory_in_a_reused_slot_lists_its_own_entries(tmp_path):
    # A device's directory is listed in part and closed; the device goes
    # (its nodes forgotten) and another comes whose directory takes the
    # old one's inode number (the number of the last node freed, which the
    # kernel's forgets usually make the directory's). A seek into the new
    # directory (no listing of it from offset 0 yet) served the old
    # listing in the old code: entries of a dead device, left out, so the
    # directory looked empty. The forgets come asynchronously: when a
    # newcomer got another number, the round is made again with it.
    d = Daemon(without(tmp_path, KBD))
    try:
        top, records = STICK, None
        kbd = [b for b in blocks(TESTBED) if under(b, KBD)]
        for k in range(4, 10):
            old = d.path("root", ROOT_HUB2, os.path.basename(top))
            old_ino = os.stat(old).st_ino
            start_a_listing(old)
            pull_out(d, top, records)
            assert not os.path.exists(old)
            # a copy of the keyboard at another port
            name = f"1-1.2.{k}"
            records = [renumbered(b.replace("1-1.2.1", name), k) for b in kbd]
            top = KBD.replace("1-1.2.1", name)
            for b in records:
                assert d.testbed.add_from_string(b + "\n")
                wait_event(d, "add", devpath(b))
            new = d.path("root", ROOT_HUB2, name)
            if os.stat(new).st_ino == old_ino:
                break
        else:
            raise AssertionError("no new directory took a removed one's inode number")
        from_2 = names_from(new, 2)  # before any listing of it from 0
        whole = os.listdir(new)
        assert name + ":1.0" in whole, whole  # the keyboard's interface
        assert sorted(from_2) == sorted(whole), \
            f"a seek into the new directory lists its own entries: {from_2}"
    finally:
        d.stop()  # fails on what a sanitizer reported


def test_a_reload_frees_no_driver_a_listing_still_names(tmp_path):
    # A driver's directory is listed in part and closed; a reload drops the
    # driver (its node forgotten, its last reference gone) and another
    # reload brings one of that name back, whose directory takes the old
    # one's number. The old code kept the first listing, whose "kind" and
    # "priority" entries named the freed driver: a seek into the new
    # directory served them, and reading "kind" read freed memory (ASan:
    # heap-use-after-free in driver_file_show; without it, garbage or no
    # entry).
    from test_config import Reloadable
    os.mkdir(tmp_path / "drivers.d")
    r = Reloadable(str(tmp_path))
    try:
        drv = r.d.path("bus", "pci", "drivers", "bridge-quiesce")
        r.add_driver("10-bridge.conf", "bridge-quiesce")
        assert r.hup() == "STATUS=reloaded"
        # the forgets come asynchronously: when the new directory got
        # another number, the round is made again
        for _ in range(10):
            old_ino = os.stat(drv).st_ino
            start_a_listing(drv)
            os.unlink(os.path.join(r.drivers, "10-bridge.conf"))
            assert r.hup() == "STATUS=reloaded"
            assert not os.path.exists(drv)
            r.add_driver("10-bridge.conf", "bridge-quiesce")
            assert r.hup() == "STATUS=reloaded"
            if os.stat(drv).st_ino == old_ino:
                break
        else:
            raise AssertionError("the new driver's directory never took the old one's number")
        from_2 = names_from(drv, 2)
        assert sorted(from_2) == sorted(os.listdir(drv)), from_2
        assert "kind" in from_2
        with open(os.path.join(drv, "kind")) as f:
            assert f.read() == "user\n"
    finally:
        r.d.stop()  # fails on what a sanitizer reported


def test_links_deeper_than_64_levels(tmp_path):
    # A chain of 80 devices: the "subsystem" link of the deepest climbs
    # 80-odd levels back to the mount root. The old code stopped at 64
    # "../" and pointed into the tree instead.
    depth = 80
    path = "/devices/platform"
    records = []
    for i in range(depth):
        path += f"/deep{i}"
        records.append(f"P: {path}\nE: SUBSYSTEM=platform\n")
    bed = tmp_path / "deep.umockdev"
    bed.write_text("\n".join(records) + "\n")
    d = Daemon(str(bed))
    try:
        place = [p for p in os.listdir(d.path("root")) if p.startswith("platform")]
        deepest = d.path("root", *place, *[f"deep{i}" for i in range(depth)])
        assert os.path.isdir(deepest)
        link = os.readlink(os.path.join(deepest, "subsystem"))
        assert link.endswith("bus/platform") and link.count("../") > 64, link
        assert os.path.realpath(os.path.join(deepest, "subsystem")) == \
            os.path.realpath(d.path("bus", "platform"))
    finally:
        d.stop()
