"""Checks on the Python side of the stack: torch_npu, torch, torchvision, Python, maintenance.

Each function takes the ``StackContext`` and returns the issues of one pairing; it returns
nothing when a version it needs is absent (unknown), so every verdict rests on given versions.
"""

from __future__ import annotations

from typing import List

from ascendprep.compat.context import ERROR, WARNING, CompatIssue, StackContext, listing, older_than, python_listing
from ascendprep.compat.versions import base_release, parse_version


def torch_npu_release(ctx: StackContext) -> List[CompatIssue]:
    """Is the installed wheel a documented release, and is it still one (not EOL / pre-release)?"""
    if "torch_npu" not in ctx.stack:
        return []
    npu = ctx.stack["torch_npu"]
    row = ctx.release
    if row is None:
        base = base_release(npu)
        heads = [branch for branch, head in ctx.data.branch_head_versions if head == npu]
        head_note = (
            f"; it is the head version of branch {heads[0]}, which no compatibility row documents" if heads else ""
        )
        alternative = ctx.suggest(torch=parse_version("torch", base))
        fix = (
            f"install a documented torch_npu, e.g. {alternative.torch_npu} for torch {alternative.torch}"
            if alternative
            else f"no documented torch_npu exists for torch {base}; use a documented torch line"
        )
        return [
            CompatIssue(
                id="compat.torch_npu_release",
                severity=WARNING,
                message=(
                    f"torch_npu {npu} is not in the compatibility data{head_note}, so its CANN, Python "
                    f"and torchvision pairings are unknown"
                ),
                fix=fix,
                sources=("pt_compat",),
            )
        ]
    if row.status == "eol":
        newer = ctx.suggest(torch=row.torch)
        fix = (
            f"upgrade to torch_npu {newer.torch_npu} (Ascend Extension {newer.ascend_version})"
            if newer is not None and newer.status == "release"
            else ctx.maintained_line_fix()
        )
        return [
            CompatIssue(
                id="compat.torch_npu_eol",
                severity=WARNING,
                message=f"{row.label} is end-of-life (historical table)",
                fix=fix,
                sources=row.sources,
            )
        ]
    if row.status == "prerelease":
        final = ctx.suggest(torch=row.torch)
        return [
            CompatIssue(
                id="compat.torch_npu_prerelease",
                severity=WARNING,
                message=f"torch_npu {row.torch_npu} is a pre-release (branch {row.branch}); only CANN "
                f"{listing(row.cann)} is named for it",
                fix=(
                    f"install the released torch_npu {final.torch_npu}"
                    if final
                    else f"no released torch_npu for torch {row.torch} is documented yet"
                ),
                sources=row.sources,
            )
        ]
    return []


def torch_npu_torch(ctx: StackContext) -> List[CompatIssue]:
    """torch_npu pins one exact torch; any other torch breaks ``import torch_npu``."""
    if "torch_npu" not in ctx.stack or "torch" not in ctx.stack:
        return []
    npu, torch = ctx.stack["torch_npu"], ctx.stack["torch"]
    if ctx.release is not None:
        needed, sources = ctx.release.torch, ctx.release.sources
    else:
        needed, sources = parse_version("torch", base_release(npu)), ("pt_setup",)
    if torch == needed:
        return []
    other = ctx.suggest(torch=torch)
    alternative = f", or torch_npu {other.torch_npu} which is built for torch {torch.public}" if other else ""
    return [
        CompatIssue(
            id="compat.torch_npu_torch",
            severity=ERROR,
            message=f"torch_npu {npu} is built for torch {needed} but torch {torch} is installed",
            fix=f"install torch=={needed} (the CPU build){alternative}",
            sources=sources,
        )
    ]


def torch_build(ctx: StackContext) -> List[CompatIssue]:
    """A CUDA/ROCm build of torch: torch_npu needs the CPU build (and refuses others from 2.5.1)."""
    if "torch" not in ctx.stack:
        return []
    torch = ctx.stack["torch"]
    rules = ctx.data.torch_build_rules
    local = torch.local or ""
    if not any(local.startswith(prefix) for prefix in rules.accelerator_local_prefixes):
        return []
    refused = torch >= rules.accelerator_refused_from_torch
    consequence = (
        "import torch_npu refuses it ('Two accelerators cannot be used at the same time')"
        if refused
        else "torch_npu is built against the CPU build of torch"
    )
    return [
        CompatIssue(
            id="compat.torch_build",
            severity=ERROR if refused else WARNING,
            message=f"torch {torch} is a {local.split('.')[0]} build; {consequence}",
            fix=f"install the CPU build: pip install torch=={torch.public} --index-url https://download.pytorch.org/whl/cpu",
            sources=rules.sources,
        )
    ]


