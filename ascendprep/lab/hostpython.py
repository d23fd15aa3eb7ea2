"""The host's Python, which every node shares (through its own purelib overlay).

Nodes run the host interpreter: the lab installs no second Python, so torch (real, CPU) is the
same everywhere while torch_npu *metadata* can differ per node for the drift fault.

The interpreter is taken as it was started, *not* resolved through symlinks: a virtualenv's
``bin/python`` is a symlink to the base interpreter, and resolving it would drop the venv (and
with it every package installed there) on the nodes.
"""

from __future__ import annotations

import importlib.metadata
import os
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import ascendprep


@dataclass(frozen=True)
class HostPython:
    #: Path of the interpreter as started, venv kept (the inventory's ``software.python_path``).
    executable: str
    #: ``major.minor``, the inventory's ``software.python``.
    version: str
    #: The directory overlaid per node so that installed-package metadata can differ.
    purelib: Path
    #: The directory holding the ``ascendprep`` package (PYTHONPATH of the simulated tools).
    package_root: Path
    #: The installed torch version (without a local ``+cpu`` suffix), or None.
    torch: Optional[str]
    #: Directories the nodes must see as the host has them for this interpreter to run: the
    #: venv and base prefixes, the real interpreter's directory, the package root, user site.
    runtime_dirs: tuple[Path, ...] = ()


def host_python() -> HostPython:
    executable = os.path.abspath(sys.executable)
    package_root = Path(ascendprep.__file__).resolve().parent.parent
    return HostPython(
        executable=executable,
        version=f"{sys.version_info.major}.{sys.version_info.minor}",
        purelib=Path(sysconfig.get_paths()["purelib"]),
        package_root=package_root,
        torch=_installed("torch"),
        runtime_dirs=_runtime_dirs(executable, package_root),
    )


def _runtime_dirs(executable: str, package_root: Path) -> tuple[Path, ...]:
    candidates = [
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(os.path.realpath(executable)).parent,
        package_root,
    ]
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        candidates.append(Path(site.getusersitepackages()))
    return tuple(dict.fromkeys(Path(os.path.realpath(c)) for c in candidates))


def _installed(distribution: str) -> Optional[str]:
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    return version.split("+", 1)[0]
