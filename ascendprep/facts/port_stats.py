"""``hccn_tool -i N -stat -g``: a port's packet counters, read twice so that their growth is a rate.

The output (docs/ascend-reference.md §1.4 ``-stat -g``, driver ``tool_display_stat_info``) is ``packet
statistics:`` then ``key:value`` lines, the values ``%llu`` (unsigned 64-bit). Current drivers
print ~50 MAC, RoCE and NIC counters; older 910 drivers print a short form with only
``roce_rx_err_pkt_num`` and ``roce_tx_err_pkt_num`` (docs/ascend-reference.md §1.4, §4.7). Both parse the same
way: every counter printed is kept, and the checks judge only those they know.

Sampling. Counts since boot say little (a port up for a year has errors from last spring); their
growth over a few seconds says whether the port is degrading *now*. The gather script therefore
reads every NPU's counters right after that NPU's other hccn_tool queries (section ``hccn.stat``,
``pass=1``; early in the script, and after the queries whose failures name the port first) and
again at its end (``hccn.stat2``, ``pass=2``), sleeping only for what is left of the sample
interval after the other probes ran, so verify grows by at most that interval. Each section carries ``t=``, the node's clock (``/proc/uptime``, in
hundredths of a second; the epoch where it is missing) just before the call: the rate divides by
the interval between the two calls on that node, so neither the controller's clock nor the SSH
latency enters it.
"""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Optional

from ascendprep.facts.model import CounterSample, CounterValues
from ascendprep.facts.text import UnexpectedOutput, content_lines, not_as_expected
from ascendprep.facts.unit import HOST, NPU, VERIFY_ONLY, Draft, ProbeUnit, RenderContext, Where

#: The section name and the hccn_tool arguments (after ``-i <devid>``).
SECTION = "hccn.stat"
ARGS = ("-stat", "-g")
#: Passes of a sampled run: ``1`` near the gather's start, ``2`` at its end.
FIRST, SECOND = 1, 2
#: The largest value a ``%llu`` counter can hold; past it the counter wraps to 0.
COUNTER_MAX = 2**64 - 1
#: Counters one answer may list (a current driver prints ~50): more is not this tool's output.
MAX_COUNTERS = 512

_HEADER = "packet statistics:"
_LINE_RE = re.compile(r"^([a-z][a-z0-9_]{0,63})\s*:\s*(\d{1,20})$")


def parse_stat(stdout: str) -> Dict[str, int]:
    """{counter: value} from ``-stat -g``; the long form and the short form alike.

    Refused (UnexpectedOutput): no ``packet statistics:`` header, no counter, a line that is not
    ``name:number``, a number over 64 bits, a counter listed twice, more than MAX_COUNTERS.
    """
    lines = list(content_lines(stdout))
    if not lines or lines[0].lower() != _HEADER:
        raise not_as_expected(f"'{_HEADER}' then 'counter:value' lines", stdout)
    counters: Dict[str, int] = {}
    for line in lines[1:]:
        match = _LINE_RE.match(line)
        if match is None:
            raise UnexpectedOutput(f"unrecognised -stat line {line.strip()[:80]!r} (expected counter:value)")
        name, value = match.group(1), int(match.group(2))
        if value > COUNTER_MAX:
            raise UnexpectedOutput(f"{name} {value} is larger than a 64-bit counter")
        if name in counters:
            raise UnexpectedOutput(f"counter {name} is listed twice")
        counters[name] = value
        if len(counters) > MAX_COUNTERS:
            raise UnexpectedOutput(f"more than {MAX_COUNTERS} counters")
    if not counters:
        raise not_as_expected("at least one 'counter:value' line", stdout)
    return counters


def read_counters(stdout: str) -> CounterValues:
    """:func:`parse_stat`'s counters as the fact keeps them (names shared per layout, values a tuple)."""
    return CounterValues.of(parse_stat(stdout))


def sample_time(text: str) -> Optional[float]:
    """The ``t=`` attribute (hundredths of a second on the node's clock) in seconds, or None."""
    if not text.isdigit() or len(text) > 15:
        return None
    return int(text) / 100.0


def sample(counters: Mapping[str, int], pass_number: Optional[int], t_attr: str) -> CounterSample:
    """The fact of one read: its pass, the node's time of the call (None when unstamped), the counters."""
    return CounterSample(
        pass_number=pass_number or FIRST, at_s=sample_time(t_attr), counters=CounterValues.of(counters)
    )


# -- the script side: two probe units --------------------------------------------------------

