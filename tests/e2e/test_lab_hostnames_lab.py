"""A lab node up with Debian's hostname mapping (127.0.1.1) resolves its own name to loopback
(the rendering of each mapping: tests/lab/test_lab_hostnames.py)."""

from __future__ import annotations

import pytest
from labsupport import start_test_lab

pytestmark = pytest.mark.lab


def test_lab_up_with_debian_hostnames_resolves_each_node_to_loopback():
    lab = start_test_lab(nodes=1, suffix="h127", hostnames="loopback")
    try:
        done = lab.ssh("node1", 'getent ahosts "$(uname -n)" | head -n 1')
        assert done.returncode == 0 and done.stdout.split()[0] == "127.0.1.1", done.stdout + done.stderr
        assert lab.spec.hostnames == "loopback"
    finally:
        lab.down()
