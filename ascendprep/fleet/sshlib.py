"""Import paramiko without invoke. Every ascendprep module that uses paramiko imports this first::

    from ascendprep.fleet import sshlib  # noqa: F401  (paramiko without invoke)
    import paramiko

When invoke is installed, ``paramiko.config`` imports it, only to run ssh_config's ``Match exec``
lines. ascendprep never reads ssh_config files (the inventory is the single source of how to
connect), yet invoke's import (it brings ``unittest.mock`` and ``pkgutil`` with it) cost about
50 ms of CPU on every command that contacts hosts, a third of paramiko's own import. So invoke
is hidden while paramiko loads: ``paramiko.config`` then records the ImportError and would raise
it only for a ``Match exec`` line, which we never parse. The hiding is undone at once, so code
that imports invoke later (or fabric) still gets it.
"""

from __future__ import annotations

import sys
from types import ModuleType


def _import_paramiko() -> ModuleType:
    if "paramiko" in sys.modules:
        import paramiko

        return paramiko
    hide = "invoke" not in sys.modules
    if hide:
        sys.modules["invoke"] = None  # type: ignore[assignment]  # ``import invoke`` raises ImportError
    try:
        import paramiko
    finally:
        if hide and "invoke" in sys.modules and sys.modules["invoke"] is None:
            del sys.modules["invoke"]
    return paramiko


_import_paramiko()
