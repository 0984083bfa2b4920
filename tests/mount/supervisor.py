# SPDX-License-Identifier: LGPL-2.1-or-later
"""A supervisor of driverfsd --handover, speaking the protocol systemd
speaks (docs/design.md §10.1): the descriptors a daemon sends with
FDSTORE=1 on NOTIFY_SOCKET are kept by name (FDNAME=), dropped on
FDSTOREREMOVE=1, and the next daemon is started with them as LISTEN_FDS.
Shared by tests/mount/test_handover.py and bench/handover-bench.py."""
import fcntl
import os
import socket
import subprocess
import time

from harness import DAEMON, umockdev_env


class Supervised:
    """A daemon as a supervisor runs it: its notifications read with the
    descriptors they carry (kept by name, FDNAME=), the next one started
    with them as LISTEN_FDS."""

    def __init__(self, testbed, mnt, tmp, store=None, extra=(), env=None, ready=60):
        """@testbed None: the daemon serves what @extra says (--snapshot);
        @env: more of the daemon's environment; @ready: how long to wait
        for its READY=1 (s)."""
        self.mnt, self.store, self.lines = mnt, dict(store or {}), []
        path = os.path.join(tmp, f"notify-{time.monotonic_ns()}")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        more = dict(env or {}, NOTIFY_SOCKET=path)
        env = (umockdev_env(testbed, more) if testbed is not None
               else dict(os.environ, **more))
        args = [DAEMON, "-f", "--handover", "--transition-record",
                os.path.join(tmp, "transition"), *extra, mnt]
        pass_fds = ()
        if self.store:
            names = sorted(self.store)
            env = dict(env, LISTEN_FDS=str(len(names)), LISTEN_FDNAMES=":".join(names))
            # free numbers above those first (F_DUPFD: never one in use),
            # so that moving them to 3, 4 ... clobbers none
            high = [fcntl.fcntl(self.store[n], fcntl.F_DUPFD, 3 + len(names))
                    for n in names]
            pass_fds = tuple(range(3, 3 + len(names)))

            def preexec():
                for i, fd in enumerate(high):
                    os.dup2(fd, 3 + i)
            # LISTEN_PID is the daemon's own: the shell sets it and becomes it
            args = ["sh", "-c", 'LISTEN_PID=$$ exec "$@"', "sh", *args]
        else:
            preexec, high = None, []
        self.log = open(os.path.join(tmp, f"log-{time.monotonic_ns()}"), "w+")
        self.proc = subprocess.Popen(args, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     pass_fds=pass_fds, preexec_fn=preexec)
        for fd in high:
            os.close(fd)
        self.wait_for("READY=1", ready)

    def wait_for(self, line, timeout=60):
        deadline = time.monotonic() + timeout
        while line not in self.lines:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise AssertionError(f"no {line} from the daemon:\n{self.output()}")
            self.sock.settimeout(min(left, 1))
            try:
                msg, fds, _, _ = socket.recv_fds(self.sock, 4096, 8)
            except socket.timeout:
                continue
            text = msg.decode()
            self.lines += text.split("\n")
            name = [x[len("FDNAME="):] for x in text.split("\n") if x.startswith("FDNAME=")]
            if "FDSTOREREMOVE=1" in text.split("\n") and name:
                old = self.store.pop(name[0], None)
                if old is not None:
                    os.close(old)
            if "FDSTORE=1" in text.split("\n") and name and fds:
                old = self.store.get(name[0])
                if old is not None:
                    os.close(old)
                self.store[name[0]] = fds[0]
            else:
                for fd in fds:
                    os.close(fd)

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.sock.close()
        self.log.close()
