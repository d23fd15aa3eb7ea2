"""The compatibility matrix as typed, validated, immutable data.

``load_compat_data()`` reads ``ascendprep/data/compat.yaml`` through importlib.resources,
so it works the same from a source checkout, an editable install and a wheel. Every version
string is parsed with the kind it names and every ``source`` id must exist: a broken data file
is a ``CompatDataError`` naming the path inside the file (``torch_npu_releases[3].cann[0]``), not
a KeyError in the middle of a check.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import yaml

from ascendprep.compat.versions import Version, VersionError, parse_version

DATA_PACKAGE = "ascendprep"
DATA_PATH = "data/compat.yaml"
SUPPORTED_SCHEMA = 1


class CompatDataError(ValueError):
    """The compatibility data file is malformed; the message names where."""


@dataclass(frozen=True)
class PythonRange:
    """Inclusive Python bounds from a spec like ``>=3.7.2,<=3.10``.

    A bound written as MAJOR.MINOR compares at minor granularity, so ``<=3.10`` admits 3.10.14.
    """

    lower: Optional[Version]
    upper: Optional[Version]
    text: str

    def contains(self, python: Version) -> bool:
        if self.lower is not None and _truncate(python, self.lower) < self.lower.release:
            return False
        if self.upper is not None and _truncate(python, self.upper) > self.upper.release:
            return False
        return True


def _truncate(python: Version, bound: Version) -> Tuple[int, ...]:
    release = python.release + (0,) * max(0, len(bound.release) - len(python.release))
    return release[: len(bound.release)]


@dataclass(frozen=True)
class TorchNpuRelease:
    """One published torch_npu wheel and what it was published with."""

    torch_npu: Version
    torch_npu_alt: Optional[Version]
    torch: Version
    ascend_version: Optional[str]
    branch: Optional[str]
    cann: Tuple[Version, ...]
    cann_compatible: Tuple[Version, ...]
    cann_compatible_alt: Tuple[Version, ...]
    python: Tuple[str, ...]
    python_min_patch: Optional[Version]
    torchvision: Optional[Version]
    status: str
    sources: Tuple[str, ...]
    notes: Optional[str]

    @property
    def label(self) -> str:
        """``torch_npu 2.1.0.post6 (Ascend Extension 6.0.rc2)`` for messages."""
        if self.ascend_version:
            return f"torch_npu {self.torch_npu} (Ascend Extension {self.ascend_version})"
        return f"torch_npu {self.torch_npu}"

    @property
    def all_cann(self) -> Tuple[Version, ...]:
        """Every CANN the data says this wheel works with: paired + declared compatible."""
        return self.cann + self.cann_compatible + self.cann_compatible_alt


@dataclass(frozen=True)
class TorchvisionLine:
    """torch MAJOR.MINOR -> torchvision MAJOR.MINOR, exact pins where Ascend pins one."""

    torch_minor: str
    torchvision_minor: str
    pins: Tuple[Tuple[Version, Version], ...]
    python: Optional[PythonRange]
    sources: Tuple[str, ...]


@dataclass(frozen=True)
class DriverFirmware:
    """The one driver + firmware the Ascend docs install page names for a chip and CANN."""

    driver: Optional[Version]
    firmware: Optional[Version]
    hdk_dir: Optional[str]


@dataclass(frozen=True)
class CannHdkRow:
    """CANN release -> Ascend HDK (driver package) versions, per source."""

    cann: Version
    hdk: Tuple[Version, ...]
    hdk_by_product: Tuple[Tuple[str, Version], ...]
    deployer_required_npu: Optional[Version]
    docs_install_page: Tuple[Tuple[str, DriverFirmware], ...]
    npu_package_version: Optional[Version]
    sources: Tuple[str, ...]
    notes: Optional[str]


@dataclass(frozen=True)
class PytorchLinePolicy:
    """Maintenance status of one PyTorch line as the Ascend README states it."""

    torch: Version
    policy: str
    status: str
    eol: Optional[date]
    no_maintenance_from: Optional[date]


@dataclass(frozen=True)
class TorchBuildRules:
    """Which torch builds torch_npu refuses (CUDA / ROCm builds)."""

    accelerator_local_prefixes: Tuple[str, ...]
    accelerator_refused_from_torch: Version
    sources: Tuple[str, ...]


@dataclass(frozen=True)
class ChipMinimum:
    """The oldest CANN and NPU driver a product runs on at all (``chip_minimums``)."""

    name: str
    cann: Version
    driver: Version
    sources: Tuple[str, ...]


@dataclass(frozen=True)
class CompatData:
    """Everything check_stack needs, parsed and cross-checked."""

    sources: Mapping[str, Mapping[str, Any]]
    torch_npu_releases: Tuple[TorchNpuRelease, ...]
    branch_head_versions: Tuple[Tuple[str, Version], ...]
    python_by_torch: Tuple[Tuple[Version, Tuple[str, ...]], ...]
    python_by_torch_sources: Tuple[str, ...]
    torchvision_by_torch: Tuple[TorchvisionLine, ...]
    pytorch_line_policy: Tuple[PytorchLinePolicy, ...]
    pytorch_line_policy_sources: Tuple[str, ...]
    cann_hdk: Tuple[CannHdkRow, ...]
    cann_hdk_official_sources: Tuple[str, ...]
    torch_build_rules: TorchBuildRules
    #: A product's ``compat_chip`` → its minimums; empty when the data has none.
    chip_minimums: Mapping[str, ChipMinimum] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# loading


def load_compat_data(path: Union[str, Path, None] = None) -> CompatData:
    """Load the shipped matrix (cached), or the file at ``path`` (not cached; for tests/tools)."""
    if path is None:
        return _load_packaged()
    location = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CompatDataError(f"{location}: cannot read: {exc.strerror or exc}") from exc
    return parse_compat_text(text, location)


@functools.lru_cache(maxsize=1)
def _load_packaged() -> CompatData:
    resource = resources.files(DATA_PACKAGE).joinpath(DATA_PATH)
    text = resource.read_text(encoding="utf-8")
    return parse_compat_text(text, f"{DATA_PACKAGE}/{DATA_PATH}")


#: libyaml's scanner and parser where PyYAML was built with them: the same values (the constructor
#: is the same Python code) for far less CPU than the pure-Python loader, and every plan and
#: apply reads the whole matrix.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_compat_text(text: str, origin: str = "compat.yaml") -> CompatData:
    """Parse and validate compat.yaml text; errors name ``origin`` and the path inside."""
    try:
        raw = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise CompatDataError(f"{origin}: not valid YAML: {exc}") from exc
    return _Reader(origin).compat(raw)


class _Reader:
    """Walks the raw YAML, turning each value into its typed form or a located error."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.source_ids: Dict[str, Mapping[str, Any]] = {}

    def fail(self, where: str, problem: str) -> CompatDataError:
        return CompatDataError(f"{self.origin}: {where}: {problem}")

    # -- primitives -------------------------------------------------------------------------------
    def mapping(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected a mapping, got {type(value).__name__}")
        return value

    def sequence(self, value: Any, where: str) -> List[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected a list, got {type(value).__name__}")
        return value

    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"expected a non-empty string, got {value!r}")
        return value

    def optional_string(self, row: Mapping[str, Any], key: str, where: str) -> Optional[str]:
        return None if row.get(key) is None else self.string(row[key], f"{where}.{key}")

    def version(self, kind: str, value: Any, where: str) -> Version:
        try:
            return parse_version(kind, value)
        except VersionError as exc:
            raise self.fail(where, str(exc)) from exc

    def optional_version(self, kind: str, row: Mapping[str, Any], key: str, where: str) -> Optional[Version]:
        if row.get(key) is None:
            return None
        return self.version(kind, row[key], f"{where}.{key}")

    def versions(self, kind: str, row: Mapping[str, Any], key: str, where: str) -> Tuple[Version, ...]:
        values = self.sequence(row.get(key, []), f"{where}.{key}")
        return tuple(self.version(kind, v, f"{where}.{key}[{i}]") for i, v in enumerate(values))

    def python_minors(self, row: Mapping[str, Any], key: str, where: str) -> Tuple[str, ...]:
        minors = []
        for i, value in enumerate(self.sequence(row.get(key, []), f"{where}.{key}")):
            version = self.version("python", value, f"{where}.{key}[{i}]")
            if len(version.release) != 2:
                raise self.fail(f"{where}.{key}[{i}]", f"expected MAJOR.MINOR, got {value!r}")
            minors.append(version.minor)
        return tuple(minors)

    def day(self, row: Mapping[str, Any], key: str, where: str) -> Optional[date]:
        value = row.get(key)
        if value is None:
            return None
        if isinstance(value, date):
            return value
        try:
            return date.fromisoformat(self.string(value, f"{where}.{key}"))
        except ValueError as exc:
            raise self.fail(f"{where}.{key}", f"expected YYYY-MM-DD, got {value!r}") from exc

    def source_list(self, row: Mapping[str, Any], key: str, where: str) -> Tuple[str, ...]:
        ids = self.sequence(row.get(key), f"{where}.{key}")
        if not ids:
            raise self.fail(f"{where}.{key}", "every fact needs at least one source")
        for i, source_id in enumerate(ids):
            if source_id not in self.source_ids:
                raise self.fail(f"{where}.{key}[{i}]", f"unknown source id {source_id!r}")
        return tuple(ids)

    # -- sections ---------------------------------------------------------------------------------
    def compat(self, raw: Any) -> CompatData:
        top = self.mapping(raw, "top level")
        if top.get("schema_version") != SUPPORTED_SCHEMA:
            raise self.fail("schema_version", f"expected {SUPPORTED_SCHEMA}, got {top.get('schema_version')!r}")
        for section in ("sources", "added_sources"):
            for source_id, entry in self.mapping(top.get(section), section).items():
                if source_id in self.source_ids:
                    raise self.fail(f"{section}.{source_id}", "duplicate source id")
                self.source_ids[source_id] = self.mapping(entry, f"{section}.{source_id}")

        releases = tuple(
            self.release(row, f"torch_npu_releases[{i}]")
            for i, row in enumerate(self.sequence(top.get("torch_npu_releases"), "torch_npu_releases"))
        )
        seen: Dict[Version, int] = {}
        for i, release in enumerate(releases):
            if release.torch_npu in seen:
                raise self.fail(f"torch_npu_releases[{i}]", f"duplicate of row {seen[release.torch_npu]}")
            seen[release.torch_npu] = i

        heads = []
        for branch, value in self.mapping(top.get("branch_head_versions"), "branch_head_versions").items():
            values = value if isinstance(value, list) else [value]
            for i, text in enumerate(values):
                heads.append((branch, self.version("torch_npu", text, f"branch_head_versions.{branch}[{i}]")))

        by_torch = self.mapping(top.get("python_by_torch"), "python_by_torch")
        table = self.mapping(by_torch.get("table"), "python_by_torch.table")
        python_by_torch = tuple(
            (
                self.version("torch", torch, f"python_by_torch.table.{torch}"),
                self.python_minors(table, torch, "python_by_torch.table"),
            )
            for torch in table
        )

        lines = tuple(
            self.torchvision_line(row, f"torchvision_by_torch[{i}]")
            for i, row in enumerate(self.sequence(top.get("torchvision_by_torch"), "torchvision_by_torch"))
        )

        policy = self.mapping(top.get("pytorch_line_policy"), "pytorch_line_policy")
        policies = tuple(
            self.policy(torch, self.mapping(row, f"pytorch_line_policy.lines.{torch}"))
            for torch, row in self.mapping(policy.get("lines"), "pytorch_line_policy.lines").items()
        )

        hdk_rows = tuple(
            self.hdk_row(row, f"cann_hdk[{i}]") for i, row in enumerate(self.sequence(top.get("cann_hdk"), "cann_hdk"))
        )

        rules = self.mapping(top.get("torch_build_rules"), "torch_build_rules")
        build_rules = TorchBuildRules(
            accelerator_local_prefixes=tuple(
                self.string(p, f"torch_build_rules.accelerator_local_prefixes[{i}]")
                for i, p in enumerate(
                    self.sequence(
                        rules.get("accelerator_local_prefixes"), "torch_build_rules.accelerator_local_prefixes"
                    )
                )
            ),
            accelerator_refused_from_torch=self.version(
                "torch", rules.get("accelerator_refused_from_torch"), "torch_build_rules.accelerator_refused_from_torch"
            ),
            sources=self.source_list(rules, "source", "torch_build_rules"),
        )

        return CompatData(
            sources=dict(self.source_ids),
            torch_npu_releases=releases,
            branch_head_versions=tuple(heads),
            python_by_torch=python_by_torch,
            python_by_torch_sources=self.source_list(by_torch, "source", "python_by_torch"),
            torchvision_by_torch=lines,
            pytorch_line_policy=policies,
            pytorch_line_policy_sources=self.source_list(policy, "source", "pytorch_line_policy"),
            cann_hdk=hdk_rows,
            cann_hdk_official_sources=self.source_list(top, "cann_hdk_official_sources", "top level"),
            torch_build_rules=build_rules,
            chip_minimums={
                chip: ChipMinimum(
                    name=self.string(entry.get("name"), f"chip_minimums.{chip}.name"),
                    cann=self.version("cann", entry.get("cann"), f"chip_minimums.{chip}.cann"),
                    driver=self.version("driver", entry.get("driver"), f"chip_minimums.{chip}.driver"),
                    sources=self.source_list(entry, "source", f"chip_minimums.{chip}"),
                )
                for chip, entry in (
                    (str(chip), self.mapping(raw_entry, f"chip_minimums.{chip}"))
                    for chip, raw_entry in self.mapping(top.get("chip_minimums", {}), "chip_minimums").items()
                )
            },
        )

    def release(self, raw: Any, where: str) -> TorchNpuRelease:
        row = self.mapping(raw, where)
        status = self.string(row.get("status"), f"{where}.status")
        if status not in ("release", "prerelease", "eol"):
            raise self.fail(f"{where}.status", f"expected release|prerelease|eol, got {status!r}")
        return TorchNpuRelease(
            torch_npu=self.version("torch_npu", row.get("torch_npu"), f"{where}.torch_npu"),
            torch_npu_alt=self.optional_version("torch_npu", row, "torch_npu_alt", where),
            torch=self.version("torch", row.get("torch"), f"{where}.torch"),
            ascend_version=self.optional_string(row, "ascend_version", where),
            branch=self.optional_string(row, "branch", where),
            cann=self.versions("cann", row, "cann", where),
            cann_compatible=self.versions("cann", row, "cann_compatible", where),
            cann_compatible_alt=self.versions("cann", row, "cann_compatible_alt", where),
            python=self.python_minors(row, "python", where),
            python_min_patch=self.optional_version("python", row, "python_min_patch", where),
            torchvision=self.optional_version("torchvision", row, "torchvision", where),
            status=status,
            sources=self.source_list(row, "source", where),
            notes=self.optional_string(row, "notes", where),
        )

    def torchvision_line(self, raw: Any, where: str) -> TorchvisionLine:
        row = self.mapping(raw, where)
        torch_minor = self.version("torch", str(row.get("torch")), f"{where}.torch")
        vision_minor = self.version("torchvision", str(row.get("torchvision")), f"{where}.torchvision")
        pins = tuple(
            (
                self.version("torch", torch, f"{where}.pin.{torch}"),
                self.version("torchvision", vision, f"{where}.pin.{torch}"),
            )
            for torch, vision in self.mapping(row.get("pin", {}), f"{where}.pin").items()
        )
        return TorchvisionLine(
            torch_minor=torch_minor.minor,
            torchvision_minor=vision_minor.minor,
            pins=pins,
            python=None if row.get("python") is None else self.python_range(row["python"], f"{where}.python"),
            sources=self.source_list(row, "source", where),
        )

    def python_range(self, value: Any, where: str) -> PythonRange:
        lower = upper = None
        for clause in self.string(value, where).split(","):
            clause = clause.strip()
            if clause.startswith(">="):
                lower = self.version("python", clause[2:], where)
            elif clause.startswith("<="):
                upper = self.version("python", clause[2:], where)
            else:
                raise self.fail(where, f"expected '>=A,<=B' clauses, got {clause!r}")
        return PythonRange(lower=lower, upper=upper, text=value)

    def policy(self, torch: str, row: Mapping[str, Any]) -> PytorchLinePolicy:
        where = f"pytorch_line_policy.lines.{torch}"
        return PytorchLinePolicy(
            torch=self.version("torch", torch, where),
            policy=self.string(row.get("policy"), f"{where}.policy"),
            status=self.string(row.get("status"), f"{where}.status"),
            eol=self.day(row, "eol", where),
            no_maintenance_from=self.day(row, "no_maintenance_from", where),
        )

    def hdk_row(self, raw: Any, where: str) -> CannHdkRow:
        row = self.mapping(raw, where)
        by_product = tuple(
            (product, self.version("driver", value, f"{where}.hdk_by_product.{product}"))
            for product, value in self.mapping(row.get("hdk_by_product", {}), f"{where}.hdk_by_product").items()
        )
        pages = []
        for chip, entry in self.mapping(row.get("docs_install_page", {}), f"{where}.docs_install_page").items():
            chip_where = f"{where}.docs_install_page.{chip}"
            entry = self.mapping(entry, chip_where)
            pages.append(
                (
                    chip,
                    DriverFirmware(
                        driver=self.optional_version("driver", entry, "driver", chip_where),
                        firmware=self.optional_version("firmware", entry, "firmware", chip_where),
                        hdk_dir=self.optional_string(entry, "hdk_dir", chip_where),
                    ),
                )
            )
        return CannHdkRow(
            cann=self.version("cann", row.get("cann"), f"{where}.cann"),
            hdk=self.versions("driver", row, "hdk", where),
            hdk_by_product=by_product,
            deployer_required_npu=self.optional_version("driver", row, "deployer_required_npu", where),
            docs_install_page=tuple(pages),
            npu_package_version=self.optional_version("driver", row, "npu_package_version", where),
            sources=self.source_list(row, "source", where),
            notes=self.optional_string(row, "notes", where),
        )
