"""Which lab node a simulated tool runs on (lab contract: "Node identity").

Inside a node, ``/etc/ascendprep-lab/node.json`` (in the node's private /etc) says which lab and
node this is and where the shared state lives. ``ASCENDPREP_LAB_NODE_FILE`` overrides the path so
that tests can run the tools without root or namespaces. ``ASCENDPREP_LAB_ROOT`` (default ``/``)
is where ``npu-smi`` reads the driver and firmware ``version.info`` files; tests point it at a
temporary tree written by :func:`ascendprep.lab.sim.cann.install_cann_tree`.
"""

from __future__ import annotations

import json
import os

NODE_FILE_ENV = "ASCENDPREP_LAB_NODE_FILE"
ROOT_ENV = "ASCENDPREP_LAB_ROOT"
DEFAULT_NODE_FILE = "/etc/ascendprep-lab/node.json"
DEFAULT_HCCN_CONF = "/etc/hccn.conf"


class LabSetupError(Exception):
    """The simulated tool cannot find or read its lab configuration (a lab bug, not a user error)."""


class NodeIdentity:
    """The parsed ``node.json``: lab name, node name, shared state dir, hccn.conf path."""

    __slots__ = ("lab", "node", "state_dir", "hccn_conf")

    def __init__(self, lab: str, node: str, state_dir: str, hccn_conf: str) -> None:
        self.lab = lab
        self.node = node
        self.state_dir = state_dir
        self.hccn_conf = hccn_conf


def node_file_path() -> str:
    """Path of the identity file: the env override or the default inside the node's /etc."""
    return os.environ.get(NODE_FILE_ENV) or DEFAULT_NODE_FILE


def system_root() -> str:
    """Root under which ``usr/local/Ascend/...`` version files are read."""
    return os.environ.get(ROOT_ENV) or "/"


def load_identity() -> NodeIdentity:
    """Read and validate the identity file; raise :class:`LabSetupError` with the path on failure."""
    path = node_file_path()
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise LabSetupError(f"{path}: not found (is this a lab node? set {NODE_FILE_ENV})") from None
    except (OSError, ValueError) as exc:
        raise LabSetupError(f"{path}: cannot read node identity: {exc}") from None
    if not isinstance(data, dict):
        raise LabSetupError(f"{path}: expected a JSON object")
    missing = [key for key in ("lab", "node", "state_dir") if not isinstance(data.get(key), str)]
    if missing:
        raise LabSetupError(f"{path}: missing or non-string key(s): {', '.join(missing)}")
    hccn_conf = data.get("hccn_conf", DEFAULT_HCCN_CONF)
    if not isinstance(hccn_conf, str) or not hccn_conf:
        raise LabSetupError(f"{path}: 'hccn_conf' must be a non-empty string")
    return NodeIdentity(data["lab"], data["node"], data["state_dir"], hccn_conf)
