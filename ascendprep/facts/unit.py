"""What one gather probe is: its command, its section, its parser and the fact it fills.

A :class:`ProbeUnit` is a declaration, not code that runs anything. The gather script
(:mod:`ascendprep.facts.gather`) renders every registered unit's command into one sh script and,
reading the output back, hands each section to the unit that owns its name. The units
themselves are listed in :mod:`ascendprep.facts.units`.

How a section becomes a fact (:meth:`ProbeUnit.read`, the same for every unit):

1. ``settle(section)``: answers that are not output to parse. :data:`NOTHING` records nothing
   (a version file that is not installed), ``Given(value)`` stores ``value`` as is (an NPU
   without an IP: hccn_tool exit 13). Default: none.
2. ``answered(section)``: is this a real answer? Default ``rc == 0``. Otherwise the failure is
   classified into a :class:`~ascendprep.facts.model.ProbeError` (timeout, missing, ...) and
   ``unknown`` (when set) is stored, e.g. "firewalld is installed, state unknown".
3. ``parse(stdout, where)``: the pure parser, text in, value out. It raises ``ValueError``
   (:class:`~ascendprep.facts.text.UnexpectedOutput`) for output the tool does not print;
   that becomes an ``error`` ProbeError naming the command.
4. ``fill(draft, where, value)``: puts the value into the :class:`Draft` of the HostFacts.

Steps 1-3 are :meth:`ProbeUnit.evaluate` (pure: section in, :class:`Outcome` out), which the
data-driven fixtures in ``tests/fixtures/probes/<section>/*.json`` exercise.

Scopes: a ``host`` unit's command runs once (or once per item of ``items``, each its own
section with an attribute such as ``key=`` or ``path=``); an ``npu`` unit's runs once per hccn
device id inside the gather's hccn_tool loop (``$ap_dev`` holds the id, the section carries
``npu=``); a ``chip`` unit's once per npu-smi chip inside the chip loop (``$ap_id``, ``$ap_c``;
``npu=`` and ``chip=``).

Everything here is pure: no I/O, no host access.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ascendprep.base import paths
from ascendprep.facts.failures import classify_failure
from ascendprep.facts.model import ProbeError
from ascendprep.facts.sections import Section, id_number, render_attrs

HOST = "host"
NPU = "npu"
CHIP = "chip"
SCOPES = (HOST, NPU, CHIP)

#: Phases that read a unit's fact: the gather script of a phase runs only the units tagged with
#: it (``plan`` decides changes and reads only what the diff needs, ``verify`` judges the cluster
#: and reads everything; see :func:`ascendprep.facts.gather.units_for_phase`).
PLAN = "plan"
VERIFY = "verify"
BOTH: FrozenSet[str] = frozenset({PLAN, VERIFY})
VERIFY_ONLY: FrozenSet[str] = frozenset({VERIFY})


@dataclass(frozen=True)
class RenderContext:
    """The validated values the commands are rendered from (gather checked them all)."""

    npus: Optional[int]
    python_path: str
    sysctl_keys: Tuple[str, ...]
    #: What the issue-17 probes ask about (:class:`ascendprep.facts.blockers.JobProbes`); None: skip them.
    job_probes: Optional[Any] = None
    #: Seconds between the two reads of the port counters (probes/port_stats.py); 0: one read.
    sample_interval: int = 0
    #: The inventory product's chip generation (``inventory.products.Generation`` value): "950"
    #: renders the Ascend 950 tool syntax (mode-first hccn_tool, bond devices by slot); None or
    #: an earlier generation renders the 910/910B/910_93 syntax.
    generation: Optional[str] = None
    #: The factory topology file (a name such as ``atlas_350_3.json``) the inventory's 950 product
    #: needs for this script's card count; None when there is none or the count is not known.
    topology_file: Optional[str] = None

    @property
    def is_950(self) -> bool:
        return self.generation == "950"


@dataclass(frozen=True)
class Where:
    """What a parser may know besides the text: the section's attributes and the script's settings.

    ``attrs`` is read, never changed (a gather's Where holds its section's attribute map)."""

    attrs: Mapping[str, str] = field(default_factory=dict)
    ascend_home: Optional[str] = None
    python_path: str = ""

    #: The ``npu=`` and ``chip=`` ids, read once: the gather's loop, the unit and its parser each
    #: ask for them.
    npu: Optional[int] = field(init=False, repr=False, compare=False)
    chip: Optional[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "npu", id_number(self.attrs.get("npu", "")))
        object.__setattr__(self, "chip", id_number(self.attrs.get("chip", "")))

    def int_attr(self, key: str) -> Optional[int]:
        return id_number(self.attrs.get(key, ""))

    def home_path(self, relative: str) -> str:
        """``relative`` under the Ascend home the script used (the default when it did not say)."""
        home = (self.ascend_home or paths.DEFAULT_ASCEND_HOME).rstrip("/")
        return f"{home}/{relative}"


@dataclass(frozen=True)
class Given:
    """A section that answered without output to parse: store ``value`` as the fact."""

    value: Any


#: A section whose answer is "nothing to record" (e.g. an optional file that is absent).
NOTHING = Given(None)


class Draft:
    """HostFacts under construction: what the units' ``fill`` functions write into."""

    def __init__(self) -> None:
        self.errors: List[ProbeError] = []
        self.fields: Dict[str, Any] = {}
        self.npus: Dict[int, Dict[str, Any]] = {}
        self.npu_health: List[Any] = []
        self.sysctl: Dict[str, str] = {}
        self.managed_files: Dict[str, Any] = {}
        self.firewall: Dict[str, Any] = {}
        self.versions: Dict[str, Any] = {"cann": []}
        self.timeout_s: Optional[int] = None
        self.ascend_home: Optional[str] = None
        self.python_path = ""

    def where(self, section: Section) -> Where:
        """The section's Where, with the settings read so far (a ``settings`` fill changes them)."""
        return Where(section.attrs, self.ascend_home, self.python_path)

    def error(self, probe: str, kind: str, message: str, npu: Optional[int] = None) -> None:
        self.errors.append(ProbeError(probe=probe, kind=kind, message=message, npu=npu))

    def npu(self, devid: int) -> Dict[str, Any]:
        """The NpuFacts fields gathered so far for one device id (created empty)."""
        return self.npus.setdefault(devid, {})


