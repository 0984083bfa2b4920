#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The vm tier (issue 32): a QEMU guest with a real kernel where the tests
that need Linux itself run.

  vm.py [--work DIR] build          build the guest (once: cached by its inputs)
  vm.py [--work DIR] run SCRIPT     boot it, run SCRIPT (busybox sh) inside,
                                    print its TAP, exit 0/1 (77: no QEMU or kernel)
  vm.py [--work DIR] shell          boot it with a shell on this terminal

The guest is built from Debian packages only: the kernel of
linux-image-amd64 (fetched with `apt-get download`, never installed) with
the modules below and their dependencies, busybox-static, driverfsd,
driverfsctl, lspci and every library `ldd` names for them, and
tests/vm/guest/init. Everything is written under the work directory (the
meson build dir's tests/vm); nothing of the host's devices is touched.

Environment: DRIVERFSD, DRIVERFSCTL (the programs copied in),
DRIVERFS_VFIO_HOLD (tests/helpers/vfio-hold, static: copied in when set),
DRIVERFS_NVME_VIRT (tests/helpers/nvme-virt, static: copied in when set),
DRIVERFS_VM_ACCEL (kvm or tcg; default: kvm when /dev/kvm runs a guest),
DRIVERFS_VM_KERNEL_DEB (a linux-image .deb to use instead of fetching),
DRIVERFS_VM_TIMEOUT (seconds a boot may take, default 240)."""
import argparse
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import socket
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST_SRC = os.path.join(HERE, "guest")
SKIP = 77

# The guest's modules, loaded by its init in this order (their dependencies
# are resolved with depmod and copied too).
MODULES = ["fuse", "e1000e", "nvme", "vfio-pci", "vfio_iommu_type1", "pci-stub",
           "xhci-pci", "usb-storage", "sd_mod", "usbhid", "hid-generic", "evdev",
           "aer_inject"]

# Host programs copied into the guest (with their libraries), by guest path.
# (fusermount3: libfuse mounts through it for auto_unmount)
PROGRAMS = {"/usr/bin/lspci": "/usr/bin/lspci", "/usr/bin/lsusb": "/usr/bin/lsusb",
            "/usr/bin/fusermount3": "/usr/bin/fusermount3"}
# The tests' own static helpers, by guest path: the variable naming each
# (vfio-hold, the stand-in for QEMU/DPDK holding a VFIO group; nvme-virt,
# the NVMe virtualization management SR-IOV needs)
HELPERS = {"/usr/bin/vfio-hold": "DRIVERFS_VFIO_HOLD", "/usr/bin/nvme-virt": "DRIVERFS_NVME_VIRT"}
# Data files the programs read, copied when the host has them.
DATA = ["/usr/share/misc/pci.ids"]


def machine(accel, run):
    """The machine, in one place: q35 with an Intel IOMMU (interrupt
    remapping on, so that VFIO needs no unsafe-interrupts switch), four
    PCIe root ports (hot-pluggable slots, native PCIe hotplug: the kernel's
    pciehp, device_del pressing the attention button, about 5 s to the
    slot's power-off; q35's default since QEMU 6.1, ACPI hotplug through
    acpiphp, is turned off as on the real machines whose firmware hands
    PCIe hotplug to the OS): the NIC (e1000e) on rp1, an NVMe
    controller in an NVMe subsystem with one namespace on rp2, an xHCI with
    a USB keyboard and a USB stick on rp3, rp4 empty for device_add, and on
    rp5 an SR-IOV NVMe controller (QEMU 7.2's: up to 2 VFs, their secondary
    controllers given queue and interrupt resources from a flexible pool of
    4 and 2 by the NVMe Virtualization Management command; no namespace, in
    a subsystem of its own, which SR-IOV requires; nothing of it changes
    until a test writes its sriov_numvfs); the console on ttyS0, the test's
    results on ttyS1, QMP on a socket, and the test's requests for QMP
    commands on ttyS2 (a socket served by Requests)."""
    return [
        "-machine", "q35,kernel-irqchip=split", "-accel", accel, *CPU, "-m", "768",
        "-nodefaults", "-display", "none", "-no-reboot",
        "-global", "ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off",
        "-device", "intel-iommu,intremap=on",
        "-device", "pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1,addr=0x10",
        "-device", "pcie-root-port,id=rp2,bus=pcie.0,chassis=2,slot=2,addr=0x11",
        "-device", "pcie-root-port,id=rp3,bus=pcie.0,chassis=3,slot=3,addr=0x12",
        "-device", "pcie-root-port,id=rp4,bus=pcie.0,chassis=4,slot=4,addr=0x13",
        "-device", "pcie-root-port,id=rp5,bus=pcie.0,chassis=5,slot=5,addr=0x14",
        "-device", "e1000e,id=nic0,bus=rp1,netdev=net0",
        "-netdev", "user,id=net0,restrict=on",
        "-blockdev", "driver=null-co,node-name=nvm0,size=67108864,read-zeroes=on",
        "-device", "nvme-subsys,id=nvmesubsys0,nqn=driverfs-vm",
        "-device", "nvme,id=nvme0,bus=rp2,serial=driverfs0,subsys=nvmesubsys0",
        "-device", "nvme-ns,drive=nvm0,nsid=1",
        # after nvme0's namespace, which attaches to the controller before it
        "-device", "nvme-subsys,id=nvmesubsys1,nqn=driverfs-vm-sriov",
        "-device", "nvme,id=nvme1,bus=rp5,serial=driverfs1,subsys=nvmesubsys1,sriov_max_vfs=2,"
                   "sriov_vq_flexible=4,sriov_vi_flexible=2,max_ioqpairs=6,msix_qsize=4",
        "-device", "qemu-xhci,id=xhci,bus=rp3",
        "-device", "usb-kbd,bus=xhci.0",
        "-blockdev", "driver=null-co,node-name=stick0,size=16777216,read-zeroes=on",
        "-device", "usb-storage,bus=xhci.0,drive=stick0",
        "-qmp", "unix:%s,server=on,wait=off" % os.path.join(run, "qmp.sock"),
        "-chardev", "socket,id=req,path=%s,server=on,wait=off" % os.path.join(run, "req.sock"),
    ]


# QEMU's default CPU model under KVM too: -cpu host and max fail on hosts
# whose MSRs KVM will not set (seen: MSR 0x10a, a nested hypervisor)
CPU = ["-smp", "2"]
# no_timer_check: the kernel's check that the timer ticks through the
# IO-APIC waits a fixed number of loops, which a TCG guest on a busy host
# can miss, and it panics then ("timer doesn't work through
# Interrupt-remapped IO-APIC", seen with three guests on two cores)
CMDLINE = "console=ttyS0 intel_iommu=on panic=-1 loglevel=4 no_timer_check"


def log(msg):
    print("# vm: " + msg, flush=True)


def skip(msg):
    log("skip: " + msg)
    sys.exit(SKIP)


def sha256_file(path, h=None):
    h = h or hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h


# ---- the kernel ----------------------------------------------------------

def fetch_kernel(work):
    """The linux-image .deb, downloaded once into WORK/kernel."""
    given = os.environ.get("DRIVERFS_VM_KERNEL_DEB")
    if given:
        if not os.path.isfile(given):
            skip("DRIVERFS_VM_KERNEL_DEB names no file: " + given)
        return given
    kdir = os.path.join(work, "kernel")
    os.makedirs(kdir, exist_ok=True)
    if not shutil.which("apt-cache") or not shutil.which("apt-get"):
        skip("no apt-get: the kernel package cannot be had")
    try:
        out = subprocess.run(["apt-cache", "depends", "linux-image-amd64"], capture_output=True,
                             text=True, check=True).stdout
    except subprocess.CalledProcessError as e:
        skip("apt-cache depends linux-image-amd64 failed: " + e.stderr.strip())
    m = re.search(r"Depends:\s*(linux-image-[0-9][^\s<>]*)", out)
    if not m:
        skip("linux-image-amd64 names no versioned kernel package")
    pkg = m.group(1)
    have = glob.glob(os.path.join(kdir, glob.escape(pkg) + "_*_amd64.deb"))
    if have:
        return have[0]
    log("downloading " + pkg)
    r = subprocess.run(["apt-get", "download", pkg], cwd=kdir, capture_output=True, text=True)
    have = glob.glob(os.path.join(kdir, glob.escape(pkg) + "_*_amd64.deb"))
    if r.returncode != 0 or not have:
        skip("apt-get download %s failed: %s" % (pkg, r.stderr.strip()))
    return have[0]


def module_closure(depfile, names):
    """The module files (relative to the modules dir) of @names and what
    they depend on, from depmod's modules.dep."""
    deps = {}
    byname = {}
    with open(depfile) as f:
        for line in f:
            mod, _, rest = line.partition(":")
            deps[mod] = rest.split()
            base = os.path.basename(mod).split(".ko")[0]
            byname[base.replace("-", "_")] = mod
    out = []

    def add(mod):
        if mod in out:
            return
        for d in deps.get(mod, []):
            add(d)
        out.append(mod)

    for n in names:
        mod = byname.get(n.replace("-", "_"))
        if mod is None:
            raise SystemExit("vm.py: no module %s in the kernel package" % n)
        add(mod)
    return out


def extract_kernel(work, deb):
    """The kernel image and the reduced module tree, once per package:
    WORK/kernel/<deb name>/{vmlinuz,modules/lib/modules/RELEASE}."""
    depmod = shutil.which("depmod") or next((p for p in ("/usr/sbin/depmod", "/sbin/depmod")
                                              if os.access(p, os.X_OK)), None)
    if not depmod:
        skip("no depmod (kmod)")
    out = os.path.join(work, "kernel", os.path.basename(deb)[:-4])
    if os.path.exists(os.path.join(out, "done")):
        return out
    shutil.rmtree(out, ignore_errors=True)
    full = tempfile.mkdtemp(prefix="full-", dir=os.path.join(work, "kernel"))
    try:
        log("extracting " + os.path.basename(deb))
        subprocess.run("dpkg-deb --fsys-tarfile '%s' | tar -x -C '%s' --wildcards "
                       "'./boot/vmlinuz-*' './lib/modules/*'" % (deb, full), shell=True, check=True)
        release = os.listdir(os.path.join(full, "lib", "modules"))[0]
        subprocess.run([depmod, "-b", full, release], check=True)
        mdir = os.path.join(full, "lib", "modules", release)
        mods = module_closure(os.path.join(mdir, "modules.dep"), MODULES)
        small = os.path.join(out, "modules")
        sdir = os.path.join(small, "lib", "modules", release)
        for m in mods:
            os.makedirs(os.path.dirname(os.path.join(sdir, m)), exist_ok=True)
            shutil.copy2(os.path.join(mdir, m), os.path.join(sdir, m))
        for f in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
            shutil.copy2(os.path.join(mdir, f), os.path.join(sdir, f))
        subprocess.run([depmod, "-b", small, release], check=True)
        shutil.copy2(os.path.join(full, "boot", "vmlinuz-" + release), os.path.join(out, "vmlinuz"))
        with open(os.path.join(out, "release"), "w") as f:
            f.write(release + "\n")
        with open(os.path.join(out, "load"), "w") as f:
            f.write(" ".join(MODULES) + "\n")
        open(os.path.join(out, "done"), "w").close()
    finally:
        shutil.rmtree(full, ignore_errors=True)
    return out


# ---- the initramfs -------------------------------------------------------

class Cpio:
    """A newc cpio archive, as the kernel unpacks an initramfs."""

    def __init__(self):
        self.data = bytearray()
        self.ino = 1
        self.dirs = set()

    def _entry(self, name, mode, body=b"", nlink=1):
        name = name.lstrip("/").encode() + b"\0"
        hdr = "070701" + "".join("%08X" % v for v in (
            self.ino, mode, 0, 0, nlink, 0, len(body), 0, 0, 0, 0, len(name), 0))
        self.ino += 1
        self.data += hdr.encode() + name
        self.data += b"\0" * (-len(self.data) % 4)
        self.data += body
        self.data += b"\0" * (-len(self.data) % 4)

    def dir(self, path):
        path = path.rstrip("/")
        if not path or path in self.dirs:
            return
        self.dir(os.path.dirname(path))
        self.dirs.add(path)
        self._entry(path, stat.S_IFDIR | 0o755, nlink=2)

    def file(self, path, body, mode=0o644):
        self.dir(os.path.dirname(path))
        self._entry(path, stat.S_IFREG | mode, body)

    def copy(self, path, src):
        with open(src, "rb") as f:
            self.file(path, f.read(), stat.S_IMODE(os.stat(src).st_mode) | 0o444)

    def symlink(self, path, target):
        self.dir(os.path.dirname(path))
        self._entry(path, stat.S_IFLNK | 0o777, target.encode())

    def tree(self, root, prefix="/"):
        for d, _, files in os.walk(root):
            rel = os.path.relpath(d, root)
            gdir = os.path.normpath(os.path.join(prefix, rel))
            self.dir(gdir)
            for f in sorted(files):
                self.copy(os.path.join(gdir, f), os.path.join(d, f))

    def finish(self):
        self._entry("TRAILER!!!", 0, nlink=1)
        self.data += b"\0" * (-len(self.data) % 512)
        return bytes(self.data)


def libraries(program):
    """What `ldd` names for @program: (path the loader looks for, real file)."""
    r = subprocess.run(["ldd", program], capture_output=True, text=True)
    if r.returncode != 0:
        return []
    out = []
    for line in r.stdout.splitlines():
        m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)", line)
        if m:
            out.append(m.group(1))
    return out


