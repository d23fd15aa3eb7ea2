"""Does this software stack go together? ``check_stack`` over ``CompatData``.

``check_stack({"cann": "8.0.RC3", "torch": "2.1.0+cpu", "torch_npu": "2.1.0.post8", ...})``
returns ``CompatIssue``s. The severity rule:

* ``error``: the data says the combination does not go together (torch_npu built for another
  torch, torchvision of another torch line, a CANN outside the release's declared compatibility
  span, a driver older than every HDK an official table lists for that CANN, a Python the
  release does not support, a CUDA build of torch under torch_npu >= 2.5.1), or a version that
  cannot be read at all (we cannot vouch for what we cannot parse).
* ``warning``: the data does not cover the combination, so compatibility is unknown (a version
  that is not in the data, a pre-release, a value only a secondary source names), or the
  release is end-of-life / a pre-release. Missing data is never silently OK.

A key that is absent or None means "not installed / not known" and skips the checks that need
it: a host without torchvision gets no torchvision verdict rather than a warning on every run.

Issue ids (stable): compat.version_unreadable, compat.torch_npu_release, compat.torch_npu_eol,
compat.torch_npu_prerelease, compat.torch_npu_torch, compat.torch_build, compat.torch_npu_cann,
compat.torch_npu_python, compat.torch_torchvision, compat.torch_python, compat.cann_driver,
compat.cann_firmware, compat.torch_line_eol.
"""

from __future__ import annotations

from datetime import date
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from ascendprep.compat import hdk_checks, torch_checks
from ascendprep.compat.context import ERROR, CompatIssue, StackContext
from ascendprep.compat.data import CompatData, TorchNpuRelease, load_compat_data
from ascendprep.compat.versions import Version, VersionError, parse_version

STACK_KEYS = ("cann", "driver", "firmware", "torch", "torch_npu", "torchvision", "python")

VersionInput = Union[str, Version, None]

# The order issues come out in: the torch_npu wheel first, then what pairs with it, then the
# hardware side, then maintenance.
CHECKS: Tuple[Callable[[StackContext], List[CompatIssue]], ...] = (
    torch_checks.torch_npu_release,
    torch_checks.torch_npu_torch,
    torch_checks.torch_build,
    torch_checks.torch_npu_cann,
    torch_checks.torch_npu_python,
    torch_checks.torch_torchvision,
    torch_checks.torch_python,
    hdk_checks.cann_driver,
    hdk_checks.cann_firmware,
    hdk_checks.chip_minimum,
    torch_checks.torch_line_eol,
)


def check_stack(
    versions: Mapping[str, VersionInput],
    data: Optional[CompatData] = None,
    *,
    chip: Optional[str] = None,
    today: Optional[date] = None,
) -> List[CompatIssue]:
    """Check a stack against the compatibility matrix.

    ``versions``: any of cann, driver, firmware, torch, torch_npu, torchvision, python, as
    strings (spelled however the host reports them) or parsed ``Version``s; None/absent = unknown.
    ``data``: defaults to the shipped compat.yaml. ``chip``: ``910b`` / ``310p`` narrows the
    docs-install-page driver/firmware look-up to that chip. ``today``: the date end of
    maintenance is judged against (defaults to the current date; pass it for reproducible output).
    Raises ValueError only for programming errors (an unknown key, a Version of the wrong kind).
    """
    data = data if data is not None else load_compat_data()
    today = today if today is not None else date.today()
    unknown_keys = sorted(set(versions) - set(STACK_KEYS))
    if unknown_keys:
        raise ValueError(f"unknown stack keys {unknown_keys}; expected any of {list(STACK_KEYS)}")

    issues: List[CompatIssue] = []
    stack: Dict[str, Version] = {}
    for key in STACK_KEYS:
        value = versions.get(key)
        if value is None:
            continue
        if isinstance(value, Version):
            if value.kind != key:
                raise ValueError(f"stack key {key!r} was given a {value.kind} version ({value})")
            stack[key] = value
            continue
        try:
            stack[key] = parse_version(key, value)
        except VersionError as exc:
            issues.append(
                CompatIssue(
                    id="compat.version_unreadable",
                    severity=ERROR,
                    message=f"cannot read the installed {key} version: {exc}",
                    fix=f"check how {key} is installed; its version string should look like the documented ones",
                    sources=(),
                )
            )

    release = find_release(data, stack["torch_npu"]) if "torch_npu" in stack else None
    context = StackContext(data, stack, release, chip, today)
    for check in CHECKS:
        issues.extend(check(context))
    return issues


def find_release(data: CompatData, torch_npu: Version) -> Optional[TorchNpuRelease]:
    """The documented row for this torch_npu wheel (public version; alt spellings count)."""
    for row in data.torch_npu_releases:
        if row.torch_npu == torch_npu or row.torch_npu_alt == torch_npu:
            return row
    return None


def has_errors(issues: Iterable[CompatIssue]) -> bool:
    """True when any issue is an error (the stack must not be used as is)."""
    return any(issue.severity == ERROR for issue in issues)
