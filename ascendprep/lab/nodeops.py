"""File operations carried out *inside* a node (``python -m ascendprep.lab.nodeops``).

The host must not write under a mounted overlay's upper layer, so changes to a running node's
files (the stale hccn.conf, version drift) run here, in the node's mount namespace, started
with ``nsenter``. One JSON request on stdin, one JSON reply on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional


def read_file(path: str) -> dict[str, Any]:
    try:
        return {"exists": True, "text": Path(path).read_text()}
    except FileNotFoundError:
        return {"exists": False, "text": None}


def write_file(path: str, text: str, mode: Optional[int] = None) -> dict[str, Any]:
    """Replace ``path`` atomically (temp file + rename), keeping an existing file's mode unless ``mode`` is given."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o644
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        os.unlink(temp)
        raise
    return {}


def write_tree(files: dict[str, str]) -> dict[str, Any]:
    """Write many files at once (a lab job's logs: absolute path -> text), 0644, folders made."""
    for path, text in files.items():
        write_file(path, text, 0o644)
    return {"written": len(files)}


def remove_file(path: str) -> dict[str, Any]:
    Path(path).unlink(missing_ok=True)
    return {}


def install_cann(versions: dict[str, str], arch: str) -> dict[str, Any]:
    from ascendprep.lab.sim import cann

    cann.install_cann_tree(Path("/"), versions, arch)
    return {}


def install_torch_npu(purelib: str, version: str, torch_version: str) -> dict[str, Any]:
    """Replace the node's torch_npu metadata (the simulator drops other versions first)."""
    from ascendprep.lab.sim import cann

    cann.install_torch_npu_metadata(Path(purelib), version, torch_version)
    return {}


OPERATIONS: dict[str, Callable[..., dict[str, Any]]] = {
    "read": read_file,
    "write": write_file,
    "write-tree": write_tree,
    "remove": remove_file,
    "install-cann": install_cann,
    "install-torch-npu": install_torch_npu,
}


def main() -> int:
    """Exit 0 with the operation's reply, or 2 with ``{"error": ...}`` for a refused request."""
    request = json.load(sys.stdin)
    operation = OPERATIONS.get(request.pop("op", None))
    if operation is None:
        print(json.dumps({"error": "unknown operation"}))
        return 2
    try:
        reply = operation(**request)
    except (ValueError, OSError) as exc:  # the simulator's refusals, unreadable files
        print(json.dumps({"error": str(exc)}))
        return 2
    print(json.dumps(reply))
    return 0


if __name__ == "__main__":
    sys.exit(main())
