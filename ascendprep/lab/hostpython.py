"""The host's Python, which every node shares (through its own purelib overlay).

Nodes run the host interpreter: the lab installs no second Python, so torch (real, CPU) is the
same everywhere while torch_npu *metadata* can differ per node for the drift fault.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import ascendprep


@dataclass(frozen=True)
class HostPython:
    #: Real path of the interpreter (the inventory's ``software.python_path``).
    executable: str
    #: ``major.minor``, the inventory's ``software.python``.
    version: str
    #: The directory overlaid per node so that installed-package metadata can differ.
    purelib: Path
    #: The directory holding the ``ascendprep`` package (PYTHONPATH of the simulated tools).
    package_root: Path
    #: The installed torch version (without a local ``+cpu`` suffix), or None.
    torch: Optional[str]


def host_python() -> HostPython:
    return HostPython(
        executable=os.path.realpath(sys.executable),
        version=f"{sys.version_info.major}.{sys.version_info.minor}",
        purelib=Path(sysconfig.get_paths()["purelib"]),
        package_root=Path(ascendprep.__file__).resolve().parent.parent,
        torch=_installed("torch"),
    )


def _installed(distribution: str) -> Optional[str]:
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    return version.split("+", 1)[0]