Parser = Callable[[str, Where], Any]
Filler = Callable[[Draft, Where, Any], None]


def _rc_zero(section: Section) -> bool:
    return section.rc == 0


def _no_settle(section: Section) -> Optional[Given]:
    return None


@dataclass(frozen=True)
class ProbeUnit:
    """One probe of the gather script. See the module docstring for how a section is read.

    ``section``: the section name the script prints (``[a-z0-9_.-]``, unique). ``command``: the
    shell words after ``ap_run <section> <attrs>``, given the render context and, for units with
    ``items``, the item. A command that runs a tool wraps it in ``ap_tool`` (or ``ap_hccn`` for
    hccn_tool) so it is cut off after the time limit; every value in it is validated and
    shlex-quoted (``render_gather_script`` validates the context's values).
    ``describe``: the command as messages name it (``hccn_tool -i 3 -ip -g``).
    ``probe``: the probe name errors carry (default: the section name). ``fact``: where the
    value lands in HostFacts, for readers (``npus[devid].ip``). ``items``: for per-key units,
    the render-time list (sysctl keys, managed paths); ``item_attrs`` names each item's section
    attributes. ``attrs``: the shell word of a single-run unit's attributes (default none).
    ``after``: shell lines that run right after the command (they may read the captured output
    in ``$AP_TMP/out``, e.g. to remember the tool's path); ``guard``: a shell condition the
    command runs under. ``comment``: a line of the script saying why the probe is there (for
    whoever reads the script). ``render``: replaces the default rendering entirely, for units
    whose shell needs a loop of its own (the CANN directories). ``settle``, ``answered``,
    ``unknown``: see the module docstring. ``lenient``: the parser skips what it does not know
    instead of refusing it, so an exception from it is a surprise, reported by the gather loop
    as "unreadable output (its type: ...)" rather than as a refusal. ``phases``: which of
    ``plan``/``verify`` read the fact (a phase's gather script runs only its units).
    """

    section: str
    command: Callable[..., str]
    parse: Parser
    fill: Filler
    fact: str
    describe: Callable[[Where], str]
    scope: str = HOST
    probe: Optional[Callable[[Where], str]] = None
    items: Optional[Callable[[RenderContext], Sequence[str]]] = None
    item_attrs: Optional[Callable[[str], Dict[str, str]]] = None
    attrs: str = ""
    after: Tuple[str, ...] = ()
    guard: Optional[str] = None
    render: Optional[Callable[[RenderContext], List[str]]] = None
    settle: Callable[[Section], Optional[Given]] = _no_settle
    answered: Callable[[Section], bool] = _rc_zero
    unknown: Optional[Callable[[Where], Any]] = None
    phases: FrozenSet[str] = BOTH
    comment: Optional[str] = None
    lenient: bool = False
    #: Seconds the command's own limit allows when it is not the script's per-command one
    #: (timeout messages name it); None: the script's.
    timeout_s: Optional[int] = None

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"probe unit {self.section}: scope must be one of {SCOPES}, not {self.scope!r}")
        if not self.phases <= BOTH or not self.phases:
            raise ValueError(f"probe unit {self.section}: phases must be a non-empty subset of {sorted(BOTH)}")

    # -- the script side -----------------------------------------------------------------

    def script_lines(self, ctx: RenderContext) -> List[str]:
        """The sh lines that run this unit (inside its loop for ``npu``/``chip`` units)."""
        lines = self._command_lines(ctx)
        return ["", f"# {self.comment}", *lines] if self.comment else lines

    def _command_lines(self, ctx: RenderContext) -> List[str]:
        if self.render is not None:
            return self.render(ctx)
        if self.scope == NPU:
            return [f'ap_run {self.section} " npu=$ap_dev" {self.command(ctx)}', *self.after]
        if self.scope == CHIP:
            return [f'ap_run {self.section} " npu=$ap_id chip=$ap_c" {self.command(ctx)}', *self.after]
        if self.items is not None:
            lines = []
            for item in self.items(ctx):
                attrs = render_attrs(**(self.item_attrs(item) if self.item_attrs else {}))
                lines.append(f"ap_run {self.section} {shlex.quote(attrs)} {self.command(ctx, item)}")
            return lines + list(self.after)
        lines = [f"ap_run {self.section} {self.attrs or chr(39) * 2} {self.command(ctx)}", *self.after]
        if self.guard is None:
            return lines
        return [f"if {self.guard}; then", *("\t" + line for line in lines), "fi"]

    # -- the reading side ----------------------------------------------------------------

    def probe_name(self, where: Where) -> str:
        return self.probe(where) if self.probe is not None else self.section

    def npu_of(self, where: Where) -> Optional[int]:
        """The NPU id errors of this unit carry: hccn device id or npu-smi NPU id; None for host units."""
        return where.npu if self.scope != HOST else None

    def read(self, section: Section, draft: Draft, where: Optional[Where] = None) -> None:
        """Turn the section into the unit's fact in ``draft``, or into a recorded ProbeError.
        ``where``: the section's :meth:`Draft.where`, when the caller has it already."""
        if where is None:
            where = draft.where(section)
        value, has_value, error = self._evaluate(section, where, draft.timeout_s)
        if self.scope == NPU and where.npu is not None:
            draft.npus.setdefault(
                where.npu, {}
            )  # draft.npu(): an NPU whose query failed is still one of the host's NPUs
        if error is not None:
            draft.errors.append(error)
        if has_value:
            self.fill(draft, where, value)

    def evaluate(self, section: Section, where: Where, timeout_s: Optional[int] = None) -> "Outcome":
        """What the section means, without storing it: the value to fill in and/or the error.

        Pure; ``timeout_s`` (the script's time limit) only words a timeout's message. A
        ``lenient`` unit's parser exceptions propagate (the gather loop reports them).
        """
        return Outcome(*self._evaluate(section, where, timeout_s))

    def _evaluate(
        self, section: Section, where: Where, timeout_s: Optional[int]
    ) -> Tuple[Any, bool, Optional[ProbeError]]:
        """:meth:`evaluate` as a plain (value, has_value, error) tuple, which :meth:`read` takes
        apart at once (a named tuple costs a Python-level call to make, per section of every host)."""
        # The probe's name and description are worded only for an error: most sections have none.
        if where.npu is None or (where.chip is None and self.scope == CHIP):
            missing = self._missing_attrs(where)
            if missing:
                return (
                    None,
                    False,
                    ProbeError(
                        probe=self.probe_name(where), kind="error", message=f"{self.describe(where)}: {missing}"
                    ),
                )
        # A settle for failures only (:func:`on_failure`) is not asked about a section that exited 0.
        settles = section.rc != 0 or not getattr(self.settle, "failures_only", False)
        given = self.settle(section) if settles else None
        if given is NOTHING:
            return None, False, None
        if given is not None:
            return given.value, True, None
        if not (section.rc == 0 if self.answered is _rc_zero else self.answered(section)):
            failure = classify_failure(
                section,
                self.probe_name(where),
                self.describe(where),
                npu=self.npu_of(where),
                timeout_s=self.timeout_s or timeout_s,
            )
            return self._unknown(where, failure)
        if self.lenient:
            return self.parse(section.stdout, where), True, None
        try:
            value = self.parse(section.stdout, where)
        except ValueError as exc:  # UnexpectedOutput, or int() of a number Python refuses to read
            error = ProbeError(
                probe=self.probe_name(where),
                kind="error",
                message=f"{self.describe(where)}: {exc}",
                npu=self.npu_of(where),
            )
            return self._unknown(where, error)
        return value, True, None

    def _missing_attrs(self, where: Where) -> Optional[str]:
        """What the section lacks of the ids this unit needs; asked only when its ``npu=`` (or, for
        a chip unit, ``chip=``) id is absent, so an override can refuse no more than that."""
        if self.scope == NPU and where.npu is None:
            return "section without an NPU id"
        if self.scope == CHIP and (where.npu is None or where.chip is None):
            return "section without npu/chip"
        return None

    def _unknown(self, where: Where, error: ProbeError) -> Tuple[Any, bool, Optional[ProbeError]]:
        if self.unknown is None:
            return None, False, error
        return self.unknown(where), True, error


