"""Software checks per node: the Ascend stack and the training interpreter's packages.

Each is present, and equal to the inventory's expected version when one is given. Versions are
compared as parsed versions where both parse (``2.1.0`` = ``2.1.0+cpu`` is *not* assumed: the
parser decides), else as text; Python compares by the components the inventory gives
(``"3.10"`` matches 3.10.12). torchvision is only required when the inventory expects it.
"""

from __future__ import annotations

import functools
from typing import Callable, List, Optional

from ascendprep import compat
from ascendprep.base.findings import Severity
from ascendprep.desired.state import SOFTWARE_KEYS
from ascendprep.facts.model import HostFacts
from ascendprep.verify.checks.context import NodeContext
from ascendprep.verify.checks.model import Check, Verdict, failed, passed, skipped
from ascendprep.verify.checks.text import SOFTWARE_NAMES

#: Installed without being asked for: only these are required even when no version is expected.
REQUIRED = ("cann", "driver", "firmware", "python", "torch", "torch_npu")

_INSTALL_FIX = {
    "cann": "install the CANN toolkit (or nnae) matching the inventory's software.cann",
    "driver": "install the Ascend driver package matching software.driver",
    "firmware": "install the NPU firmware package matching software.firmware",
    "python": "point software.python_path at the training interpreter",
    "torch": "pip install torch (the version torch_npu was built for) into software.python_path",
    "torch_npu": "pip install torch_npu into software.python_path",
    "torchvision": "pip install torchvision into software.python_path",
}

#: Probes whose failure leaves each version unknown.
PROBES = {
    "cann": ("version.toolkit", "version.nnae", "version.cann"),
    "driver": ("version.driver",),
    "firmware": ("version.firmware",),
    "python": ("python",),
    "torch": ("python",),
    "torch_npu": ("python",),
    "torchvision": ("python",),
}


def installed_version(facts: HostFacts, key: str) -> Optional[str]:
    """What the node has of ``key`` (None: not installed, or unknown when a probe failed)."""
    if key == "cann":
        return facts.versions.cann_version
    if key == "driver":
        return facts.versions.driver_version
    if key == "firmware":
        return facts.versions.firmware_version
    if facts.python is None:
        return None
    if key == "python":
        return facts.python.python_version
    return facts.python.packages.get(key)


def same_version(key: str, installed: str, expected: str) -> bool:
    if key == "python":
        return installed.split(".")[: len(expected.split("."))] == expected.split(".")
    if installed == expected:
        return True
    wanted = _expected_version(key, expected)
    if wanted is None:
        return False
    try:
        return compat.parse_version(key, installed) == wanted
    except compat.VersionError:
        return False


@functools.lru_cache(maxsize=64)
def _expected_version(key: str, expected: str) -> Optional[compat.Version]:
    """The inventory's expected version parsed (None when it does not parse): the same text for
    every node of a run, so parsed once, not once per node (what a node has is parsed on every
    node)."""
    try:
        return compat.parse_version(key, expected)
    except compat.VersionError:
        return None


def _why_absent(facts: HostFacts, key: str) -> str:
    if key == "cann" and len(facts.versions.cann) > 1:
        paths = ", ".join(info.path for info in facts.versions.cann)
        return f"several CANN installs and no unversioned <home>/cann to choose one ({paths})"
    if key in ("python", "torch", "torch_npu", "torchvision") and facts.python is None:
        return "the training interpreter did not answer"
    return f"{SOFTWARE_NAMES[key]} is not installed"


def _software_check(key: str) -> Callable[[NodeContext], Verdict]:
    def run(ctx: NodeContext) -> Verdict:
        facts = ctx.facts
        expected = ctx.desired.software.get(key)
        have = installed_version(facts, key)
        name = SOFTWARE_NAMES[key]
        evidence = {"installed": have, "expected": expected}
        if key in ("python", "torch", "torch_npu", "torchvision") and facts.python is not None:
            evidence["interpreter"] = facts.python.interpreter
        if have is None:
            if key not in REQUIRED and expected is None:
                return skipped(f"{name} is not installed and the inventory expects none", evidence)
            return failed(_why_absent(facts, key), evidence, fix=_INSTALL_FIX[key])
        if expected is not None and not same_version(key, have, expected):
            return failed(
                f"{name} is {have}; the inventory expects {expected}",
                evidence,
                fix=f"install {name} {expected} (or change software.{key} in the inventory)",
            )
        return passed(f"{name} {have}" + (" as expected" if expected else ""), evidence)

    run.__name__ = f"software_{key}"
    return run


CHECKS: List[Check] = [
    Check(
        f"software.{key}",
        ("software",),
        "node",
        Severity.ERROR,
        f"{SOFTWARE_NAMES[key]} installed"
        + ("" if key in REQUIRED else " (when expected)")
        + " at the expected version",
        _INSTALL_FIX[key],
        _software_check(key),
        probes=PROBES[key],
        requires=("node.reachable",),
    )
    for key in SOFTWARE_KEYS
]