def busybox():
    """busybox-static's binary (a static one: the guest has no loader for it)."""
    for p in ("/bin/busybox", "/usr/bin/busybox"):
        if os.access(p, os.X_OK) and not libraries(p):
            return p
    skip("no static busybox (busybox-static)")


def guest_inputs():
    """Every host file the guest image is built from, by guest path."""
    files = {}
    for var, gpath in (("DRIVERFSD", "/usr/sbin/driverfsd"), ("DRIVERFSCTL", "/usr/bin/driverfsctl")):
        p = os.environ.get(var)
        if not p or not os.access(p, os.X_OK):
            raise SystemExit("vm.py: %s must name the built program" % var)
        files[gpath] = p
    # the tests' static helpers (optional: a sanitized build has none)
    for gpath, var in HELPERS.items():
        p = os.environ.get(var)
        if p and os.access(p, os.X_OK):
            files[gpath] = p
    for gpath, p in PROGRAMS.items():
        if os.access(p, os.X_OK):
            files[gpath] = p
    for prog in list(files.values()):
        for lib in libraries(prog):
            files[lib] = lib
    for p in DATA:
        if os.path.isfile(p):
            files[p] = p
    files["/bin/busybox"] = busybox()
    files["/init"] = os.path.join(GUEST_SRC, "init")
    return files