class Outcome(NamedTuple):
    """What one section meant: a value to fill in (``has_value``), an error, both, or neither
    (an optional file that is not there). A named tuple: one is made per section of every host."""

    value: Any = None
    has_value: bool = False
    error: Optional[ProbeError] = None


def file_absent(section: Section) -> bool:
    """``cat``/``sha256sum`` said the file is not there (an answer for optional files)."""
    return section.rc not in (0, None) and "no such file or directory" in section.stderr.lower()


def on_failure(settle: Callable[[Section], Optional[Given]]) -> Callable[[Section], Optional[Given]]:
    """Marks a ``settle`` that answers only for a command that did not exit 0 (it gives None
    for exit 0), so that :class:`ProbeUnit` does not call it for the sections that did."""
    settle.failures_only = True  # type: ignore[attr-defined]
    return settle


@on_failure
def nothing_if_absent(section: Section) -> Optional[Given]:
    """``settle`` for optional files: absent means "not there", not a failure."""
    return NOTHING if file_absent(section) else None


def set_field(name: str) -> Filler:
    """``fill`` that sets one HostFacts field to the value."""

    def fill(draft: Draft, where: Where, value: Any) -> None:
        draft.fields[name] = value

    return fill


def update_npu(draft: Draft, where: Where, fields: Any) -> None:
    """``fill`` for ``npu`` units whose parser returns a dict of NpuFacts fields."""
    if fields:
        draft.npus.setdefault(where.npu, {}).update(fields)  # type: ignore[arg-type]  # draft.npu(), without the call


def text_only(parse: Callable[[str], Any]) -> Parser:
    """A parser that needs only the text, as a unit parser."""

    def unit_parse(stdout: str, where: Where) -> Any:
        return parse(stdout)

    unit_parse.__doc__ = parse.__doc__
    unit_parse.__name__ = getattr(parse, "__name__", "parse")
    return unit_parse


def fixed(text: str) -> Callable[[Where], str]:
    """``describe`` of a unit whose command reads the same everywhere."""
    return lambda where: text
