# SPDX-License-Identifier: LGPL-2.1-or-later
"""mount(8) and fstab (issue 19 item 1, docs/design.md §11): the line
"driverfs MOUNTPOINT fuse.driverfsd defaults,nofail,... 0 0" mounts through
mount.fuse3, which runs "driverfsd SOURCE MOUNTPOINT -o OPTIONS": the source
becomes the mount's fsname, config= is driverfsd's own, what mount(8) and
systemd add is left out, and /proc/mounts shows "driverfs MOUNTPOINT
fuse.driverfsd", so that findmnt and mount -a see the entry as mounted;
umount unmounts it and the daemon ends. mount(8) runs helpers with its own
PATH: the test runs in a mount namespace of its own, where the build's
driverfsd is bind-mounted into /usr/local/sbin. The live machine is served,
read only."""
import os
import shutil
import subprocess

import pytest

DRIVERFSD = os.environ.get("DRIVERFSD", "driverfsd")


@pytest.fixture
def setup(tmp_path):
    if not shutil.which("unshare") or not os.path.exists("/sbin/mount.fuse3"):
        pytest.skip("needs unshare and mount.fuse3")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    os.chmod(str(tmp_path), 0o755)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(os.path.abspath(DRIVERFSD), bindir / "driverfsd")
    mnt = tmp_path / "devices"
    mnt.mkdir()
    conf = tmp_path / "driverfsd.conf"
    conf.write_text(f"[Daemon]\nTransitionRecord={tmp_path}/transition\n"
                    f"[Binding]\nPersistFile={tmp_path}/bindings\n")
    fstab = tmp_path / "fstab"
    fstab.write_text(f"driverfs {mnt} fuse.driverfsd defaults,nofail,_netdev,"
                     f"x-systemd.device-timeout=10,config={conf} 0 0\n")
    return str(bindir), str(mnt), str(conf), str(fstab)


def in_namespace(bindir, script):
    """@script (sh) in a mount namespace where /usr/local/sbin is @bindir."""
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-ec",
                        f"mount --bind {bindir} /usr/local/sbin\n{script}"],
                       capture_output=True, text=True, timeout=120)
    return r


def test_an_fstab_line_mounts_and_unmounts(setup):
    bindir, mnt, conf, fstab = setup
    r = in_namespace(bindir, f"""
mount -T {fstab} {mnt}
findmnt -n -o SOURCE,FSTYPE,OPTIONS {mnt}
test -f {mnt}/power
# the entry is seen as mounted: mount -a mounts nothing more
mount -a -T {fstab}
echo "mounts: $(grep -c " {mnt} " /proc/self/mounts)"
findmnt --tab-file {fstab} -n -o TARGET {mnt} >/dev/null
umount {mnt}
if mountpoint -q {mnt}; then echo still-mounted; fi
echo done
""")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    source, fstype, options = lines[0].split()
    assert (source, fstype) == ("driverfs", "fuse.driverfsd"), lines[0]
    # nosuid, nodev: mount.fuse3's dev,suid are mount(8)'s, left out
    assert "nosuid" in options and "nodev" in options, options
    assert "mounts: 1" in lines
    assert lines[-1] == "done" and "still-mounted" not in lines


def test_mount_t_with_driverfsds_own_options(setup, tmp_path):
    bindir, mnt, conf, fstab = setup
    r = in_namespace(bindir, f"""
mount -t fuse.driverfsd machine0 {mnt} -o config={conf},ro,x-mount.mkdir
findmnt -n -o SOURCE,FSTYPE,OPTIONS {mnt}
cat {mnt}/name >/dev/null
umount {mnt}
""")
    assert r.returncode == 0, r.stdout + r.stderr
    source, fstype, options = r.stdout.split()
    assert (source, fstype) == ("machine0", "fuse.driverfsd")
    assert options.startswith("ro,"), options


def test_a_bad_source_or_option_is_refused(setup):
    bindir, mnt, conf, fstab = setup
    r = subprocess.run([DRIVERFSD, "bad/source", mnt, "-o", f"config={conf}"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "bad source 'bad/source'" in r.stderr
    r = subprocess.run([DRIVERFSD, "a", "b", mnt], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "unexpected argument" in r.stderr
