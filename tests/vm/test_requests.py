# SPDX-License-Identifier: LGPL-2.1-or-later
"""vm.py's channel for the guest's QMP requests (Requests), without QEMU:
a stand-in serves the two sockets QEMU would (the guest's ttyS2, QMP),
and the requests, their answers and the ends (a timeout, QEMU gone) are
checked here, where a hang or a wrong answer would otherwise show only as
a guest test that did not finish."""
import json
import os
import socket
import sys
import tempfile
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm  # noqa: E402


class FakeQemu:
    """QEMU's two server sockets in RUN: req.sock (the guest's end of its
    third serial port is this test) and qmp.sock, answering as @answer
    says: a function of the command's dict returning the messages to
    send (events and the reply)."""

    def __init__(self, run, answer):
        self.run, self.answer = run, answer
        self.alive = True
        self.commands = []
        self.qmp_srv = self._listen("qmp.sock")
        self.req_srv = self._listen("req.sock")
        threading.Thread(target=self._qmp, daemon=True).start()

    def _listen(self, name):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(os.path.join(self.run, name))
        s.listen(1)
        return s

    def poll(self):  # as subprocess.Popen's
        return None if self.alive else 0

    def _qmp(self):
        while True:
            try:
                c, _ = self.qmp_srv.accept()
            except OSError:
                return
            f = c.makefile("rwb", buffering=0)
            f.write(b'{"QMP": {"version": {}, "capabilities": []}}\n')
            for line in f:
                cmd = json.loads(line)
                self.commands.append(cmd)
                if cmd["execute"] == "qmp_capabilities":
                    out = [{"return": {}}]
                else:
                    out = self.answer(cmd)
                for m in out:
                    f.write(json.dumps(m).encode() + b"\n")
            c.close()

    def guest(self):
        """The guest's end of ttyS2, once vm.py connected to it."""
        c, _ = self.req_srv.accept()
        c.settimeout(10)
        return c.makefile("rwb", buffering=0), c

    def exit(self):
        self.alive = False
        self.qmp_srv.close()
        self.req_srv.close()


def ask(f, line):
    f.write(line.encode() + b"\n")
    return f.readline().decode().rstrip("\n")


def qemu_like(cmd):
    if cmd["execute"] == "device_del":
        if cmd["arguments"]["id"] != "nic0":
            return [{"error": {"class": "DeviceNotFound",
                               "desc": "Device '%s' not found" % cmd["arguments"]["id"]}}]
        # the reply, then the guest's pciehp takes the slot down
        return [{"return": {}}, {"event": "DEVICE_DELETED", "data": {"device": "other"}},
                {"event": "DEVICE_DELETED", "data": {"device": "nic0", "path": "/x"}}]
    if cmd["execute"] == "query-status":
        return [{"return": {"status": "running"}}]
    return [{"error": {"class": "CommandNotFound",
                       "desc": "The command %s has not been found" % cmd["execute"]}}]


@pytest.fixture
def run():
    with tempfile.TemporaryDirectory() as d:
        yield d


def test_requests_answers_and_ends_with_qemu(run):
    q = FakeQemu(run, qemu_like)
    req = vm.Requests(run, q)
    f, c = q.guest()
    assert ask(f, "query-status") == 'ok {"status": "running"}'
    assert ask(f, "device_del nic0") == "ok"
    assert ask(f, "device_del nosuch") == "error Device 'nosuch' not found"
    assert ask(f, "bogus") == "error The command bogus has not been found"
    assert ask(f, "$(reboot) now").startswith("error not a QMP command")
    assert ask(f, "device_add e1000e,id=nic0,bus=rp1 oops").startswith("error")
    assert {"execute": "device_del", "arguments": {"id": "nic0"}} in q.commands
    # QEMU exits: its end of the serial port closes, the thread ends
    q.exit()
    f.close()
    c.close()
    req.join()
    assert not req.thread.is_alive()
    with open(os.path.join(run, "requests")) as log:
        text = log.read()
    assert "> device_del nic0\n< ok\n" in text


def test_device_del_without_its_event_times_out(run, monkeypatch):
    monkeypatch.setattr(vm.Requests, "TIMEOUT", 0.5)
    q = FakeQemu(run, lambda cmd: [{"return": {}}])  # no DEVICE_DELETED ever
    req = vm.Requests(run, q)
    f, c = q.guest()
    assert ask(f, "device_del nic0") == "error timeout: no DEVICE_DELETED for nic0"
    assert ask(f, "query-status") == "ok"  # the connection still answers
    q.exit()
    f.close()
    c.close()
    req.join()
    assert not req.thread.is_alive()


def test_qemu_gone_before_the_guest_spoke(run):
    q = FakeQemu(run, qemu_like)
    req = vm.Requests(run, q)
    f, c = q.guest()
    q.exit()
    f.close()
    c.close()
    req.join()
    assert not req.thread.is_alive()


def test_parse_request():
    assert vm.parse_request("device_del nic0") == ("device_del", {"id": "nic0"})
    assert vm.parse_request("device_add e1000e,id=nic0,bus=rp1") == (
        "device_add", {"driver": "e1000e", "id": "nic0", "bus": "rp1"})
    assert vm.parse_request('qom-get {"path": "/machine", "property": "type"}') == (
        "qom-get", {"path": "/machine", "property": "type"})
    for bad in ("", "Device_del x", "qom-get [1]", "query-pci a,b", "x;y"):
        with pytest.raises(ValueError):
            vm.parse_request(bad)