def torch_npu_cann(ctx: StackContext) -> List[CompatIssue]:
    """CANN against the release's paired CANN and its declared compatibility list.

    Outside the declared span (older than its lowest, newer than its highest) is an error;
    inside the span but unlisted, a pre-release, or a release that publishes no list is unknown."""
    row = ctx.release
    if row is None or "cann" not in ctx.stack:
        return []
    cann = ctx.stack["cann"]
    documented = row.all_cann
    if any(entry.covers(cann) for entry in documented):
        return []
    listed = listing(documented)
    better = ctx.suggest(torch=row.torch, cann=cann)
    switch = (
        (
            f"install torch_npu {better.torch_npu} (Ascend Extension {better.ascend_version}), "
            f"documented with CANN {cann}"
        )
        if better
        else None
    )

    if not documented:
        return [
            CompatIssue(
                id="compat.torch_npu_cann",
                severity=WARNING,
                message=f"{row.label} has no CANN pairing in the data; CANN {cann} is unverified",
                fix=switch or "use a torch_npu release with a documented CANN",
                sources=row.sources,
            )
        ]
    if not (row.cann_compatible or row.cann_compatible_alt):
        why = (
            "a pre-release names only the CANN of its branch README"
            if row.status == "prerelease"
            else "releases before Ascend Extension 6.0.0 publish none"
        )
        return [
            CompatIssue(
                id="compat.torch_npu_cann",
                severity=WARNING,
                message=(
                    f"{row.label} was published with CANN {listed} and has no compatibility list ({why}); "
                    f"CANN {cann} is unverified"
                ),
                fix=switch or f"install CANN {row.cann[0]}, the release {row.label} was published with",
                sources=row.sources,
            )
        ]
    lowest, highest = min(documented), max(documented)
    if not (older_than(cann, lowest) or cann > highest):
        what = "a pre-release/test build" if cann.is_prerelease else "not one of the listed releases"
        return [
            CompatIssue(
                id="compat.torch_npu_cann",
                severity=WARNING,
                message=(
                    f"CANN {cann} lies inside the range {row.label} declares ({lowest} to {highest}) but is "
                    f"{what} ({listed})"
                ),
                fix=switch or f"install one of the listed CANN releases: {listed}",
                sources=row.sources,
            )
        ]
    direction = "older" if cann < lowest else "newer"
    return [
        CompatIssue(
            id="compat.torch_npu_cann",
            severity=ERROR,
            message=(f"CANN {cann} is {direction} than every CANN {row.label} supports ({listed})"),
            fix=switch or f"install CANN {row.cann[0]} (or another of: {listed})",
            sources=row.sources,
        )
    ]


def torch_npu_python(ctx: StackContext) -> List[CompatIssue]:
    """Python against the wheel's own list, falling back to the per-PyTorch-line table."""
    if "torch_npu" not in ctx.stack or "python" not in ctx.stack:
        return []
    python, row = ctx.stack["python"], ctx.release
    line_minors, line_sources = ctx.python_for_torch_line(
        row.torch if row else parse_version("torch", base_release(ctx.stack["torch_npu"]))
    )
    if row is None:
        # Unknown wheel (already warned about): the per-line table can still rule a Python out.
        if line_minors and python.minor not in line_minors:
            return [
                CompatIssue(
                    id="compat.torch_npu_python",
                    severity=ERROR,
                    message=(
                        f"Python {python} is not supported by any torch_npu for torch "
                        f"{base_release(ctx.stack['torch_npu'])} (Python {python_listing(line_minors)})"
                    ),
                    fix=f"use Python {python_listing(line_minors)}",
                    sources=line_sources,
                )
            ]
        return []
    if not row.python:
        return [
            CompatIssue(
                id="compat.torch_npu_python",
                severity=WARNING,
                message=f"the data lists no Python versions for {row.label}; Python {python} is unverified",
                fix=f"use a Python listed for torch {row.torch}: {python_listing(line_minors)}"
                if line_minors
                else "use a torch_npu release with a documented Python list",
                sources=row.sources,
            )
        ]
    if python.minor in row.python:
        minimum = row.python_min_patch
        if minimum is not None and len(python.release) >= 3 and python.minor == minimum.minor and python < minimum:
            return [
                CompatIssue(
                    id="compat.torch_npu_python",
                    severity=ERROR,
                    message=f"{row.label} needs Python >= {minimum}, found {python}",
                    fix=f"use Python {minimum} or newer",
                    sources=row.sources,
                )
            ]
        return []
    if python.minor in line_minors:
        return [
            CompatIssue(
                id="compat.torch_npu_python",
                severity=WARNING,
                message=(
                    f"Python {python.minor} is listed for the torch {row.torch} line (COMPATIBILITY.md) but not "
                    f"for {row.label} itself (Python {python_listing(row.python)})"
                ),
                fix=f"use Python {python_listing(row.python)}, or a newer torch_npu release for torch {row.torch}",
                sources=row.sources + line_sources,
            )
        ]
    better = ctx.suggest(torch=row.torch, python=python)
    return [
        CompatIssue(
            id="compat.torch_npu_python",
            severity=ERROR,
            message=f"{row.label} supports Python {python_listing(row.python)}, not {python}",
            fix=(
                f"use Python {python_listing(row.python)}, or torch_npu {better.torch_npu} which supports "
                f"Python {python.minor}"
            )
            if better
            else f"use Python {python_listing(row.python)}",
            sources=row.sources,
        )
    ]


