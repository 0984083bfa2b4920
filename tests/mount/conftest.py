# SPDX-License-Identifier: LGPL-2.1-or-later
import os
import shutil

import pytest


def pytest_sessionstart(session):
    # Mount tests need a FUSE device and umockdev; without them they cannot
    # run at all, which meson counts as a skip (77).
    if not os.path.exists("/dev/fuse") or not os.access("/dev/fuse", os.R_OK | os.W_OK):
        pytest.exit("no usable /dev/fuse", returncode=77)
    if shutil.which("fusermount3") is None:
        pytest.exit("fusermount3 is not installed", returncode=77)


TESTBEDS = os.path.join(os.path.dirname(__file__), "..", "testbeds")


@pytest.fixture
def testbed_path():
    def get(name):
        return os.path.join(TESTBEDS, name)
    return get


@pytest.fixture
def full():
    """The daemon on the whole USB tree testbed (the hotplug tests)."""
    from harness import Daemon
    from hotplug_util import TESTBED
    daemon = Daemon(TESTBED)
    yield daemon
    daemon.stop()
