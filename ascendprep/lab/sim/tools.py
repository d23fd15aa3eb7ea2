"""Install the ``hccn_tool`` and ``npu-smi`` wrappers of a lab node.

The wrappers are tiny POSIX sh scripts that exec the host interpreter on the simulator modules.
They run hundreds of times during a lab run, so they start Python with ``-S`` (no ``site``: the
editable-install finder and ``.pth`` files would load at every call) and put the package directory on
``PYTHONPATH`` themselves; the simulator modules import only the standard library. The module's
``main`` is called from ``-c``, not run with ``-m``, which would import ``runpy`` and
``importlib.util`` first, at every call.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

HCCN_TOOL_PATH = "usr/local/Ascend/driver/tools/hccn_tool"
HCCN_TOOL_LINK = "usr/local/bin/hccn_tool"
NPU_SMI_PATH = "usr/local/bin/npu-smi"


def wrapper_script(python: str, pythonpath: str, module: str, name: str, latency_ms: int = 0) -> str:
    """The sh text of one wrapper (values quoted with :func:`shlex.quote`).

    ``latency_ms``: a sleep before every call, standing in for the driver round trip of a real
    tool (``lab up --tool-latency-ms``); sleeping costs no CPU, so concurrency shows in timings.
    """
    if isinstance(latency_ms, bool) or not isinstance(latency_ms, int) or latency_ms < 0:
        raise ValueError(f"latency_ms must be a non-negative integer, got {latency_ms!r}")
    delay = f"sleep {latency_ms // 1000}.{latency_ms % 1000:03d}\n" if latency_ms else ""
    return (
        "#!/bin/sh\n"
        f"# ascendprep lab: simulated {name} (python -m {module})\n"
        f"{delay}"
        f"PYTHONPATH={shlex.quote(pythonpath)}\n"
        "export PYTHONPATH\n"
        f'exec {shlex.quote(python)} -S -c {shlex.quote(entry_program(module))} "$@"\n'
    )


_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def entry_program(module: str) -> str:
    """The ``-c`` program that runs ``module.main()`` with the wrapper's arguments as ``sys.argv[1:]``."""
    if not _MODULE.match(module):
        raise ValueError(f"not a module name: {module!r}")
    return f"import sys; from {module} import main; sys.exit(main())"


def _write_executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    os.chmod(temp, 0o755)
    os.replace(temp, path)


def install_node_tools(root: Path, python: str, pythonpath: str, latency_ms: int = 0) -> None:
    """Write ``hccn_tool`` (driver tools dir + a /usr/local/bin symlink) and ``npu-smi`` below ``root``.

    ``python`` is the interpreter the node runs (absolute path); ``pythonpath`` the directory that
    contains the ``ascendprep`` package (absolute); ``latency_ms`` the sleep before every call. The symlink target is absolute so that it
    resolves inside the node, where ``root`` is ``/``.
    """
    root = Path(root)
    for label, value in (("python", python), ("pythonpath", pythonpath)):
        if not isinstance(value, str) or not os.path.isabs(value) or "\n" in value or "\0" in value:
            raise ValueError(f"{label} must be an absolute path without newlines, got {value!r}")
    _write_executable(
        root / HCCN_TOOL_PATH,
        wrapper_script(python, pythonpath, "ascendprep.lab.sim.hccn_tool", "hccn_tool", latency_ms),
    )
    _write_executable(
        root / NPU_SMI_PATH,
        wrapper_script(python, pythonpath, "ascendprep.lab.sim.npu_smi", "npu-smi", latency_ms),
    )
    link = root / HCCN_TOOL_LINK
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to("/" + HCCN_TOOL_PATH)
