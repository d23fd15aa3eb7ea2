"""One read-only script per host that gathers every fact in a single SSH round trip, and its parser.

``render_gather_script`` → run it with ``sh -s`` on the host → ``parse_gather_output`` →
:class:`HostFacts`. Both loop over the probe units of :mod:`ascendprep.facts.units` (each
declares its command, section, parser and fact; see :mod:`ascendprep.facts.unit`); this
module holds only the script's skeleton and the loop that hands each section to its unit.

The script runs each probe once under ``timeout`` so a hung tool costs ``per_command_timeout``
seconds and is recorded as a timeout instead of stalling the host. The skeleton: the units in
registry order; the ``chip`` units run inside a loop over npu-smi's chips just before ``npus``
(which also discovers the hccn device ids when the inventory does not give a count); the ``npu``
units once per device id just after ``tool.hccn_tool``, when hccn_tool was found. The NPUs run
side by side (at most :data:`~ascendprep.base.limits.NPU_PROBE_JOBS` at once), each NPU's queries one
after the other; a second hccn_tool that answers "busy" is retried with back-off, and the
sections come out in device-id order, as if the NPUs had run in turn.

Sections the script prints (see :mod:`ascendprep.facts.sections` for the framing): one per
unit, e.g. ``settings``, ``hostname``, ``npu_smi.health`` (npu, chip), ``npus``, ``hccn.*``
(npu), ``sysctl`` (key), ``managed`` (path), ``firewall.*``, ``version.*`` (file), ``python``,
``net.addrs``, ``hostname.resolve``.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ascendprep.base import paths
from ascendprep.base.limits import SAMPLE_INTERVAL_MAX_S
from ascendprep.facts import jobenv, port_stats, ub_units
from ascendprep.facts.failures import over_cap_error
from ascendprep.facts.model import Firewall, HostFacts, NpuFacts, Versions
from ascendprep.facts.sections import new_nonce, parse_transcript
from ascendprep.facts.shell import MAX_DEVID, UnsafeValue, check_command, check_int, main_block, preamble
from ascendprep.facts.unit import BOTH, CHIP, HOST, NPU, VERIFY, Draft, ProbeUnit, RenderContext
from ascendprep.facts.units import NPU_SECTIONS_950, UNITS, by_section
from ascendprep.inventory.products import Generation

#: The generations a script can be rendered for.
GENERATIONS = tuple(g.value for g in Generation)

KIND = "gather"

_NONCE = re.compile(r"^[0-9a-f]{16}\Z")
_SYSCTL_KEY = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")

#: The unit after whose lines the hccn_tool loop over device ids runs (it sets $AP_HCCN).
_HCCN_LOOP_AFTER = "tool.hccn_tool"
#: The units that call the helper functions defined outside the units (port counters, resolve).
_PORT_STATS_SECTIONS = {
    port_stats.SECTION,
    port_stats.SECOND_SECTION,
    ub_units.STAT_SECTION,
    ub_units.STAT2_SECTION,
}
_RESOLVE_SECTION = "hostname.resolve"
#: The unit before whose lines the chip loop runs (the loop collects the device ids it prints).
_CHIP_LOOP_BEFORE = "npus"


def render_gather_script(
    npus: Optional[int],
    python_path: str,
    per_command_timeout: int = 10,
    ascend_home: str = paths.DEFAULT_ASCEND_HOME,
    busy_retries: int = 3,
    sysctl_keys: Sequence[str] = paths.SYSCTL_KEYS,
    units: Sequence[ProbeUnit] = UNITS,
    job_probes: Optional[Any] = None,
    sample_interval: int = 0,
    phase: str = VERIFY,
    parallel: Optional[int] = None,
    nonce: Optional[str] = None,
    generation: Optional[str] = None,
    topology_file: Optional[str] = None,
) -> str:
    """The POSIX sh script that gathers a host's facts.

    ``npus``: how many hccn device ids to probe (0..npus-1); None discovers them from
    ``npu-smi info -l`` (NPU id × chip count + chip, so an A3's 8 NPUs give devids 0-15).
    ``python_path``: the interpreter whose torch / torch_npu / torchvision versions count.
    ``ascend_home``: where the driver and CANN live (``~/Ascend`` for a non-root install).
    ``busy_retries``: extra tries, with back-off, when hccn_tool answers that it is busy
    (another hccn_tool, e.g. a monitoring exporter, was running).
    ``sysctl_keys``: kernel settings to read (the defaults plus any the inventory sets).
    ``units``: the probes to choose from (all registered ones by default).
    ``phase``: only the units whose ``phases`` include it run (:func:`units_for_phase`): ``plan``
    reads what its diff needs (per NPU: ip, gateway, netdetect, tls), ``verify`` everything.
    ``job_probes``: what the NPU-process, port, NIC and master-route probes ask about
    (:func:`ascendprep.facts.blockers.job_probes`); None: HCCL's default ports, no route lookup.
    ``sample_interval``: seconds between the two reads of the port counters (``-stat -g``, after
    each NPU's other queries and again at the end, :mod:`ascendprep.facts.port_stats`); 0: once.
    ``parallel``: NPUs whose queries run at once (each NPU's own queries stay one at a time);
    None: :data:`~ascendprep.base.limits.NPU_PROBE_JOBS` or ``$ASCENDPREP_NPU_PROBE_JOBS``.
    ``nonce``: the transcript's marker nonce (16 hex digits); None: a fresh one. Given, for a
    script rendered once and sent to many hosts, each with its own nonce put in its place
    (:func:`ascendprep.run.hosts.gather_facts`).
    ``generation``: the inventory product's chip generation; "950" renders the Ascend 950 forms
    (``npu-smi info -m`` for the slots, mode-first hccn_tool on ``bond<slot>``).
    ``topology_file``: on 950, the factory topology file name the product needs for ``npus``
    cards (``atlas_350_3.json``), which ``job.topology`` looks for.
    """
    if generation is not None and generation not in GENERATIONS:
        raise UnsafeValue(f"generation {generation!r} is not one of {', '.join(GENERATIONS)}")
    check_int("sample_interval", sample_interval, 0, SAMPLE_INTERVAL_MAX_S)
    for key in sysctl_keys:
        if not _SYSCTL_KEY.match(key):
            raise UnsafeValue(f"sysctl key {key!r} is not of the form net.core.somaxconn")
    if npus is not None:
        check_int("npus", npus, 0, MAX_DEVID + 1)
    python_path = check_command("python_path", python_path)
    ctx = RenderContext(
        npus=npus,
        python_path=python_path,
        sysctl_keys=tuple(sysctl_keys),
        job_probes=job_probes,
        sample_interval=sample_interval,
        generation=generation,
        topology_file=topology_file,
    )
    if nonce is None:
        nonce = new_nonce()
    elif not _NONCE.match(nonce):
        raise UnsafeValue(f"nonce {nonce!r} is not 16 hex digits")
    chosen = units_for_phase(phase, units)
    sections = {unit.section for unit in chosen}
    return "\n".join(
        [
            preamble(KIND, nonce, per_command_timeout, busy_retries, ascend_home, parallel=parallel),
            _GATHER_FUNCTIONS,
            # the helper functions only the units that call them need (plan's script has none)
            _NETWORK_FUNCTIONS if _RESOLVE_SECTION in sections else "",
            port_stats.SHELL_FUNCTIONS if sections & _PORT_STATS_SECTIONS else "",
            jobenv.shell_functions() if any(section.startswith("job.") for section in sections) else "",
            main_block(_body(ctx, chosen)),
        ]
    )


def units_for_phase(phase: str, units: Sequence[ProbeUnit] = UNITS) -> Tuple[ProbeUnit, ...]:
    """The units a phase reads, in registry order (an unknown phase is a programming error).

    Each skipped unit is a tool call saved per host (or per NPU): plan leaves out eight of the
    twelve per-NPU hccn_tool queries, the port counters, npu-smi's health and board reads, the
    versions, the interpreter and the job probes, none of which its diff reads.
    """
    if phase not in BOTH:
        raise ValueError(f"phase must be one of {sorted(BOTH)}, not {phase!r}")
    return tuple(unit for unit in units if phase in unit.phases)


def _body(ctx: RenderContext, units: Sequence[ProbeUnit]) -> str:
    """Every host unit in order, with the chip and device-id loops around the others."""
    lines: List[str] = []
    for unit in units:
        if unit.scope != HOST:
            continue
        if unit.section == _CHIP_LOOP_BEFORE:
            lines += _chip_loop(ctx, [u for u in units if u.scope == CHIP])
        lines += unit.script_lines(ctx)
        if unit.section == _HCCN_LOOP_AFTER:
            lines += _devid_loop(ctx, [u for u in units if u.scope == NPU])
    return "\n".join(lines) + "\n"


def _chip_loop(ctx: RenderContext, chip_units: Sequence[ProbeUnit]) -> List[str]:
    """The device ids (the inventory's count, or one per npu-smi chip: NPU id x chip count + chip)
    and the per-chip npu-smi queries, the chips side by side like the NPUs (``ap_each_npu`` over
    ``NPU:CHIP:COUNT`` words; each chip's queries in turn, the output in chip order)."""
    if ctx.npus is None:
        lines = ["AP_DEVS=", "AP_DEVS_FROM=npu-smi"]
    else:
        lines = [f"AP_DEVS={shlex.quote(' '.join(str(devid) for devid in range(ctx.npus)))}", "AP_DEVS_FROM=inventory"]
    lines += [
        "ap_chip_list=",
        "for ap_pair in $AP_CHIPS; do",
        "\tap_id=${ap_pair%:*} ap_n=${ap_pair#*:} ap_c=0",
        '\twhile [ "$ap_c" -lt "$ap_n" ]; do',
        '\t\tap_chip_list="$ap_chip_list $ap_id:$ap_c:$ap_n"',
    ]
    if ctx.npus is None:
        lines.append('\t\tAP_DEVS="$AP_DEVS $((ap_id * ap_n + ap_c))"')
    lines += ["\t\tap_c=$((ap_c + 1))", "\tdone", "done"]
    # A two-chip NPU (A3) seen: set here in the main shell, where the per-NPU jobs (hccn_tool
    # -vnic -g) read it; a job's own assignment would end with the job.
    lines += ['case " $AP_CHIPS " in *":2 "*) AP_SPOD=1 ;; esac']
    if not chip_units:
        return lines
    lines += [
        "# ap_chip_probes: the npu-smi queries of chip $ap_c of NPU $ap_id (ap_each_npu runs it per chip).",
        "ap_chip_probes() {",
        "\tap_id=${ap_dev%%:*} ap_n=${ap_dev##*:} ap_c=${ap_dev#*:}",
        "\tap_c=${ap_c%:*}",
    ]
    for unit in chip_units:
        lines += ["\t" + line for line in unit.script_lines(ctx)]
    return lines + ["}", 'ap_each_npu ap_chip_probes "$ap_chip_list"']


def _devid_loop(ctx: RenderContext, npu_units: Sequence[ProbeUnit]) -> List[str]:
    """The per-NPU hccn_tool queries, for every device id, when hccn_tool was found.

    The NPUs run side by side (``ap_each_npu``: at most ``parallel`` jobs, each NPU's queries one
    after the other, the output in device-id order); a slow driver round trip then costs the
    host twelve of them in verify, not twelve per NPU.
    """
    lines = [
        "# ap_npu_probes: the per-NPU queries of device $ap_dev (ap_each_npu runs it per NPU).",
        "ap_npu_probes() {",
    ]
    if ctx.is_950:
        npu_units = [unit for unit in npu_units if unit.section in NPU_SECTIONS_950]
        # Ascend 950: the NPU's IPv4 settings live on bond<slot>, the slot from npu-smi info -m
        # ($AP_SLOTS: "NPU:SLOT" words, set after the npu_smi.map unit); empty when not listed.
        lines += [
            "\tap_slot=",
            "\tfor ap_pair in $AP_SLOTS; do",
            '\t\tif [ "${ap_pair%%:*}" = "$ap_dev" ]; then ap_slot=${ap_pair#*:}; break; fi',
            "\tdone",
        ]
    for unit in npu_units:
        lines += ["\t" + line for line in unit.script_lines(ctx)]
    if not npu_units:
        lines.append("\t:")
    if ctx.is_950:
        return lines + ["}", 'if [ -n "$AP_HCCN" ]; then', "\tap_each_npu ap_npu_probes", "fi"]
    # a host that says it is an Ascend 950 (npu-smi) gets none of the 910 forms, which its tool refuses
    return lines + ["}", 'if [ -n "$AP_HCCN" ] && [ -z "$AP_A5" ]; then', "\tap_each_npu ap_npu_probes", "fi"]


_GATHER_FUNCTIONS = r"""# ap_os_release: /etc/os-release, or the spec's fallback /usr/lib/os-release.
ap_os_release() {
	if [ -e /etc/os-release ]; then cat /etc/os-release; else cat /usr/lib/os-release; fi
}

# ap_npu_chips: read `npu-smi info -l` on stdin, print "NPU_ID:CHIP_COUNT" for each NPU.
ap_npu_chips() {
	ap_id= ap_n=1
	while IFS= read -r ap_line || [ -n "$ap_line" ]; do
		ap_val=${ap_line#*:}
		set -- $ap_val
		ap_val=${1-}
		case $ap_val in '' | *[!0-9]* | ???*) continue ;; esac
		case $ap_line in
		*'NPU ID'*)
			if [ -n "$ap_id" ]; then echo "$ap_id:$ap_n"; fi
			ap_id=$ap_val ap_n=1
			;;
		*'Chip Count'*) ap_n=$ap_val ;;
		esac
	done
	if [ -n "$ap_id" ]; then echo "$ap_id:$ap_n"; fi
}
"""


_NETWORK_FUNCTIONS = r"""# ap_resolve_self: what this host's own name resolves to, looked up as gloo and NCCL do
# (getaddrinfo). getent exits 2 when the name is not found.
ap_resolve_self() {
	ap_self=$(uname -n) || return 1
	ap_tool getent ahosts "$ap_self"
}
"""


#: The registered units by section, built once (a verify parses every host with them).
_UNITS_BY_SECTION: Dict[str, ProbeUnit] = by_section(UNITS)


def parse_gather_output(text: str, units: Sequence[ProbeUnit] = UNITS) -> HostFacts:
    """HostFacts from a gather script's stdout. Never raises: every failure becomes a ProbeError."""
    transcript = parse_transcript(text, KIND)
    table: Dict[str, ProbeUnit] = _UNITS_BY_SECTION if units is UNITS else by_section(units)
    draft = Draft()
    if transcript.problem:
        draft.error("gather", "error", transcript.problem)
    for section in transcript.sections:
        unit = table.get(section.name)
        if unit is None:
            draft.error(section.name, "error", f"unknown section {section.name!r} in the gather output")
            continue
        where = draft.where(section)
        if "over" in section.attrs:  # a cut output is never parsed
            cut = over_cap_error(section, unit.probe_name(where), unit.describe(where), unit.npu_of(where))
            if cut is not None:
                draft.errors.append(cut)
                continue
        try:
            unit.read(section, draft, where)
        except (ValueError, LookupError, TypeError, ArithmeticError, RecursionError) as exc:
            # One odd output (a 5,000-digit number int() refuses) costs that probe, not the host.
            # (Named only here: most sections have no error, and the words cost per section.)
            what = unit.describe(where)
            draft.error(
                unit.probe_name(where),
                "error",
                f"{what}: unreadable output ({type(exc).__name__}: {str(exc)[:200]})",
                unit.npu_of(where),
            )
    return HostFacts(
        ascend_home=draft.ascend_home,
        npus={devid: NpuFacts(devid=devid, **values) for devid, values in sorted(draft.npus.items())},
        npu_health=tuple(draft.npu_health),
        sysctl=draft.sysctl,
        managed_files=draft.managed_files,
        firewall=Firewall(**draft.firewall),
        versions=Versions(**{**draft.versions, "cann": tuple(draft.versions["cann"])}),
        errors=tuple(draft.errors),
        **draft.fields,
    )