def torch_python(ctx: StackContext) -> List[CompatIssue]:
    """Python against the torch line's range from the pytorch/vision README table."""
    if "torch" not in ctx.stack or "python" not in ctx.stack:
        return []
    torch, python = ctx.stack["torch"], ctx.stack["python"]
    line = ctx.torchvision_line(torch)
    if line is None or line.python is None:
        return [
            CompatIssue(
                id="compat.torch_python",
                severity=WARNING,
                message=f"the data has no Python range for torch {torch.minor}; Python {python} is unverified",
                fix="check the PyTorch release notes for the Python versions this torch line supports",
                sources=("vision_readme",),
            )
        ]
    if line.python.contains(python):
        return []
    return [
        CompatIssue(
            id="compat.torch_python",
            severity=ERROR,
            message=f"torch {torch.minor} supports Python {line.python.text}, not {python}",
            fix=f"use a Python {line.python.text} interpreter for torch {torch.minor}",
            sources=line.sources,
        )
    ]


def torch_torchvision(ctx: StackContext) -> List[CompatIssue]:
    """torchvision must be of the torch line; Ascend also pins the tested patch."""
    if "torch" not in ctx.stack or "torchvision" not in ctx.stack:
        return []
    torch, vision = ctx.stack["torch"], ctx.stack["torchvision"]
    line = ctx.torchvision_line(torch)
    if line is None:
        return [
            CompatIssue(
                id="compat.torch_torchvision",
                severity=WARNING,
                message=f"torch {torch.minor} is not in the torchvision table; torchvision {vision} is unverified",
                fix="check the pytorch/vision README for the torchvision that matches this torch",
                sources=("vision_readme",),
            )
        ]
    pin = next((tv for pin_torch, tv in line.pins if pin_torch == torch), None)
    wanted = str(pin) if pin is not None else f"{line.torchvision_minor}.x"
    if vision.minor != line.torchvision_minor:
        return [
            CompatIssue(
                id="compat.torch_torchvision",
                severity=ERROR,
                message=f"torchvision {vision} belongs to another torch line; torch {torch.minor} needs torchvision {line.torchvision_minor}",
                fix=f"install torchvision {wanted} for torch {torch.public}",
                sources=line.sources,
            )
        ]
    if pin is not None and vision != pin:
        return [
            CompatIssue(
                id="compat.torch_torchvision",
                severity=WARNING,
                message=f"Ascend pins torchvision {pin} for torch {torch.public}; {vision} is the same line but not the tested patch",
                fix=f"install torchvision {pin} for torch {torch.public}",
                sources=line.sources,
            )
        ]
    return []


def torch_line_eol(ctx: StackContext) -> List[CompatIssue]:
    """PyTorch lines the Ascend README marks EOL or out of maintenance by ``today``.

    A line missing from the policy table gives no issue: not being listed says nothing about
    maintenance, and the compatibility checks above already flag unknown versions.
    """
    torch = ctx.torch_for_lines()
    if torch is None:
        return []
    base = parse_version("torch", base_release(torch))
    policy = next((p for p in ctx.data.pytorch_line_policy if p.torch == base), None)
    if policy is None:
        return []
    sources = ctx.data.pytorch_line_policy_sources
    if policy.status == "eol":
        since = f" since {policy.eol.isoformat()}" if policy.eol else ""
        return [
            CompatIssue(
                id="compat.torch_line_eol",
                severity=WARNING,
                message=f"the PyTorch {policy.torch} line is end-of-life for Ascend{since}",
                fix=ctx.maintained_line_fix(),
                sources=sources,
            )
        ]
    if policy.no_maintenance_from is not None and ctx.today >= policy.no_maintenance_from:
        return [
            CompatIssue(
                id="compat.torch_line_eol",
                severity=WARNING,
                message=(
                    f"the PyTorch {policy.torch} line is out of Ascend maintenance since "
                    f"{policy.no_maintenance_from.isoformat()}"
                ),
                fix=ctx.maintained_line_fix(),
                sources=sources,
            )
        ]
    return []
