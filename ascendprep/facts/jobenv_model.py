"""What a node's *job environment* looks like: the facts the ``job.*`` checks read.

Kept apart from :mod:`ascendprep.facts.model` (which holds them as ``HostFacts.job``) in a module of
their own with no ascendprep imports: facts import nothing from the probes, and the probe
module (:mod:`ascendprep.facts.jobenv`) fills these.

How to read a ``None``: as in :mod:`ascendprep.facts.model`, a ``None`` with a ProbeError of the
matching ``job.*`` probe is "unknown"; without one it is "not read" (an older gather) or "absent".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple


@dataclass(frozen=True, slots=True)
class ShellEnv:
    """The job variables as one shell saw them. ``values``: name → value, None when unset.

    ``sourced``: the file this shell sourced after the login profile (the node's ``set_env.sh``),
    None for a bare login shell. ``rank_table_exists``: whether ``RANK_TABLE_FILE`` names an
    existing file (None when the variable is unset).
    """

    values: Dict[str, Optional[str]] = field(default_factory=dict)
    sourced: Optional[str] = None
    rank_table_exists: Optional[bool] = None


@dataclass(frozen=True, slots=True)
class Visibility:
    """What one place (the host, or the ``--exec-via`` wrapper) sees of what an NPU job needs.

    ``present``/``absent``: ``kind:path`` items (``dev:/dev/davinci0``, ``tool:hccn_tool``,
    ``file:/etc/hccn.conf``, ``lib:/usr/local/Ascend/driver/lib64``, ``env:/etc/ascendprep/env.sh``).
    ``via``: the wrapper's command line (only on the host's view, when one was given).
    """

    present: Tuple[str, ...] = ()
    absent: Tuple[str, ...] = ()
    via: Optional[str] = None


@dataclass(frozen=True, slots=True)
class NnalVersion:
    """``<home>/nnal/atb/latest/version.info``: ``Ascend-cann-atb : 8.2.RC2`` and its build line."""

    path: str
    version: Optional[str] = None
    build: Optional[str] = None


@dataclass(frozen=True, slots=True)
class TorchNpuImport:
    """An actual ``import torch_npu`` in the training interpreter, under the job's environment.

    ``error``: the last lines of what the import printed when it failed (undefined-symbol
    mismatches between torch, torch_npu and CANN show only here, never in package metadata).
    """

    ok: bool
    version: Optional[str] = None
    error: Optional[str] = None
    rc: Optional[int] = None


@dataclass(frozen=True, slots=True)
class TopologyFile:
    """One ``*.json`` file of the 950 driver's factory topology folder as the job's side reads it.

    ``state``: ``readable`` (a regular file whose first byte could be read), ``unreadable`` (a
    regular file that could not be read) or ``not_a_file`` (a directory, a dangling link ...).
    ``size``: its size in bytes when readable (an empty file gives HCCL nothing to parse).
    """

    name: str
    state: str
    size: Optional[int] = None


@dataclass(frozen=True, slots=True)
class TopologyFolder:
    """``<ascend home>/driver/topo/950`` as the place the job runs in sees it.

    ``folder``: the path read; ``present``: whether it is a directory there; ``wanted``: the file
    the inventory's product needs for the node's card count (rendered into the probe; None when
    the inventory does not say it); ``files``: every ``*.json`` found there.
    """

    folder: str
    present: bool
    wanted: Optional[str] = None
    files: Tuple[TopologyFile, ...] = ()


@dataclass(frozen=True, slots=True)
class JobEnv:
    """Everything the ``job.*`` checks read on one node; each part None when it was not read."""

    login: Optional[ShellEnv] = None
    launch: Optional[ShellEnv] = None
    rank_tables: Optional[Tuple[str, ...]] = None
    visible: Optional[Visibility] = None
    host_visible: Optional[Visibility] = None
    nnal: Optional[NnalVersion] = None
    torch_npu: Optional[TorchNpuImport] = None
    topology: Optional[TopologyFolder] = None