def build(work):
    """The guest: WORK/guest/{vmlinuz,initrd}, rebuilt when an input changed."""
    if not shutil.which("qemu-system-x86_64"):
        skip("no qemu-system-x86_64")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        t0 = time.monotonic()
        kdir = extract_kernel(work, fetch_kernel(work))
        files = guest_inputs()
        h = hashlib.sha256()
        sha256_file(os.path.abspath(__file__), h)
        h.update(kdir.encode())
        for gpath in sorted(files):
            h.update(gpath.encode())
            sha256_file(files[gpath], h)
        key = h.hexdigest()
        gdir = os.path.join(work, "guest")
        keyfile = os.path.join(gdir, "key")
        if os.path.exists(keyfile) and open(keyfile).read() == key:
            log("guest cached (%.1f s)" % (time.monotonic() - t0))
            accel(work, gdir)  # probed under the lock: once for parallel tests
            return gdir
        shutil.rmtree(gdir, ignore_errors=True)
        os.makedirs(gdir)
        c = Cpio()
        for d in ("/dev", "/proc", "/sys", "/run", "/tmp", "/devices", "/sbin", "/usr/sbin",
                  "/var/lib/driverfsd", "/etc"):
            c.dir(d)
        for gpath in sorted(files):
            c.copy(gpath, files[gpath])
        c.tree(os.path.join(kdir, "modules"))
        c.file("/etc/passwd", b"root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")
        c.file("/etc/group", b"root:x:0:\nnogroup:x:65534:\n")
        c.file("/etc/modules-load", open(os.path.join(kdir, "load"), "rb").read())
        with open(os.path.join(gdir, "initrd.base"), "wb") as f:
            f.write(c.finish())
        shutil.copy2(os.path.join(kdir, "vmlinuz"), os.path.join(gdir, "vmlinuz"))
        with open(keyfile, "w") as f:
            f.write(key)
        log("guest built in %.1f s (%d KiB initramfs)" % (
            time.monotonic() - t0, os.path.getsize(os.path.join(gdir, "initrd.base")) // 1024))
        accel(work, gdir)
        return gdir


# ---- the guest's requests for QMP commands -------------------------------

class Qmp:
    """A QMP client on QEMU's socket: commands in turn, events kept."""

    def __init__(self, path, timeout):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.timeout = timeout
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self.events = []
        self._message()  # the greeting
        self.command("qmp_capabilities")

    def _message(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("QMP closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def command(self, execute, arguments=None):
        """QEMU's answer: ("ok", return value) or ("error", its description)."""
        msg = {"execute": execute}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            m = self._message()
            if "event" in m:
                self.events.append(m)
            elif "return" in m:
                return "ok", m["return"]
            elif "error" in m:
                return "error", m["error"].get("desc", "?")

    def wait_event(self, name, device, deadline):
        """Whether event @name for @device came (or comes before @deadline)."""
        while True:
            for e in self.events:
                if e["event"] == name and e.get("data", {}).get("device") == device:
                    self.events.remove(e)
                    return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                m = self._message()
            except socket.timeout:
                return False
            finally:
                self.sock.settimeout(self.timeout)
            if "event" in m:
                self.events.append(m)


def parse_request(line):
    """A request line: "COMMAND [ARGS]", ARGS a JSON object or QEMU's
    "key=value,..." (device_add's first bare word its driver, device_del's
    its id). Returns (command, arguments)."""
    cmd, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    if not re.match(r"[a-z][a-z0-9_-]*$", cmd):
        raise ValueError("not a QMP command: %r" % cmd)
    if rest.startswith("{"):
        args = json.loads(rest)
        if not isinstance(args, dict):
            raise ValueError("arguments are not an object")
        return cmd, args
    args = {}
    for i, item in enumerate(p for p in rest.split(",") if p):
        k, eq, v = item.partition("=")
        if not eq:
            if i != 0 or cmd not in ("device_add", "device_del"):
                raise ValueError("%r is not key=value" % item)
            k, v = ("driver" if cmd == "device_add" else "id"), item
        args[k] = v
    return cmd, args


class Requests:
    """The guest's third serial port (ttyS2), a socket here: each line the
    guest writes is a QMP command (parse_request), run on QEMU's QMP
    socket; the answer goes back as one line, "ok [JSON]" or "error
    DESCRIPTION". device_del answers once QEMU has deleted the device (its
    DEVICE_DELETED event: the guest's pciehp powered the slot off), or
    "error timeout" after 60 s. Every request and answer is logged to
    RUN/requests. The thread ends when QEMU closes the socket (it exited)."""

    TIMEOUT = 60

    def __init__(self, run, proc):
        self.run, self.proc = run, proc
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def join(self):
        self.thread.join(timeout=5)

    def _connect(self, name):
        path = os.path.join(self.run, name)
        while self.proc.poll() is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                return s
            except OSError:
                s.close()
                time.sleep(0.1)
        return None

    def _serve(self):
        logf = open(os.path.join(self.run, "requests"), "w", buffering=1)
        try:
            s = self._connect("req.sock")
            if s is None:
                return
            qmp = None
            buf = b""
            while True:
                try:
                    chunk = s.recv(4096)
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, _, buf = buf.partition(b"\n")
                    line = line.decode(errors="replace").strip("\r\0 ")
                    if not line:
                        continue
                    logf.write("> " + line + "\n")
                    try:
                        if qmp is None:
                            qmp = Qmp(os.path.join(self.run, "qmp.sock"), self.TIMEOUT)
                        answer = self._request(qmp, line)
                    except ValueError as e:
                        answer = "error " + str(e)
                    except OSError as e:  # timeouts, QEMU gone: a new connection next time
                        answer = "error " + (str(e) or type(e).__name__)
                        if qmp is not None:
                            qmp.sock.close()
                            qmp = None
                    answer = answer.replace("\n", " ")
                    logf.write("< " + answer + "\n")
                    try:
                        s.sendall(answer.encode() + b"\n")
                    except OSError:
                        return
                if len(buf) > 65536:  # a line that never ends: dropped
                    buf = b""
        finally:
            logf.close()

    def _request(self, qmp, line):
        cmd, args = parse_request(line)
        status, value = qmp.command(cmd, args)
        if status != "ok":
            return "error " + str(value)
        if cmd == "device_del" and "id" in args:
            if not qmp.wait_event("DEVICE_DELETED", args["id"], time.monotonic() + self.TIMEOUT):
                return "error timeout: no DEVICE_DELETED for " + args["id"]
        return "ok" if value in ({}, None) else "ok " + json.dumps(value)


# ---- booting -------------------------------------------------------------

def kvm_works(work, gdir):
    """Whether QEMU runs this guest's kernel under KVM here: /dev/kvm may
    open, and even run a few instructions, yet hang a kernel (seen: the
    decompressor spinning in exits forever under a nested hypervisor). The
    kernel is booted with no root to panic on (QEMU exits at once under
    -no-reboot; about 1 s under KVM, 5 s under TCG); the answer is kept
    for the kernel in WORK/accel, so a run probes once."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    kernel = os.path.join(gdir, "vmlinuz")
    key = "%s %d\n" % (os.path.realpath(kernel), os.stat(kernel).st_mtime_ns)
    cache = os.path.join(work, "accel")
    if os.path.exists(cache):
        with open(cache) as f:
            k, _, answer = f.read().partition("=")
        if k == key:
            return answer == "kvm"
    console = os.path.join(work, "kvm-probe.console")
    cmd = ["qemu-system-x86_64", "-accel", "kvm", "-machine", "q35", *CPU, "-m", "256",
           "-nodefaults", "-display", "none", "-no-reboot", "-kernel", kernel,
           "-append", "console=ttyS0 panic=-1 root=/dev/nonexistent", "-serial", "file:" + console]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        p.wait(timeout=20)
        ok = "Kernel panic" in open(console, errors="replace").read()
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        ok = False
    log("KVM %s (probed in %.1f s)" % ("works" if ok else "does not run the kernel: TCG",
                                       time.monotonic() - t0))
    with open(cache, "w") as f:
        f.write(key + "=" + ("kvm" if ok else "tcg"))
    return ok


def accel(work, gdir):
    a = os.environ.get("DRIVERFS_VM_ACCEL")
    if a:
        return a
    return "kvm" if kvm_works(work, gdir) else "tcg"


def boot(work, gdir, name, script, interactive=False):
    """Boots the guest with @script (busybox sh, beside tests/vm/guest's
    files in /test) as its test program; returns (qemu's exit status, the
    run directory)."""
    run = os.path.join(work, "runs", name)
    shutil.rmtree(run, ignore_errors=True)
    os.makedirs(run)
    c = Cpio()
    for f in sorted(os.listdir(GUEST_SRC)):
        if f.endswith(".sh"):
            c.copy("/test/" + f, os.path.join(GUEST_SRC, f))
    if script:
        c.copy("/test/" + os.path.basename(script), script)
        c.file("/test/run", ("#!/bin/sh\nexec /bin/sh /test/%s\n" % os.path.basename(script)).encode(),
               0o755)
    initrd = os.path.join(run, "initrd")
    with open(initrd, "wb") as out, open(os.path.join(gdir, "initrd.base"), "rb") as base:
        shutil.copyfileobj(base, out)
        out.write(c.finish())
    a = accel(work, gdir)
    log("booting %s under %s" % (name, a.upper()))
    cmd = ["qemu-system-x86_64", *machine(a, run), "-kernel", os.path.join(gdir, "vmlinuz"),
           "-initrd", initrd]
    if interactive:
        cmd += ["-append", CMDLINE + " driverfs.shell=1", "-serial", "mon:stdio",
                "-serial", "file:" + os.path.join(run, "results"), "-serial", "chardev:req"]
        log("QMP: " + os.path.join(run, "qmp.sock") + "; Ctrl-A X quits")
        p = subprocess.Popen(cmd)
        req = Requests(run, p)
        rc = p.wait()
        req.join()
        return rc, run
    cmd += ["-append", CMDLINE, "-serial", "file:" + os.path.join(run, "console"),
            "-serial", "file:" + os.path.join(run, "results"), "-serial", "chardev:req"]
    with open(os.path.join(run, "cmdline"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    t0 = time.monotonic()
    with open(os.path.join(run, "qemu.log"), "w") as qlog:
        p = subprocess.Popen(cmd, stdout=qlog, stderr=subprocess.STDOUT, start_new_session=True)
        req = Requests(run, p)
        try:
            rc = p.wait(timeout=float(os.environ.get("DRIVERFS_VM_TIMEOUT", "240")))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = None
        req.join()
    log("guest ran %.1f s, qemu exit %s" % (time.monotonic() - t0, rc))
    os.unlink(initrd)  # the guest's copy with this test (22 MB), made again by each boot
    return rc, run


def tail(path, n=40):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-n:]
    except OSError:
        return []


def reached_init(run):
    """Whether the guest's kernel came up to its init (its first line)."""
    return any(line.startswith("init: ") for line in tail(os.path.join(run, "console"), 100000))


def run_test(work, script):
    gdir = build(work)
    name = os.path.splitext(os.path.basename(script))[0]
    rc, run = boot(work, gdir, name, script)
    if not reached_init(run):
        # the kernel did not come up (a TCG guest on a busy host): that is
        # the host's, not the test's; once more, its console's end shown
        log("the guest's kernel did not reach init; booting once more. Its console's end:")
        for line in tail(os.path.join(run, "console"), 5):
            log("  " + line)
        rc, run = boot(work, gdir, name, script)
    lines = tail(os.path.join(run, "results"), 100000)
    done = None
    for line in lines:
        m = re.match(r"# vm: done (\d+)$", line)
        if m:
            done = int(m.group(1))
        print(line)
    failed = [line for line in lines if line.startswith("not ok") and "# TODO" not in line]
    plan = any(re.match(r"1\.\.\d+$", line) for line in lines)
    if done is None or rc != 0:
        print("Bail out! the guest did not finish its test (qemu exit %s); its console's end:" % rc)
        for line in tail(os.path.join(run, "console")) + tail(os.path.join(run, "qemu.log"), 10):
            print("#   " + line)
        return 1
    if failed or not plan or done != 0:
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=os.environ.get("DRIVERFS_VM_WORK", os.path.join(os.getcwd(), "vm")))
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build")
    r = sub.add_parser("run")
    r.add_argument("script")
    sub.add_parser("shell")
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    if args.cmd == "build":
        build(work)
        return 0
    if args.cmd == "run":
        return run_test(work, args.script)
    gdir = build(work)
    return boot(work, gdir, "shell", None, interactive=True)[0]


if __name__ == "__main__":
    sys.exit(main())