#: Shell functions of the sampled reads (POSIX sh). The first read of each device runs inside the
#: gather's per-NPU loop and keeps its time in ``$AP_ROOT/stat_t.<devid>``; the second pass, at the
#: end of the script, waits for each device only for what is left of the interval since its own
#: first read, so every NPU's interval is at least the one asked for.
SHELL_FUNCTIONS = r"""# ap_now: AP_NOW = hundredths of a second on this node's clock (/proc/uptime, else the epoch).
ap_now() {
	AP_NOW=
	if [ -r /proc/uptime ]; then read -r AP_NOW ap_idle </proc/uptime; fi
	case $AP_NOW in
	*[0-9].[0-9][0-9]) AP_NOW=${AP_NOW%.*}${AP_NOW#*.} ;;
	*) AP_NOW=$(date +%s)00 ;;
	esac
	case $AP_NOW in '' | *[!0-9]*) AP_NOW=0 ;; esac
}

# ap_stat_first: the first read of device $ap_dev's counters; its time is kept for the second.
ap_stat_first() {
	ap_now
	printf '%s\n' "$AP_NOW" >"$AP_ROOT/stat_t.$ap_dev"
	ap_run hccn.stat " npu=$ap_dev pass=1 t=$AP_NOW" ap_hccn -i "$ap_dev" -stat -g
}

# ap_stat_wait START SECONDS: sleep for what is left of SECONDS since START (hundredths).
ap_stat_wait() {
	ap_now
	ap_left=$(($1 + $2 * 100 - AP_NOW))
	if [ "$ap_left" -gt "$(($2 * 100))" ]; then ap_left=$(($2 * 100)); fi
	if [ "$ap_left" -gt 0 ]; then
		sleep "$((ap_left / 100)).$((ap_left % 100 / 10))$((ap_left % 10))" 2>/dev/null || sleep "$((ap_left / 100 + 1))"
	fi
}

# ap_stat_second SECONDS: read every device again, SECONDS after its first read.
ap_stat_second() {
	for ap_dev in $AP_DEVS; do
		ap_t1=
		if [ -r "$AP_ROOT/stat_t.$ap_dev" ]; then read -r ap_t1 <"$AP_ROOT/stat_t.$ap_dev"; fi
		case $ap_t1 in '' | *[!0-9]*) continue ;; esac
		ap_stat_wait "$ap_t1" "$1"
		ap_now
		ap_run hccn.stat2 " npu=$ap_dev pass=2 t=$AP_NOW" ap_hccn -i "$ap_dev" -stat -g
	done
}
"""

#: The second read's section (the first's is :data:`SECTION`); errors of both name :data:`SECTION`.
SECOND_SECTION = "hccn.stat2"


def _parse_read(stdout: str, where: Where) -> CounterSample:
    return sample(read_counters(stdout), where.int_attr("pass"), where.attrs.get("t", ""))


def _fill_read(draft: Draft, where: Where, read: CounterSample) -> None:
    values = draft.npu(where.npu)  # type: ignore[arg-type]
    values["stat_samples"] = values.get("stat_samples", ()) + (read,)


def _describe(where: Where) -> str:
    return f"hccn_tool -i {where.npu} {' '.join(ARGS)}"


def _second_pass(ctx: RenderContext) -> List[str]:
    interval = ctx.sample_interval
    if interval <= 0:
        return []
    return [
        f"# Port counters, second read: {interval}s after each NPU's first (their growth is a rate).",
        'if [ -n "$AP_HCCN" ] && [ -z "$AP_A5" ]; then',
        f"\tap_stat_second {int(interval)}",
        "fi",
    ]


#: The first read, inside the per-NPU loop after the NPU's other queries (early in the script).
FIRST_READ = ProbeUnit(
    section=SECTION,
    scope=NPU,
    command=lambda ctx: f'ap_hccn -i "$ap_dev" {" ".join(ARGS)}',
    render=lambda ctx: ["ap_stat_first"],
    describe=_describe,
    parse=_parse_read,
    fill=_fill_read,
    fact="npus[devid].stat_samples[0] (pass 1)",
    phases=VERIFY_ONLY,
)


class _LateNpuRead(ProbeUnit):
    """A per-NPU read rendered as a host unit, i.e. after every other probe (the units' per-NPU loop
    runs early): its sections still carry ``npu=``, which errors and facts are filed under."""

    def npu_of(self, where: Where) -> Optional[int]:
        return where.npu

    def _missing_attrs(self, where: Where) -> Optional[str]:
        return None if where.npu is not None else "section without an NPU id"


#: The second read of every NPU, the last thing the script does (none with --sample-interval 0).
SECOND_READ = _LateNpuRead(
    section=SECOND_SECTION,
    scope=HOST,
    command=lambda ctx: f'ap_hccn -i "$ap_dev" {" ".join(ARGS)}',
    render=_second_pass,
    probe=lambda where: SECTION,
    describe=_describe,
    parse=_parse_read,
    fill=_fill_read,
    fact="npus[devid].stat_samples[1] (pass 2)",
    phases=VERIFY_ONLY,
)
